import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { countBySeverity, createDoctorCache, diagnose, diagnoseProject } from '.';
import { readProject } from '../projects';
import { problemLine, type Problem } from '../../core/results';
import { bmadProject, COMPILED_RELEASES, type Release } from '../../../test/bmad-installs';

const REPO = path.resolve(__dirname, '../../..');
const ROOTS = { coreRoot: path.join(REPO, 'bmad/core'), projectRoot: REPO };

const lines = (problems: Problem[]) => problems.map(problemLine);
// Which menu item reaches a workflow moves when a menu changes; the problem itself does not.
const withoutVia = (line: string) => line.replace(/ \(via [^)]*\)$/, '');
const of = (problems: Problem[], severity: Problem['severity']) => lines(problems.filter((p) => p.severity === severity));

async function edit(file: string, from: string | RegExp, to: string): Promise<void> {
  const text = await fs.readFile(file, 'utf8');
  const next = text.replace(from, to);
  if (next === text) throw new Error(`${file} does not contain ${from}`);
  await fs.writeFile(file, next);
}

const FRESH_WARNINGS: Record<Release, string[]> = {
  '6.0.4': [
    // BMAD ships this step with `don\'t` inside single quotes.
    '_bmad/bmm/workflows/2-plan-workflows/create-prd/steps-v/step-v-07-implementation-leakage-validation.md: warning: the frontmatter is not valid YAML (bad indentation of a mapping entry (line 3)); it was read line by line (via pm *CP and 2 more)',
  ],
  'alpha.7': [
    "bmad/bmm/workflows/4-implementation/dev-story/workflow.yaml: warning: run_tests_command: {config_source}:run_tests_command is not set in {bundle-root}/bmm/config.yaml, nor in the agent's config (via dev *develop-story)",
    "bmad/bmm/workflows/4-implementation/dev-story/workflow.yaml: warning: run_until_complete: {config_source}:run_until_complete is not set in {bundle-root}/bmm/config.yaml, nor in the agent's config (via dev *develop-story)",
    'bmad/bmm/workflows/testarch/ci/workflow.yaml: warning: default_output_file: resolves to {project-root}/.github/workflows/test.yml, where this conversation may not write; save into {output_folder} instead (via tea *ci)',
    'bmad/bmm/workflows/testarch/framework/workflow.yaml: warning: default_output_file: resolves to {project-root}/tests/README.md, where this conversation may not write; save into {output_folder} instead (via tea *framework)',
  ],
  '6.3.0': [],
  '6.12.0': [],
};

describe.each(COMPILED_RELEASES)('a fresh %s install', (release) => {
  let dir: string;
  let problems: Problem[];
  beforeAll(async () => {
    dir = await bmadProject(release);
    const d = await diagnose(dir);
    expect(d.kind).toBe('project');
    problems = d.problems;
  }, 120_000);
  afterAll(async () => {
    await fs.rm(path.dirname(dir), { recursive: true, force: true });
  });

  it('has no errors', () => {
    expect(of(problems, 'error')).toEqual([]);
  });

  it('has only the warnings its real content has', () => {
    expect(of(problems, 'warning')).toEqual(FRESH_WARNINGS[release]);
  });

  it('notes values workflows set while they run, and menu items not written yet', () => {
    const notes = of(problems, 'note');
    expect(notes.length).toBeGreaterThan(0);
    for (const note of notes) expect(note).toMatch(/: note: (\w+: \{\w+\} is not defined by the workflow, its config or the agent's config; a value the workflow sets while it runs|\*[\w-]+ workflow="todo": not written yet, the agent says so when it is asked)( \(via .*\))?$/);
  });

  it('names files relative to the project, never by a server path', () => {
    expect(JSON.stringify(problems)).not.toContain(path.dirname(dir));
    for (const p of problems) expect(p.file).toMatch(/^(_bmad|bmad)\//);
  });
});

describe('a broken 6.0.4 install: each break is exactly one line naming the file and the reason', () => {
  let fresh: string;
  let freshLines: Set<string>;
  beforeAll(async () => {
    fresh = await bmadProject('6.0.4');
    freshLines = new Set(lines((await diagnose(fresh)).problems).map(withoutVia));
  }, 120_000);
  afterAll(async () => {
    await fs.rm(path.dirname(fresh), { recursive: true, force: true });
  });

  /** The lines a diagnosis of a broken copy has that the fresh install has not. */
  async function newLines(breakIt: (bmad: string) => Promise<unknown>): Promise<string[]> {
    const copy = await fs.mkdtemp(path.join(path.dirname(fresh), 'broken-'));
    await fs.cp(fresh, copy, { recursive: true });
    await breakIt(path.join(copy, '_bmad'));
    const { problems } = await diagnose(copy);
    expect(JSON.stringify(problems)).not.toContain(copy);
    return lines(problems).filter((l) => !freshLines.has(withoutVia(l)));
  }

  it("a workflow's instructions file deleted", async () => {
    expect(await newLines((b) => fs.rm(path.join(b, 'bmm/workflows/4-implementation/correct-course/instructions.md')))).toEqual([
      '_bmad/bmm/workflows/4-implementation/correct-course/workflow.yaml: error: cannot be loaded: instructions: Not found: {bundle-root}/bmm/workflows/4-implementation/correct-course/instructions.md (via pm *CC and 1 more)',
    ]);
  });

  it('a step file in the middle of the chain deleted', async () => {
    expect(await newLines((b) => fs.rm(path.join(b, 'bmm/workflows/2-plan-workflows/create-prd/steps-c/step-03-success.md')))).toEqual([
      '_bmad/bmm/workflows/2-plan-workflows/create-prd/steps-c/step-02c-executive-summary.md: error: nextStepFile: {bundle-root}/bmm/workflows/2-plan-workflows/create-prd/steps-c/step-03-success.md does not exist (via pm *CP)',
    ]);
  });

  it('the first step deleted', async () => {
    expect(await newLines((b) => fs.rm(path.join(b, 'bmm/workflows/2-plan-workflows/create-prd/steps-c/step-01-init.md')))).toEqual([
      '_bmad/bmm/workflows/2-plan-workflows/create-prd/workflow-create-prd.md: error: step: {bundle-root}/bmm/workflows/2-plan-workflows/create-prd/steps-c/step-01-init.md (named as `{nextStep}`) was not found (via pm *CP)',
    ]);
  });

  it("a step's template deleted", async () => {
    expect(await newLines((b) => fs.rm(path.join(b, 'bmm/workflows/2-plan-workflows/create-prd/templates/prd-template.md')))).toEqual([
      '_bmad/bmm/workflows/2-plan-workflows/create-prd/steps-c/step-01-init.md: error: prdTemplate: {bundle-root}/bmm/workflows/2-plan-workflows/create-prd/templates/prd-template.md does not exist (via pm *CP)',
    ]);
  });

  it("a workflow.yaml's template deleted", async () => {
    expect(await newLines((b) => fs.rm(path.join(b, 'bmm/workflows/4-implementation/create-story/template.md')))).toEqual([
      '_bmad/bmm/workflows/4-implementation/create-story/workflow.yaml: error: cannot be loaded: template: Not found: {bundle-root}/bmm/workflows/4-implementation/create-story/template.md (via sm *CS)',
    ]);
  });

  it('a config key workflows use removed: a warning on each workflow reading it', async () => {
    const reason = "warning: user_skill_level: {config_source}:user_skill_level is not set in {bundle-root}/bmm/config.yaml, nor in the agent's config";
    expect(await newLines((b) => edit(path.join(b, 'bmm/config.yaml'), /^user_skill_level: .*\n/m, ''))).toEqual([
      `_bmad/bmm/workflows/4-implementation/code-review/workflow.yaml: ${reason} (via dev *CR and 1 more)`,
      `_bmad/bmm/workflows/4-implementation/correct-course/workflow.yaml: ${reason} (via pm *CC and 1 more)`,
      `_bmad/bmm/workflows/4-implementation/create-story/workflow.yaml: ${reason} (via sm *CS)`,
      `_bmad/bmm/workflows/4-implementation/dev-story/workflow.yaml: ${reason} (via dev *DS)`,
      `_bmad/bmm/workflows/4-implementation/retrospective/workflow.yaml: ${reason} (via sm *ER)`,
      `_bmad/bmm/workflows/document-project/workflow.yaml: ${reason} (via analyst *DP and 1 more)`,
    ]);
  });

  it('a config key a step-file workflow uses as {name} removed: a warning, not a note, since workflows read it from their config', async () => {
    const found = await newLines((b) => edit(path.join(b, 'bmm/config.yaml'), /^planning_artifacts: .*\n/m, ''));
    expect(found).toContain(
      "_bmad/bmm/workflows/2-plan-workflows/create-prd/workflow-create-prd.md: warning: planning_artifacts: {planning_artifacts} is not defined by the workflow, its config or the agent's config; workflows read it as {config_source}:planning_artifacts, so the config misses it (via pm *CP)",
    );
    expect(found.every((l) => /: warning: planning_artifacts: /.test(l))).toBe(true);
  });

  it('a menu item pointing at a missing file', async () => {
    expect(await newLines((b) => edit(path.join(b, 'bmm/agents/pm.md'), 'create-prd/workflow-create-prd.md', 'create-prd/workflow-create-prd-v2.md'))).toEqual([
      '_bmad/bmm/agents/pm.md: error: *CP points to {project-root}/_bmad/bmm/workflows/2-plan-workflows/create-prd/workflow-create-prd-v2.md, which does not exist',
    ]);
  });

  it("a menu item's data file deleted", async () => {
    expect(await newLines((b) => fs.rm(path.join(b, 'bmm/data/project-context-template.md')))).toEqual([
      '_bmad/bmm/agents/analyst.md: error: *BP points to {project-root}/_bmad/bmm/data/project-context-template.md, which does not exist',
    ]);
  });

  it('the agent manifest broken as CSV', async () => {
    expect(await newLines((b) => edit(path.join(b, '_config/agent-manifest.csv'), /^"pm","John"/m, '"pm,"John"'))).toEqual([
      '_bmad/_config/agent-manifest.csv: error: not valid CSV (Invalid Closing Quote: got "J" at line 6 instead of delimiter, record delimiter, trimable character (if activated) or comment); the agents are looked for in the module folders instead',
    ]);
  });

  it('an agent the manifest lists deleted', async () => {
    expect(await newLines((b) => fs.rm(path.join(b, 'bmm/agents/qa.md')))).toEqual(['_bmad/_config/agent-manifest.csv: error: agent qa: _bmad/bmm/agents/qa.md not found']);
  });

  it('a YAML syntax error in a workflow.yaml', async () => {
    expect(await newLines((b) => edit(path.join(b, 'bmm/workflows/4-implementation/correct-course/workflow.yaml'), /^name: (.*)$/m, 'name: [$1'))).toEqual([
      '_bmad/bmm/workflows/4-implementation/correct-course/workflow.yaml: error: is not valid YAML: missed comma between flow collection entries (line 3) (via pm *CC and 1 more)',
    ]);
  });

  it('a module config that is not valid YAML: its own line and one per agent that cannot start, nothing repeated per workflow', async () => {
    const found = await newLines((b) => edit(path.join(b, 'bmm/config.yaml'), 'user_name: Tester', 'user_name: [Tester'));
    expect(found).toContain('_bmad/bmm/config.yaml: error: is not valid YAML: missed comma between flow collection entries (line 14); its settings are not used');
    expect(found).toContain(
      '_bmad/bmm/agents/pm.md: error: pm cannot start: loading {project-root}/_bmad/bmm/config.yaml fails: {bundle-root}/bmm/config.yaml is not valid YAML: missed comma between flow collection entries (line 14)',
    );
    expect(found.filter((l) => !/cannot start/.test(l))).toHaveLength(1);
    // bmad-master loads the core config: it still starts.
    expect(found.some((l) => l.startsWith('_bmad/core/agents/bmad-master.md'))).toBe(false);
  });

  it('a workflow manifest row whose file is gone', async () => {
    const found = await newLines(async (b) => {
      await fs.rm(path.join(b, 'core/workflows/brainstorming'), { recursive: true });
    });
    expect(found).toEqual(
      expect.arrayContaining([
        '_bmad/_config/workflow-manifest.csv: warning: brainstorming: _bmad/core/workflows/brainstorming/workflow.md not found',
        '_bmad/bmm/agents/analyst.md: error: *BP points to {project-root}/_bmad/core/workflows/brainstorming/workflow.md, which does not exist',
      ]),
    );
  });
});

describe('a broken alpha.7 install', () => {
  let dir: string;
  afterAll(async () => {
    await fs.rm(path.dirname(dir), { recursive: true, force: true });
  });

  it('reports a missing instructions file and a menu item pointing nowhere', async () => {
    dir = await bmadProject('alpha.7');
    const before = new Set(lines((await diagnose(dir)).problems));
    const instructions = (await fs.readdir(path.join(dir, 'bmad/bmm/workflows/4-implementation/create-story'))).find((f) => f.startsWith('instructions.'));
    await fs.rm(path.join(dir, 'bmad/bmm/workflows/4-implementation/create-story', instructions as string));
    await edit(path.join(dir, 'bmad/bmm/agents/pm.md'), /workflow="\{project-root\}\/bmad\/bmm\/workflows\/2-plan-workflows\/prd\/workflow\.yaml"/, 'workflow="{project-root}/bmad/bmm/workflows/2-plan-workflows/prd-gone/workflow.yaml"');
    const after = lines((await diagnose(dir)).problems).filter((l) => !before.has(l));
    expect(after).toEqual([
      'bmad/bmm/agents/pm.md: error: *create-prd points to {project-root}/bmad/bmm/workflows/2-plan-workflows/prd-gone/workflow.yaml, which does not exist',
      `bmad/bmm/workflows/4-implementation/create-story/workflow.yaml: error: cannot be loaded: instructions: Not found: {bundle-root}/bmm/workflows/4-implementation/create-story/${instructions} (via sm *create-story and 1 more)`,
    ]);
  }, 120_000);
});

describe('bundles', () => {
  it('the sample bundles have no problem at all', async () => {
    const root = await diagnose(path.join(REPO, 'bmad/custom/bundles'), ROOTS);
    expect(root).toEqual({ kind: 'bundles', problems: [] });
    const one = await diagnose(path.join(REPO, 'bmad/custom/bundles/product-studio'), ROOTS);
    expect(one).toEqual({ kind: 'bundle', problems: [] });
  });

  it("reports the catalog's problems and the workflow checks, relative to the folder given", async () => {
    const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'doctor-bundles-'));
    try {
      const root = path.join(tmp, 'bundles');
      await fs.cp(path.join(REPO, 'bmad/custom/bundles'), root, { recursive: true });
      const studio = path.join(root, 'product-studio');
      await fs.rm(path.join(studio, 'workflows/user-stories/instructions.md'));
      await edit(path.join(studio, 'agents/story-writer.md'), 'tasks/estimate.md', 'tasks/estimate-v2.md');
      await edit(path.join(studio, 'agents/product-lead.md'), 'output_folder, project_name</i>', 'output_folder, project_name, team_size</i>');
      await edit(path.join(root, 'scribe/bundle.yaml'), /^(\s+)file: .*$/m, '$1file: agents/nobody.md');

      expect(lines((await diagnose(root, ROOTS)).problems)).toEqual([
        'product-studio/agents/product-lead.md: warning: {bundle-root}/config.yaml does not define team_size, which product-lead sets from it at start',
        'product-studio/agents/story-writer.md: error: *estimate points to {bundle-root}/tasks/estimate-v2.md, which does not exist',
        'product-studio/workflows/user-stories/workflow.yaml: error: cannot be loaded: instructions: Not found: {bundle-root}/workflows/user-stories/instructions.md (via product-lead *stories and 2 more)',
        'scribe/agents/nobody.md: error: not found (agent.file in scribe/bundle.yaml)',
      ]);
      expect(lines((await diagnose(studio, ROOTS)).problems)).toEqual([
        'agents/product-lead.md: warning: {bundle-root}/config.yaml does not define team_size, which product-lead sets from it at start',
        'agents/story-writer.md: error: *estimate points to {bundle-root}/tasks/estimate-v2.md, which does not exist',
        'workflows/user-stories/workflow.yaml: error: cannot be loaded: instructions: Not found: {bundle-root}/workflows/user-stories/instructions.md (via product-lead *stories and 2 more)',
      ]);
    } finally {
      await fs.rm(tmp, { recursive: true, force: true });
    }
  });
});

it('a folder that is none of the three is one error', async () => {
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'doctor-none-'));
  try {
    expect(await diagnose(tmp)).toEqual({
      kind: 'unknown',
      problems: [{ file: '.', severity: 'error', reason: 'neither a BMAD project (no _bmad/ or bmad/ install), a bundle (no bundle.yaml) nor a folder of bundles' }],
    });
    await expect(diagnose(path.join(tmp, 'missing'))).rejects.toThrow();
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
});

describe('createDoctorCache', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await bmadProject('6.0.4');
  }, 120_000);
  afterAll(async () => {
    await fs.rm(path.dirname(dir), { recursive: true, force: true });
  });

  it('shares one diagnosis while it runs and for ttlMs after, then diagnoses again', async () => {
    let now = 0;
    const cache = createDoctorCache({ ttlMs: 5000, now: () => now });
    const project = await readProject(dir, 'demo');
    if (!project) throw new Error('no project');
    const a = cache.project(project);
    expect(cache.project(project)).toBe(a);
    const first = await a;
    expect(countBySeverity(first).error).toBe(0);
    now = 4999;
    expect(cache.project(project)).toBe(a);
    await fs.rm(path.join(dir, '_bmad/bmm/workflows/4-implementation/correct-course/instructions.md'));
    now = 5000;
    const b = cache.project(project);
    expect(b).not.toBe(a);
    expect(countBySeverity(await b).error).toBe(1);
    expect(await diagnoseProject(project)).toEqual(await b);
  });
});
