import { promises as fs } from 'node:fs';
import path from 'node:path';
import { loadWorkflow, unresolvedName } from '.';
import { today, type PathContext } from '../../core/paths';
import { bmadProject } from '../../../test/bmad-installs';
import { projectContext } from '../../../test/project-context';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const BMM = '{project-root}/_bmad/bmm/workflows';
const CREATE_PRD = `${BMM}/2-plan-workflows/create-prd/workflow-create-prd.md`;
const CORRECT_COURSE = `${BMM}/4-implementation/correct-course/workflow.yaml`;
const PRD_DIR = '{bundle-root}/bmm/workflows/2-plan-workflows/create-prd';

/** A fresh copy of a real 6.0.4 install and the context of a conversation in it. */
async function project(): Promise<{ dir: string; ctx: PathContext; cleanup(): Promise<void> }> {
  const dir = await bmadProject('6.0.4');
  const ctx = await projectContext(dir);
  return { dir, ctx, cleanup: () => fs.rm(path.dirname(dir), { recursive: true, force: true }) };
}

async function edit(file: string, from: string | RegExp, to: string): Promise<void> {
  const text = await fs.readFile(file, 'utf8');
  const next = text.replace(from, to);
  if (next === text) throw new Error(`${file} does not contain ${from}`);
  await fs.writeFile(file, next);
}

let p: Awaited<ReturnType<typeof project>>;
beforeAll(async () => {
  p = await project();
});
afterAll(async () => {
  await p.cleanup();
});

describe('a step-file workflow (create-prd, 6.0.4)', () => {
  it('comes with its frontmatter resolved and its first step loaded under a full virtual path', async () => {
    const r: Any = await loadWorkflow(CREATE_PRD, p.ctx);
    expect(r.ok).toBe(true);
    expect(r.kind).toBe('step-file');
    expect(r.path).toBe(`${PRD_DIR}/workflow-create-prd.md`);
    expect(r.workflow).toMatchObject({
      name: 'create-prd',
      main_config: '{bundle-root}/bmm/config.yaml',
      nextStep: `${PRD_DIR}/steps-c/step-01-init.md`,
      installed_path: PRD_DIR,
      config_source: '{bundle-root}/bmm/config.yaml',
    });
    expect(r.step.path).toBe(`${PRD_DIR}/steps-c/step-01-init.md`);
    expect(r.step.found_by).toBe('directive');
    expect(r.step.frontmatter).toEqual({
      name: 'step-01-init',
      description: expect.any(String),
      nextStepFile: `${PRD_DIR}/steps-c/step-02-discovery.md`,
      continueStepFile: `${PRD_DIR}/steps-c/step-01b-continue.md`,
      outputFile: '{output_folder}/planning-artifacts/prd.md',
      prdTemplate: `${PRD_DIR}/templates/prd-template.md`,
    });
    expect(r.step.content).toContain('# Step 1: Workflow Initialization');
    // The body's "Read fully and follow: `{nextStep}`" names the step the model already has.
    expect(r.instructions.path).toBe(r.path);
    expect(r.instructions.content).toContain(`\`${PRD_DIR}/steps-c/step-01-init.md\``);
    expect(r.instructions.content).not.toMatch(/^---/);
    expect(r.config).toMatchObject({ planning_artifacts: '{output_folder}/planning-artifacts', output_folder: '{output_folder}', user_name: 'Tester' });
    expect(r.unresolved).toEqual([]);
    expect(r.engine).toBeUndefined();
    expect(JSON.stringify(r)).not.toContain(p.dir);
  });

  it('leaves no relative path for the model to read: every reference in the step text is full', async () => {
    const r: Any = await loadWorkflow(CREATE_PRD, p.ctx);
    const refs = [...`${r.instructions.content}\n${r.step.content}`.matchAll(/[`'"](\.{1,2}\/[^`'"\s]+\.md)[`'"]/g)];
    expect(refs.map((m) => m[1])).toEqual([]);
    expect(r.step.content).toContain(`${PRD_DIR}/steps-c/step-02-discovery.md`);
  });

  it('loads a step file on its own, its next step a full path (the way on to step 2)', async () => {
    const r: Any = await loadWorkflow(`${PRD_DIR}/steps-c/step-02-discovery.md`, p.ctx);
    expect(r.ok).toBe(true);
    expect(r.kind).toBe('step');
    expect(r.step).toBeUndefined();
    expect(r.workflow.nextStepFile).toBe(`${PRD_DIR}/steps-c/step-02b-vision.md`);
    expect(r.workflow.outputFile).toBe('{output_folder}/planning-artifacts/prd.md');
    expect(r.workflow.config_source).toBe('{bundle-root}/bmm/config.yaml');
    expect(r.unresolved).toEqual([]);
  });

  it('reads a step whose frontmatter is not valid YAML line by line, with a warning', async () => {
    // BMAD 6.0.4 ships this step with `don\'t` inside single quotes.
    const r: Any = await loadWorkflow(`${PRD_DIR}/steps-v/step-v-07-implementation-leakage-validation.md`, p.ctx);
    expect(r.ok).toBe(true);
    expect(r.workflow.nextStepFile).toBe(`${PRD_DIR}/steps-v/step-v-08-domain-compliance-validation.md`);
    expect(r.warnings.join('\n')).toMatch(/not valid YAML/);
  });

  it('edit and validate variants start at the step their frontmatter key names', async () => {
    const edit: Any = await loadWorkflow(`${BMM}/2-plan-workflows/create-prd/workflow-edit-prd.md`, p.ctx);
    expect(edit.workflow.editWorkflow).toBe(`${PRD_DIR}/steps-e/step-e-01-discovery.md`);
    expect(edit.step.path).toBe(`${PRD_DIR}/steps-e/step-e-01-discovery.md`);
    const validate: Any = await loadWorkflow(`${BMM}/2-plan-workflows/create-prd/workflow-validate-prd.md`, p.ctx);
    expect(validate.step.path).toBe(`${PRD_DIR}/steps-v/step-v-01-discovery.md`);
  });

  it('core workflows read the core config and start where their text says (party mode: step 2)', async () => {
    const r: Any = await loadWorkflow('{project-root}/_bmad/core/workflows/party-mode/workflow.md', p.ctx);
    expect(r.kind).toBe('step-file');
    expect(r.workflow.config_source).toBe('{core-root}/config.yaml');
    expect(r.step.path).toBe('{core-root}/workflows/party-mode/steps/step-02-discussion-orchestration.md');
    const b: Any = await loadWorkflow('{project-root}/_bmad/core/workflows/brainstorming/workflow.md', p.ctx);
    // "Read fully and follow: `steps/step-01-session-setup.md`": relative without ./
    expect(b.step.path).toBe('{core-root}/workflows/brainstorming/steps/step-01-session-setup.md');
    expect(b.instructions.content).toContain('`{core-root}/workflows/brainstorming/steps/step-01-session-setup.md`');
  });
});

describe('a workflow.yaml in a project (correct-course, 6.0.4)', () => {
  it('reads config_source inside the project and resolves every path to a mount', async () => {
    const r: Any = await loadWorkflow(CORRECT_COURSE, p.ctx);
    expect(r.ok).toBe(true);
    expect(r.kind).toBe('yaml');
    expect(r.workflow).toMatchObject({
      config_source: '{bundle-root}/bmm/config.yaml',
      user_name: 'Tester',
      communication_language: 'English',
      planning_artifacts: '{output_folder}/planning-artifacts',
      implementation_artifacts: '{output_folder}/implementation-artifacts',
      project_knowledge: '{project-root}/docs',
      installed_path: '{bundle-root}/bmm/workflows/4-implementation/correct-course',
      instructions: '{bundle-root}/bmm/workflows/4-implementation/correct-course/instructions.md',
      checklist: '{bundle-root}/bmm/workflows/4-implementation/correct-course/checklist.md',
      default_output_file: `{output_folder}/planning-artifacts/sprint-change-proposal-${today()}.md`,
      template: false,
      date: today(),
    });
    expect(r.workflow.input_file_patterns.document_project.sharded).toBe('{project-root}/docs/index.md');
    expect(r.workflow.input_file_patterns.prd.whole).toBe('{output_folder}/planning-artifacts/*prd*.md');
    expect(r.instructions.path).toBe('{bundle-root}/bmm/workflows/4-implementation/correct-course/instructions.md');
    expect(r.engine.path).toBe('{core-root}/tasks/workflow.xml');
    expect(r.unresolved).toEqual([]);
    expect(JSON.stringify(r)).not.toContain(p.dir);
  });

  it('a workflow.md named by workflow= is loaded as a step-file workflow, not parsed as YAML', async () => {
    // quick-flow-solo-dev's menu: workflow="{project-root}/_bmad/bmm/workflows/bmad-quick-flow/quick-dev/workflow.md"
    const r: Any = await loadWorkflow(`${BMM}/bmad-quick-flow/quick-dev/workflow.md`, p.ctx);
    expect(r.ok).toBe(true);
    expect(r.kind).toBe('step-file');
    expect(r.step.path).toBe('{bundle-root}/bmm/workflows/bmad-quick-flow/quick-dev/steps/step-01-mode-detection.md');
  });

  it('a menu naming workflow.yaml where the release ships workflow.md loads the workflow.md, with a warning', async () => {
    const r: Any = await loadWorkflow(`${BMM}/bmad-quick-flow/quick-dev/workflow.yaml`, p.ctx);
    expect(r.ok).toBe(true);
    expect(r.path).toBe('{bundle-root}/bmm/workflows/bmad-quick-flow/quick-dev/workflow.md');
    expect(r.warnings[0]).toMatch(/workflow\.yaml does not exist; loaded .*workflow\.md/);
  });

  it('a folder stands for its workflow.md when it has no workflow.yaml', async () => {
    const r: Any = await loadWorkflow(`${BMM}/3-solutioning/create-architecture`, p.ctx);
    expect(r.path).toBe('{bundle-root}/bmm/workflows/3-solutioning/create-architecture/workflow.md');
  });
});

describe('data= files', () => {
  it('loads the menu item data file beside the workflow', async () => {
    const r: Any = await loadWorkflow(`${BMM}/4-implementation/retrospective/workflow.yaml`, p.ctx, { dataPath: '{project-root}/_bmad/_config/agent-manifest.csv' });
    expect(r.ok).toBe(true);
    expect(r.data.path).toBe('{bundle-root}/_config/agent-manifest.csv');
    expect(r.data.content).toMatch(/^name,displayName,title/);
    const brainstorm: Any = await loadWorkflow('{project-root}/_bmad/core/workflows/brainstorming/workflow.md', p.ctx, {
      dataPath: '{project-root}/_bmad/bmm/data/project-context-template.md',
    });
    expect(brainstorm.data.path).toBe('{bundle-root}/bmm/data/project-context-template.md');
  });

  it('a data file that cannot be read fails naming data_path', async () => {
    const r: Any = await loadWorkflow(CORRECT_COURSE, p.ctx, { dataPath: '{project-root}/_bmad/bmm/data/nope.csv' });
    expect(r.ok).toBe(false);
    expect(r.error.code).toBe('ENOENT');
    expect(r.error.message).toMatch(/^data_path: /);
    const secret: Any = await loadWorkflow(CORRECT_COURSE, p.ctx, { dataPath: '{project-root}/.env' });
    expect(secret.error.code).toBe('E_SANDBOX_VIOLATION');
  });
});

describe('what cannot be resolved is reported, never a failure', () => {
  let q: Awaited<ReturnType<typeof project>>;
  beforeEach(async () => {
    q = await project();
  });
  afterEach(async () => {
    await q.cleanup();
  });

  it('a config key the config lacks is an unresolved entry, not a loop on the workflow key of the same name', async () => {
    const config = path.join(q.dir, '_bmad', 'bmm', 'config.yaml');
    await edit(config, /^communication_language: .*\n/m, '');
    await edit(config, /^document_output_language: .*\n/m, '');
    const ctx = await projectContext(q.dir);
    expect(ctx.variables.communication_language).toBeUndefined();
    const r: Any = await loadWorkflow(CORRECT_COURSE, ctx);
    expect(r.ok).toBe(true);
    expect(r.unresolved.map(unresolvedName).sort()).toEqual(['communication_language', 'document_output_language']);
    expect(r.unresolved).toContain(
      "communication_language: {config_source}:communication_language is not set in {bundle-root}/bmm/config.yaml, nor in the agent's config",
    );
    expect(r.workflow.communication_language).toBe('{config_source}:communication_language');
    expect(r.workflow.user_name).toBe('Tester');
  });

  it('outputs the conversation may not write are unresolved with their reason', async () => {
    await edit(path.join(q.dir, '_bmad', 'bmm', 'config.yaml'), /^planning_artifacts: .*$/m, 'planning_artifacts: "{project-root}/planning"');
    const ctx = await projectContext(q.dir);
    const cc: Any = await loadWorkflow(CORRECT_COURSE, ctx);
    expect(cc.ok).toBe(true);
    expect(cc.workflow.planning_artifacts).toBe('{project-root}/planning');
    expect(cc.unresolved).toEqual(
      expect.arrayContaining([
        'planning_artifacts: resolves to {project-root}/planning, where this conversation may not write; save into {output_folder} instead',
        expect.stringMatching(/^default_output_file: resolves to \{project-root\}\/planning\/sprint-change-proposal-.*may not write/),
      ]),
    );
    const prd: Any = await loadWorkflow(CREATE_PRD, ctx);
    expect(prd.unresolved).toEqual(['step.outputFile: resolves to {project-root}/planning/prd.md, where this conversation may not write; save into {output_folder} instead']);
    // Once the project lets the conversation write there, nothing is left to report.
    const writable: Any = await loadWorkflow(CREATE_PRD, { ...ctx, project: { writable: ['planning'] } });
    expect(writable.unresolved).toEqual([]);
  });

  it('a relative ../ that would leave every mount is refused: reported, never read', async () => {
    await fs.writeFile(path.join(path.dirname(q.dir), 'outside.md'), 'TOP SECRET\n');
    const prdDir = path.join(q.dir, '_bmad', 'bmm', 'workflows', '2-plan-workflows', 'create-prd');
    await edit(path.join(prdDir, 'workflow-create-prd.md'), "nextStep: './steps-c/step-01-init.md'", "nextStep: '../../../../../../outside.md'");
    const r: Any = await loadWorkflow(CREATE_PRD, q.ctx);
    expect(r.ok).toBe(true);
    expect(r.step).toBeUndefined();
    expect(r.workflow.nextStep).toBe('../../../../../../outside.md');
    expect(r.unresolved).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^nextStep: \.\.\/\.\.\/\.\.\/\.\.\/\.\.\/\.\.\/outside\.md leaves the project, outside every mount$/),
        expect.stringMatching(/^step: .*leaves the project/),
      ]),
    );
    expect(JSON.stringify(r)).not.toContain('TOP SECRET');

    await edit(path.join(prdDir, 'workflow-create-prd.md'), "nextStep: '../../../../../../outside.md'", "nextStep: './steps-c/step-01-init.md'");
    await edit(path.join(prdDir, 'steps-c', 'step-01-init.md'), "prdTemplate: '../templates/prd-template.md'", "prdTemplate: '../../../../../../../outside.md'");
    const s: Any = await loadWorkflow(CREATE_PRD, q.ctx);
    expect(s.step.frontmatter.prdTemplate).toBe('../../../../../../../outside.md');
    expect(s.unresolved).toEqual([expect.stringMatching(/^step\.prdTemplate: .*leaves the project, outside every mount$/)]);
    expect(JSON.stringify(s)).not.toContain('TOP SECRET');
  });

  it('a path that stays in the project but in no mount is refused outside a BMAD project mount', async () => {
    const { project: _omit, ...bare } = q.ctx;
    void _omit;
    const r: Any = await loadWorkflow(CORRECT_COURSE, bare);
    expect(r.ok).toBe(true);
    expect(r.unresolved).toEqual(
      expect.arrayContaining([
        'project_knowledge: resolves to {project-root}/docs, outside every mount',
        'input_file_patterns.document_project.sharded: resolves to {project-root}/docs/index.md, outside every mount',
      ]),
    );
  });
});

describe('tasks', () => {
  it('an XML task comes as it is written, its {project-root} paths made mount paths', async () => {
    const r: Any = await loadWorkflow('{project-root}/_bmad/core/tasks/shard-doc.xml', p.ctx);
    expect(r.ok).toBe(true);
    expect(r.kind).toBe('task');
    expect(r.instructions.path).toBe('{core-root}/tasks/shard-doc.xml');
    expect(r.instructions.content).toContain('<task');
    expect(r.instructions.content).not.toContain('{project-root}/_bmad');
    expect(r.step).toBeUndefined();
  });

  it('a markdown task without steps is a task', async () => {
    const r: Any = await loadWorkflow('{project-root}/_bmad/core/tasks/help.md', p.ctx);
    expect(r.ok).toBe(true);
    expect(r.kind).toBe('task');
    expect(r.workflow.name).toBeDefined();
    expect(r.instructions.content).toContain('{bundle-root}/_config');
  });
});

describe('skill: targets (6.2 menus)', () => {
  // No 6.2 release is installed for tests: the 6.0.4 brainstorming workflow is given the manifest
  // row and the pointer SKILL.md that 6.2.0 installs beside the same workflow.
  let q: Awaited<ReturnType<typeof project>>;
  beforeAll(async () => {
    q = await project();
    const bmad = path.join(q.dir, '_bmad');
    await fs.writeFile(
      path.join(bmad, '_config', 'skill-manifest.csv'),
      'canonicalId,name,description,module,path,install_to_bmad\n"bmad-brainstorming","bmad-brainstorming","Facilitate brainstorming.","core","_bmad/core/workflows/brainstorming/SKILL.md","true"\n"bmad-help","bmad-help","Help.","core","_bmad/core/tasks/help.md","true"\n',
    );
    await fs.writeFile(path.join(bmad, 'core', 'workflows', 'brainstorming', 'SKILL.md'), "---\nname: bmad-brainstorming\ndescription: 'Facilitate brainstorming.'\n---\n\nFollow the instructions in ./workflow.md.\n");
  });
  afterAll(async () => {
    await q.cleanup();
  });

  it("loads the skill's workflow.md when its SKILL.md only points there", async () => {
    const r: Any = await loadWorkflow('skill:bmad-brainstorming', q.ctx);
    expect(r.ok).toBe(true);
    expect(r.path).toBe('{core-root}/workflows/brainstorming/workflow.md');
    expect(r.kind).toBe('step-file');
    expect(r.step.path).toBe('{core-root}/workflows/brainstorming/steps/step-01-session-setup.md');
  });

  it('loads the file the manifest names otherwise, and names what is missing', async () => {
    const help: Any = await loadWorkflow('skill:bmad-help', q.ctx);
    expect(help.path).toBe('{core-root}/tasks/help.md');
    const none: Any = await loadWorkflow('skill:bmad-nope', q.ctx);
    expect(none.error.code).toBe('ENOENT');
    expect(none.error.message).toBe('skill:bmad-nope: no skill named bmad-nope in {bundle-root}/_config/skill-manifest.csv, and no skill folder of the project (.claude/skills, .agents/skills, ...) holds bmad-nope');
    const old: Any = await loadWorkflow('skill:bmad-brainstorming', p.ctx);
    expect(old.error.message).toMatch(/this install has no skill list/);
  });
});
