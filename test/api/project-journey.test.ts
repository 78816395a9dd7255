import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { POST as chat } from '@/app/api/chat/route';
import { GET as getJourney } from '@/app/api/projects/[id]/journey/route';
import type { ProjectJourney } from '@/types/api';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { journeyModel } from './journey';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * The journey of real installs made by BMAD's own installer, read from their own help catalogs:
 * a fresh project, then one with a brief written by the analyst's own command. Every `next`
 * command starts server-side with the agent it names, and the help runs from any agent.
 */
let h: Harness;
let projectsRoot: string;

const RELEASES = [
  // 6.0.4's brief workflow writes `{planning_artifacts}/product-brief-{project_name}-{date}.md`;
  // 6.12's skill writes into its configured run folder (customize.toml brief_output_path / run_folder_pattern).
  // 6.0.4's analysis phase has no required step, so the brief finishes it; 6.12's `plan` phase
  // also holds the required architecture, epics and sprint planning, so it is only started.
  { release: '6.0.4' as const, id: 'j604', analyst: 'analyst', brief: '*CB', briefPath: '{planning_artifacts}/product-brief-j604-2026-11-25.md', pm: 'pm', briefPhase: 'done' },
  { release: '6.12.0' as const, id: 'j612', analyst: 'bmad-agent-analyst', brief: '*CB', briefPath: '{planning_artifacts}/briefs/brief-j612-2026-11-25/brief.md', pm: 'bmad-agent-pm', briefPhase: 'started' },
];

// The phase of each release's catalog where stories are built.
const SPRINT_RELEASES = [
  // 6.0.4 plans the sprint in that phase (the sprint status is one of its documents); 6.12 before it.
  { release: '6.0.4' as const, id: 's604', phase: '4-implementation', unmoved: 'started' },
  { release: '6.12.0' as const, id: 's612', phase: 'ship', unmoved: 'not-started' },
];

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-journey-'));
  for (const r of RELEASES) await bmadProject(r.release, { parent: projectsRoot, name: r.id });
  await bmadProject('6.3.0', { parent: projectsRoot, name: 'j630' });
  for (const r of SPRINT_RELEASES) await bmadProject(r.release, { parent: projectsRoot, name: r.id });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 240_000);
afterAll(async () => {
  await h.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const send = async (body: Record<string, unknown>) => {
  const res = await chat(jsonRequest('/api/chat', body));
  return { status: res.status, body: await res.json() };
};
const journey = async (id: string): Promise<ProjectJourney> => {
  const res = await getJourney(get(`/api/projects/${id}/journey`), params({ id }));
  expect(res.status).toBe(200);
  return (await res.json()).data as ProjectJourney;
};

/** The catalog's first required row, in the file's order: what the fresh journey must suggest. */
async function firstRequired(id: string): Promise<{ code: string; phases: string[] }> {
  const text = await fs.readFile(path.join(projectsRoot, id, '_bmad', '_config', 'bmad-help.csv'), 'utf8');
  const rows = parseCsv(text, { columns: true, skip_empty_lines: true, relax_column_count: true }) as Record<string, string>[];
  const steps = rows.filter((r) => (r.skill ?? r.command) !== '_meta');
  const row = steps.find((r) => r.required === 'true' && r.phase !== 'anytime')!;
  return { code: row['menu-code'] ?? row.code, phases: [...new Set(steps.map((r) => r.phase))] };
}

/** Every `next` command, sent as the message with its agent, starts its workflow or skill before the model speaks. */
async function expectEveryNextStarts(id: string, j: ProjectJourney): Promise<void> {
  expect(j.next.length).toBeGreaterThan(0);
  for (const step of j.next) {
    h.model.reset();
    h.model.setScript([reply.text('Following it.')]);
    const { status, body } = await send({ projectId: id, agentId: step.agentId, message: step.command });
    const call = body.data?.message?.functionCalls?.[0];
    expect({ step: step.command, status, name: call?.name, ok: call?.result?.ok }).toEqual({ step: step.command, status: 200, name: 'execute_workflow', ok: true });
    expect(h.model.chatRequests()).toHaveLength(1);
  }
}

describe.each(RELEASES)('the journey of a real $release install', (r) => {
  it("is all not-started when fresh, with the catalog's first required command next and its phases in the catalog's own ids", async () => {
    const j = await journey(r.id);
    const expected = await firstRequired(r.id);
    expect(j.phases.map((p) => p.id).sort()).toEqual([...expected.phases].sort());
    expect(j.phases.every((p) => p.status === 'not-started' && p.documents.length === 0)).toBe(true);
    expect(j.next[0]).toMatchObject({ agentId: r.pm, command: `*${expected.code}`, required: true });
    expect(j.next[0].why).toMatch(/^Required next in /);
    // The optional step the catalog puts before it: the analyst's brief.
    expect(j.next.slice(1)).toContainEqual(expect.objectContaining({ agentId: r.analyst, command: r.brief, required: false }));
    expect(j.help).toEqual({ command: '*bmad-help' });
    await expectEveryNextStarts(r.id, j);
  });

  it("after the analyst's brief command writes a brief: its phase is done or started and next is the PM's PRD command", async () => {
    h.model.reset();
    h.model.setScript(journeyModel({ reads: null, writes: r.briefPath, text: '# Product brief\n\nPlants, delivered.\n' }));
    const { status } = await send({ projectId: r.id, agentId: r.analyst, message: r.brief });
    expect(status).toBe(200);
    const j = await journey(r.id);
    const withBrief = j.phases.filter((p) => p.documents.length);
    expect(withBrief).toHaveLength(1);
    expect(withBrief[0]).toMatchObject({ status: r.briefPhase, documents: [{ kind: 'product brief', status: 'done' }] });
    expect(withBrief[0].documents[0].path).toMatch(/^_bmad-output\/planning-artifacts\/.*brief.*\.md$/);
    expect(j.next[0]).toMatchObject({ agentId: r.pm, required: true });
    expect(j.next[0].command).toMatch(/^\*(CP|PRD)$/);
    expect(j.next.some((n) => n.command === r.brief)).toBe(false);
    await expectEveryNextStarts(r.id, j);
  });

  it('a draft (frontmatter status: draft) is started, not done, and its step stays next', async () => {
    const prd = path.join(projectsRoot, r.id, '_bmad-output', 'planning-artifacts', r.release === '6.0.4' ? 'prd.md' : 'prds/prd-j612-2026-11-25/prd.md');
    await fs.mkdir(path.dirname(prd), { recursive: true });
    await fs.writeFile(prd, '---\nstatus: draft\n---\n# PRD\n');
    const j = await journey(r.id);
    const phase = j.phases.find((p) => p.documents.some((d) => d.kind === 'prd'));
    expect(phase).toMatchObject({ status: 'started' });
    expect(j.next[0]).toMatchObject({ agentId: r.pm, required: true });
    expect(j.next[0].why).toContain('is started');
    await fs.writeFile(prd, '---\nstatus: final\n---\n# PRD\n');
    const after = await journey(r.id);
    expect(after.next[0].command).not.toBe(j.next[0].command);
    await fs.rm(prd);
  });

  it("What next: the help runs server-side from any agent's conversation, with the journey as the server's note", async () => {
    h.model.reset();
    h.model.setScript([reply.text('You are in planning; next is the PRD.')]);
    const { status, body } = await send({ projectId: r.id, agentId: r.analyst, message: '*bmad-help' });
    expect(status).toBe(200);
    const call = body.data.message.functionCalls[0];
    expect(call).toMatchObject({ name: 'execute_workflow', result: { ok: true } });
    expect(call.arguments.workflow_path).toMatch(r.release === '6.0.4' ? /core\/tasks\/help\.md$/ : /^skill:bmad-help$/);
    const sent = JSON.stringify(h.model.chatRequests()[0].body?.messages);
    expect(sent).toContain('Where this project stands');
    expect(sent).toContain(`with agent ${r.pm}`);
    // Other turns carry no journey.
    h.model.reset();
    h.model.setScript([reply.text('Hello.')]);
    await send({ projectId: r.id, agentId: r.analyst, message: 'hello' });
    expect(JSON.stringify(h.model.chatRequests()[0].body?.messages)).not.toContain('Where this project stands');
  });

  it('is 404 for an unknown project', async () => {
    const res = await getJourney(get('/api/projects/nope/journey'), params({ id: 'nope' }));
    expect(res.status).toBe(404);
  });
});

describe('a real 6.3.0 install', () => {
  it("answers from its modules' catalogs (its assembled bmad-help.csv carries an older header), and its next steps start", async () => {
    const j = await journey('j630');
    expect(j.phases.map((p) => p.id)).toEqual(['1-analysis', '2-planning', '3-solutioning', '4-implementation', 'anytime']);
    expect(j.next[0]).toMatchObject({ agentId: 'bmad-agent-pm', command: '*CP', required: true });
    await expectEveryNextStarts('j630', j);
  });
});

describe.each(SPRINT_RELEASES)('the journey of a real $release install with a sprint', (r) => {
  const artifacts = () => path.join(projectsRoot, r.id, '_bmad-output', 'implementation-artifacts');
  const sprint = (statuses: Record<string, string>) =>
    ['# generated by sprint planning', 'project: shop', 'development_status:', '  epic-1: in-progress', ...Object.entries(statuses).map(([k, v]) => `  ${k}: ${v}`), '  epic-1-retrospective: optional', ''].join('\n');

  it('keeps the implementation phase short of done while a story waits, and done once every story is', async () => {
    await fs.mkdir(artifacts(), { recursive: true });
    // Story files are written (evidence a story was made, not built), and one story is done.
    await fs.writeFile(path.join(artifacts(), '1-1-sum.md'), '# Story 1.1: Sum\n\nStatus: done\n');
    await fs.writeFile(path.join(artifacts(), '1-2-flag-from-name.md'), '# Story 1.2: flagFromName\n\nStatus: ready-for-dev\n');
    await fs.writeFile(path.join(artifacts(), 'sprint-status.yaml'), sprint({ '1-1-sum': 'done', '1-2-flag-from-name': 'ready-for-dev', '1-3-docs': 'backlog' }));
    const waiting = await journey(r.id);
    const phase = waiting.phases.find((p) => p.id === r.phase)!;
    expect(phase.status).toBe('started');
    expect(waiting.phases.map((p) => p.id)).toContain(r.phase);

    // Every story done: the phase is done, whatever the documents are.
    await fs.writeFile(path.join(artifacts(), 'sprint-status.yaml'), sprint({ '1-1-sum': 'done', '1-2-flag-from-name': 'done', '1-3-docs': 'done' }));
    const done = await journey(r.id);
    expect(done.phases.find((p) => p.id === r.phase)!.status).toBe('done');
    expect(done.next.some((n) => /of the sprint's/.test(n.why))).toBe(false);

    // A sprint of backlog stories only, with no story file: nothing built yet.
    await fs.rm(path.join(artifacts(), '1-1-sum.md'));
    await fs.rm(path.join(artifacts(), '1-2-flag-from-name.md'));
    await fs.writeFile(path.join(artifacts(), 'sprint-status.yaml'), sprint({ '1-1-sum': 'backlog' }));
    expect((await journey(r.id)).phases.find((p) => p.id === r.phase)!.status).toBe(r.unmoved);

    // A broken sprint status says nothing of the sprint: the documents decide again.
    await fs.writeFile(path.join(artifacts(), 'sprint-status.yaml'), 'development_status: [\n');
    expect((await journey(r.id)).phases.find((p) => p.id === r.phase)!.status).toBe(r.unmoved);
  });
});
