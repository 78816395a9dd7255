import fs from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { createCatalog } from './catalog';
import { isWorkflowCommand } from './parser';

// The content shipped in bmad/ is what new users see first; it must be clean.
const repo = path.resolve(__dirname, '..', '..', '..');
const bundlesRoot = path.join(repo, 'bmad', 'custom', 'bundles');
const coreRoot = path.join(repo, 'bmad', 'core');

async function exists(p: string): Promise<boolean> {
  return fs.stat(p).then(() => true, () => false);
}

describe('shipped sample content', () => {
  const catalog = createCatalog(bundlesRoot, { coreRoot });

  it('validates with zero problems', async () => {
    const bundles = await catalog.listBundles();
    expect(bundles.length).toBeGreaterThanOrEqual(2);
    for (const b of bundles) {
      expect({ folder: b.folder, problems: b.problems }).toEqual({ folder: b.folder, problems: [] });
      expect(b.valid).toBe(true);
    }
    expect(bundles.some((b) => b.type === 'standalone')).toBe(true);
    expect(bundles.some((b) => b.type === 'bundle' && b.agents.some((a) => !a.entryPoint))).toBe(true);
  });

  it('offers the documented agents, the first with *plan as its first workflow command', async () => {
    const agents = await catalog.listAgents();
    expect(agents.map((a) => a.id)).toEqual(['product-lead', 'story-writer', 'scribe']);
    const first = agents[0];
    expect(first.commands.find((c) => isWorkflowCommand(c))?.cmd).toBe('*plan');
    for (const a of agents) {
      expect(a.greeting).toBeTruthy();
      expect(a.commands.map((c) => c.cmd)).toContain('*help');
    }
  });

  it('uses both command styles and every command kind', async () => {
    const lead = await catalog.getAgent('product-lead');
    const writer = await catalog.getAgent('story-writer');
    expect(lead!.agent.raw).toContain('<cmds>');
    expect(writer!.agent.raw).toContain('<menu>');
    const kinds = new Set([...lead!.agent.commands, ...writer!.agent.commands].map((c) => c.kind));
    for (const k of ['run-workflow', 'workflow', 'validate-workflow', 'exec', 'action', 'prompt', 'data', 'none']) expect(kinds).toContain(k);
    expect(lead!.agent.commands.some((c) => c.attrs.tmpl)).toBe(true);
    expect(lead!.agent.criticalActions[0]).toMatch(/^Load into memory \{bundle-root\}\/config\.yaml and set variables: user_name/);
  });

  it('has complete workflows behind every workflow command', async () => {
    const bundles = await catalog.listBundles();
    let templates = 0;
    let noTemplate = 0;
    for (const b of bundles) {
      const bundleRoot = path.join(bundlesRoot, b.folder);
      const config = yaml.load(await fs.readFile(path.join(bundleRoot, 'config.yaml'), 'utf8')) as Record<string, unknown>;
      for (const key of ['user_name', 'communication_language', 'output_folder', 'project_name']) expect(config).toHaveProperty(key);
      for (const a of b.agents) {
        for (const c of a.commands) {
          // The sample's workflow.yaml files; exec tasks are plain markdown.
          if (!isWorkflowCommand(c) || !/\.ya?ml$/.test(c.target ?? '')) continue;
          const file = c.target!.replace('{bundle-root}', bundleRoot);
          const wf = yaml.load(await fs.readFile(file, 'utf8')) as Record<string, unknown>;
          const installed = path.dirname(file);
          expect(wf).toMatchObject({
            config_source: '{bundle-root}/config.yaml',
            output_folder: '{config_source}:output_folder',
            user_name: '{config_source}:user_name',
            installed_path: `{bundle-root}/${path.relative(bundleRoot, installed).split(path.sep).join('/')}`,
            instructions: '{installed_path}/instructions.md',
            date: 'system-generated',
          });
          expect(wf.name).toBeTruthy();
          expect(wf.description).toBeTruthy();
          expect(String(wf.default_output_file)).toMatch(/^\{output_folder\}\/.+-\{date\}\.md$/);
          const instructions = await fs.readFile(path.join(installed, 'instructions.md'), 'utf8');
          expect(instructions).toMatch(/## Step 1[^\n]*\n(?:[^\n]*\n)*?ASK:/);
          expect(await exists(String(wf.validation).replace('{installed_path}', installed))).toBe(true);
          if (wf.template === false) noTemplate++;
          else {
            expect(wf.template).toBe('{installed_path}/template.md');
            expect(await fs.readFile(path.join(installed, 'template.md'), 'utf8')).toMatch(/\{\{\w+\}\}/);
            templates++;
          }
        }
      }
    }
    expect(templates).toBeGreaterThan(0);
    expect(noTemplate).toBeGreaterThan(0);
  });

  it('ships the workflow rules in the core root', async () => {
    const text = await fs.readFile(path.join(coreRoot, 'tasks', 'workflow.md'), 'utf8');
    for (const word of ['execute_workflow', 'save_output', '{output_folder}', 'ASK:', 'template']) expect(text).toContain(word);
  });
});
