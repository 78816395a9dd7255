import { promises as fs } from 'node:fs';
import path from 'node:path';
import { executeTool, toolDefinitions } from '.';
import { bmadProject, COMPILED_RELEASES } from '../../../test/bmad-installs';
import { menuTargets, projectContext, type MenuTarget } from '../../../test/project-context';
import type { ToolContext } from './types';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

function call(ctx: ToolContext, args: Record<string, unknown>, id = 'wf'): Promise<Any> {
  return executeTool({ id, name: 'execute_workflow', arguments: JSON.stringify(args) }, ctx);
}

/** Whether a result gives the model everything its kind promises. */
function complete(r: Any): string | null {
  if (!r.ok) return null;
  if (typeof r.instructions?.content !== 'string' || r.instructions.content.trim() === '') return 'no instructions';
  if (r.kind === 'yaml' && !r.engine) return 'no engine';
  if (r.kind === 'step-file' && !r.step?.content && !r.step_choices?.length) return 'no first step';
  for (const entry of r.unresolved) if (!/^[\w.-]+: \S.+$/.test(entry)) return `unresolved entry without a reason: ${entry}`;
  return null;
}

describe.each(COMPILED_RELEASES)('every menu target of every agent in a real %s install', (release) => {
  let dir: string;
  let ctx: ToolContext;
  let targets: MenuTarget[];
  beforeAll(async () => {
    dir = await bmadProject(release);
    ctx = await projectContext(dir);
    targets = await menuTargets(dir);
  });
  afterAll(async () => {
    await fs.rm(path.dirname(dir), { recursive: true, force: true });
  });

  it('loads through execute_workflow: ok with every file resolved, or a reason', async () => {
    expect(targets.length).toBeGreaterThan(20);
    const outcomes: Array<{ target: MenuTarget; r: Any }> = [];
    for (const target of targets) {
      const r = await call(ctx, { workflow_path: target.target, ...(target.data ? { data_path: target.data } : {}) });
      outcomes.push({ target, r });
      if (r.ok) {
        expect({ target: target.target, problem: complete(r) }).toEqual({ target: target.target, problem: null });
        if (target.data) expect(r.data.content.length).toBeGreaterThan(0);
        expect(JSON.stringify(r)).not.toContain(dir);
      } else {
        expect(r.error.message.length).toBeGreaterThan(10);
      }
    }
    const ok = outcomes.filter((o) => o.r.ok);
    const clean = ok.filter((o) => o.r.unresolved.length === 0);
    const report = outcomes.filter((o) => !o.r.ok || o.r.unresolved.length).map((o) => `${o.target.target}: ${o.r.ok ? o.r.unresolved.join('; ') : o.r.error.message}`);
    if (ok.length / outcomes.length < 0.95) throw new Error(`${ok.length} of ${outcomes.length} targets ok (${clean.length} with nothing unresolved):\n${report.join('\n')}`);
    if (release === '6.0.4') {
      expect(ok.length).toBe(outcomes.length);
      expect(report).toEqual([]);
      const kinds = new Set(ok.map((o) => o.r.kind));
      expect([...kinds].sort()).toEqual(['step-file', 'yaml']);
    }
  });
});

describe('execute_workflow arguments', () => {
  let dir: string;
  let ctx: ToolContext;
  beforeAll(async () => {
    dir = await bmadProject('6.0.4');
    ctx = await projectContext(dir);
  });
  afterAll(async () => {
    await fs.rm(path.dirname(dir), { recursive: true, force: true });
  });

  it('data_path loads the menu item data= file', async () => {
    const r = await call(ctx, {
      workflow_path: '{project-root}/_bmad/bmm/workflows/4-implementation/retrospective/workflow.yaml',
      data_path: '{project-root}/_bmad/_config/agent-manifest.csv',
    });
    expect(r.ok).toBe(true);
    expect(r.data).toEqual({ path: '{bundle-root}/_config/agent-manifest.csv', content: expect.stringContaining('displayName') });
  });

  it('takes the menu attribute names models echo: exec and data', async () => {
    const r = await call(ctx, { exec: '{project-root}/_bmad/core/workflows/brainstorming/workflow.md', data: '{project-root}/_bmad/bmm/data/project-context-template.md' });
    expect(r.ok).toBe(true);
    expect(r.kind).toBe('step-file');
    expect(r.data.path).toBe('{bundle-root}/bmm/data/project-context-template.md');
  });

  it('a step path from a step frontmatter loads the next step resolved', async () => {
    const first = await call(ctx, { workflow_path: '{project-root}/_bmad/bmm/workflows/2-plan-workflows/create-prd/workflow-create-prd.md' });
    const next = await call(ctx, { workflow_path: first.step.frontmatter.nextStepFile });
    expect(next.ok).toBe(true);
    expect(next.kind).toBe('step');
    expect(next.workflow.nextStepFile).toMatch(/^\{bundle-root\}\/.*\/steps-c\/step-02b-vision\.md$/);
  });

  it('describes the kinds of result and the data_path argument', () => {
    const def = toolDefinitions().find((d) => d.function.name === 'execute_workflow')!;
    for (const word of ['yaml', 'step-file', 'step_choices', 'nextStepFile', 'task', 'unresolved', '{output_folder}']) expect(def.function.description).toContain(word);
    expect(Object.keys((def.function.parameters as Any).properties)).toEqual(['workflow_path', 'data_path', 'user_input']);
  });
});
