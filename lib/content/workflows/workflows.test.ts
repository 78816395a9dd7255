import { promises as fs } from 'node:fs';
import path from 'node:path';
import { loadWorkflow, unresolvedName } from '.';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';
import { today } from '../../core/paths';

let sb: Sandbox;
let wf: string;
beforeEach(async () => {
  sb = await makeSandbox();
  wf = path.join(sb.ctx.bundleRoot, 'workflows', 'intake');
  await fs.writeFile(
    path.join(sb.ctx.bundleRoot, 'config.yaml'),
    'user_name: Grace\nproject_name: Apollo\ncommunication_language: French\noutput_folder: "{project-root}/docs"\nnested:\n  - a\n',
  );
  await fs.writeFile(
    path.join(wf, 'workflow.yaml'),
    [
      'name: intake',
      'description: "Gather requirements for {project_name}"',
      'config_source: "{project-root}/bmad/custom/bundles/demo/config.yaml"',
      'output_folder: "{config_source}:output_folder"',
      'user_name: "{config_source}:user_name"',
      'project_name: "{config_source}:project_name"',
      'items: "{config_source}:nested"',
      'date: system-generated',
      'installed_path: "{project-root}/somewhere/else"',
      'instructions: "{installed_path}/instructions.md"',
      'template: "{installed_path}/template.md"',
      'default_output_file: "{output_folder}/intake-{project_name}-{date}.md"',
      'extra: "{unknown_thing} and {config_source}:missing_key"',
      '',
    ].join('\n'),
  );
  await fs.writeFile(path.join(wf, 'instructions.md'), '# Steps\nAsk {user_name} about {{goal}}.\n');
  await fs.writeFile(path.join(wf, 'template.md'), '# {{title}}\n');
});
afterEach(async () => {
  await sb.cleanup();
});
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

describe('loadWorkflow', () => {
  it('loads and resolves a workflow with config, instructions, template and engine', async () => {
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx, { userInput: 'build a CRM' });
    expect(r.ok).toBe(true);
    expect(r.path).toBe('{bundle-root}/workflows/intake/workflow.yaml');
    expect(r.workflow).toMatchObject({
      name: 'intake',
      description: 'Gather requirements for Apollo',
      config_source: '{bundle-root}/config.yaml',
      output_folder: '{output_folder}',
      user_name: 'Grace',
      installed_path: '{bundle-root}/workflows/intake',
      instructions: '{bundle-root}/workflows/intake/instructions.md',
      template: '{bundle-root}/workflows/intake/template.md',
      default_output_file: `{output_folder}/intake-Apollo-${today()}.md`,
      date: today(),
      items: ['a'],
    });
    expect(r.instructions).toEqual({ path: '{bundle-root}/workflows/intake/instructions.md', content: '# Steps\nAsk {user_name} about {{goal}}.\n' });
    expect(r.template).toEqual({ path: '{bundle-root}/workflows/intake/template.md', content: '# {{title}}\n' });
    expect(r.engine).toEqual({ path: '{core-root}/tasks/workflow.md', content: '# Workflow engine\n' });
    expect(r.config).toMatchObject({ user_name: 'Grace', project_name: 'Apollo', output_folder: '{output_folder}' });
    expect(r.kind).toBe('yaml');
    expect(r.unresolved.map(unresolvedName).sort()).toEqual(['missing_key', 'unknown_thing']);
    expect(r.unresolved).toContain("missing_key: {config_source}:missing_key is not set in {bundle-root}/config.yaml, nor in the agent's config");
    expect(r.user_input).toBe('build a CRM');
    expect(JSON.stringify(r)).not.toContain(sb.base);
  });

  it('omits the template when template is false, and accepts a folder path', async () => {
    const text = (await fs.readFile(path.join(wf, 'workflow.yaml'), 'utf8')).replace(/^template: .*$/m, 'template: false');
    await fs.writeFile(path.join(wf, 'workflow.yaml'), text);
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake', sb.ctx);
    expect(r.ok).toBe(true);
    expect(r.template).toBeUndefined();
    expect(r.workflow.template).toBe(false);
  });

  it('names the missing file', async () => {
    await fs.rm(path.join(wf, 'instructions.md'));
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx);
    expect(r.error.code).toBe('ENOENT');
    expect(r.error.message).toContain('instructions');
    expect(r.path).toBe('{bundle-root}/workflows/intake/instructions.md');
  });

  it('reports invalid YAML', async () => {
    await fs.writeFile(path.join(wf, 'workflow.yaml'), 'name: [oops\n');
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx);
    expect(r.error.code).toBe('E_INVALID_YAML');
  });

  it('reports variables that refer to themselves instead of failing', async () => {
    await fs.writeFile(path.join(wf, 'workflow.yaml'), 'name: "{a}"\na: "{b}"\nb: "{a}"\n');
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx);
    expect(r.ok).toBe(true);
    expect(r.unresolved.length).toBeGreaterThan(0);
    for (const entry of r.unresolved) expect(entry).toMatch(/^[ab]: \{[ab]\} refers to itself$/);
  });

  it('reports a key the config lacks that the workflow defines as itself, never as a loop', async () => {
    await fs.writeFile(
      path.join(wf, 'workflow.yaml'),
      'name: x\nconfig_source: "{bundle-root}/config.yaml"\ntone: "{config_source}:tone"\nuser_name: "{config_source}:user_name"\ngreeting: "Hi {user_name}, in a {tone} tone"\n',
    );
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx);
    expect(r.ok).toBe(true);
    expect(r.workflow.user_name).toBe('Grace');
    expect(r.workflow.greeting).toBe('Hi Grace, in a {tone} tone');
    expect(r.unresolved).toEqual(["tone: {config_source}:tone is not set in {bundle-root}/config.yaml, nor in the agent's config"]);
  });

  it('falls back to the agent config for a key the config lacks', async () => {
    await fs.writeFile(path.join(wf, 'workflow.yaml'), 'name: x\nconfig_source: "{bundle-root}/config.yaml"\ncommunication_language: "{config_source}:communication_language"\n');
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', { ...sb.ctx, variables: { communication_language: 'Spanish' } });
    expect(r.workflow.communication_language).toBe('French');
    await fs.writeFile(path.join(sb.ctx.bundleRoot, 'config.yaml'), 'user_name: Grace\n');
    const r2: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', { ...sb.ctx, variables: { communication_language: 'Spanish' } });
    expect(r2.workflow.communication_language).toBe('Spanish');
    expect(r2.unresolved).toEqual([]);
  });

  it('resolves a nested variables map, whose keys other values may use', async () => {
    await fs.writeFile(
      path.join(wf, 'workflow.yaml'),
      'name: x\nconfig_source: "{bundle-root}/config.yaml"\nvariables:\n  story_dir: "{output_folder}/stories"\n  test_dir: "{project-root}/tests"\n  mode: "{config_source}:project_name"\ndefault_output_file: "{story_dir}/{{story_key}}.md"\n',
    );
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx);
    expect(r.ok).toBe(true);
    expect(r.workflow.variables).toEqual({ story_dir: '{output_folder}/stories', test_dir: '{project-root}/tests', mode: 'Apollo' });
    expect(r.workflow.default_output_file).toBe('{output_folder}/stories/{{story_key}}.md');
    // Outside a BMAD project {project-root} is no mount of its own.
    expect(r.unresolved).toEqual(['variables.test_dir: resolves to {project-root}/tests, outside every mount']);
  });

  it('refuses a config_source outside every mount', async () => {
    await fs.writeFile(path.join(wf, 'workflow.yaml'), 'name: x\nconfig_source: "{project-root}/.env"\n');
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx);
    expect(r.error.code).toBe('E_SANDBOX_VIOLATION');
    expect(JSON.stringify(r)).not.toContain('sk-test');
  });

  it('passes the user input back with the workflow', async () => {
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx, { userInput: { goal: 'x' } });
    expect(r.ok).toBe(true);
    expect(r.user_input).toEqual({ goal: 'x' });
  });

  it('falls back to the bundle config when config_source is missing', async () => {
    await fs.writeFile(path.join(wf, 'workflow.yaml'), 'name: x\nconfig_source: "{bundle-root}/nope.yaml"\nuser_name: "{config_source}:user_name"\n');
    const r: Any = await loadWorkflow('{bundle-root}/workflows/intake/workflow.yaml', sb.ctx);
    expect(r.ok).toBe(true);
    expect(r.workflow.user_name).toBe('Grace');
    expect(r.warnings).toHaveLength(1);
  });
});
