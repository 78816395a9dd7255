import fs from 'node:fs/promises';
import path from 'node:path';
import { GET as getAutopilot, PUT as putAutopilot } from '@/app/api/projects/[id]/autopilot/route';
import { POST as decide } from '@/app/api/projects/[id]/autopilot/decisions/[did]/route';
import { PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { PUT as putBudget } from '@/app/api/projects/[id]/budget/route';
import { GET as getBoard } from '@/app/api/projects/[id]/board/route';
import { createRuntime, setRuntime } from '@/lib/engine/runtime';
import { ACTIVE_STEPS } from '@/lib/engine/autopilot';
import { startAutopilot } from '@/lib/services';
import { reply, startScriptedModel, type ChatMessage, type ChatRequestBody, type Reply, type ScriptedModel } from '../scripted-model';
import { openSourceRepo, type OpenSourceRepo } from '../open-source-repo';
import { sh } from '../git-repo';
import { params, startHarness, type Harness } from './harness';

/**
 * The sprint autopilot on a real project (minimist from the npm registry, BMAD 6.12 installed by
 * its own installer, in a real git repository): six stories in two epics and a pair that depend on
 * each other, built by `bmad-build-auto` and reviewed by `bmad-code-review` run headless in their
 * workspaces. The scripted model does what the skills do: the build writes the story's spec with
 * its status (and, for two stories, a file the project's tests count), the review writes its
 * findings and the status it decides. The test gate is a shell line run in the command sandbox on
 * the merge result.
 */
jest.setTimeout(300_000);

const ARTIFACTS = '_bmad-output/implementation-artifacts';
const STATUS_PATH = `${ARTIFACTS}/sprint-status.yaml`;
const SPRINT = `# generated: 2026-11-20
generated: 2026-11-20
project: minimist
tracking_system: file-system
story_location: "{project-root}/_bmad-output/implementation-artifacts"

development_status:
  epic-1: in-progress
  1-1-alpha: ready-for-dev
  1-2-beta: ready-for-dev
  1-3-gamma: ready-for-dev
  epic-1-retrospective: optional
  epic-2: in-progress
  2-1-delta: ready-for-dev
  2-2-epsilon: ready-for-dev
  2-3-zeta: ready-for-dev
  epic-2-retrospective: optional
  epic-3: backlog
  3-1-loop-a: ready-for-dev
  3-2-loop-b: ready-for-dev
`;
const STORIES = ['1-1-alpha', '1-2-beta', '1-3-gamma', '2-1-delta', '2-2-epsilon', '2-3-zeta'];
/** Each writes a file into `flags/`; the project's tests allow one: alone each passes, merged together they fail. */
const FLAGGED = new Set(['1-3-gamma', '2-3-zeta']);
const AFTER: Record<string, string[]> = { '2-2-epsilon': ['1-1-alpha'], '3-1-loop-a': ['3-2-loop-b'], '3-2-loop-b': ['3-1-loop-a'] };
const TEST_LINE = 'n=$(ls flags 2>/dev/null | wc -l); if [ "$n" -gt 1 ]; then echo "too many flags: $n"; exit 1; fi; echo "flags ok: $n"';

let h: Harness;
let model: ScriptedModel;
let repo: OpenSourceRepo;
let id: string;
const tokens: Record<string, string> = {};
type Who = 'admin' | 'ed' | 'vic' | 'bob';

const req = (method: string, url: string, who: Who, body?: unknown) =>
  new Request(`http://localhost${url}`, {
    method,
    headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

async function answer(res: Response): Promise<{ status: number; body: any }> {
  return { status: res.status, body: JSON.parse(await res.text()) };
}

const view = (who: Who) => getAutopilot(req('GET', `/api/projects/${id}/autopilot`, who), params({ id })).then(answer);
const put = (who: Who, body: unknown) => putAutopilot(req('PUT', `/api/projects/${id}/autopilot`, who, body), params({ id })).then(answer);
const budget = (who: Who, body: unknown) => putBudget(req('PUT', `/api/projects/${id}/budget`, who, body), params({ id })).then(answer);
const take = (who: Who, did: string, body: unknown) => decide(req('POST', `/api/projects/${id}/autopilot/decisions/${did}`, who, body), params({ id, did })).then(answer);

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 150_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function gate(): { wait: () => Promise<void>; open: () => void; reached: number } {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  const g = {
    reached: 0,
    wait: () => {
      g.reached++;
      return p;
    },
    open: () => open(),
  };
  return g;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

/** What a conversation is: its story, build or review, and the build's round (from its first message). */
function taskOf(body: ChatRequestBody): { key: string; kind: 'build' | 'review'; round: number } | null {
  const first = (body.messages ?? []).find((m: ChatMessage) => m.role === 'user' && /Story: \d+-\d+-/.test(textOf(m.content)));
  if (!first) return null;
  const text = textOf(first.content);
  const round = Number(/Build round (\d+)/.exec(text)?.[1] ?? 1);
  // The server starts a skill itself (its SKILL.md as the first tool result): the review's is bmad-code-review's.
  const review = (body.messages ?? []).some((m) => m.role !== 'system' && textOf(m.content).includes('bmad-code-review'));
  return { key: /Story: (\d+-\d+-[a-z0-9-]+)/.exec(text)![1]!, kind: review ? 'review' : 'build', round };
}

const madeCalls = (body: ChatRequestBody) => (body.messages ?? []).flatMap((m) => (m.tool_calls ?? []).map((c) => c.function?.name ?? ''));

const specOf = (key: string) => `{project-root}/${ARTIFACTS}/spec-${key.split('-').slice(0, 2).join('-')}-${key.split('-').slice(2).join('-')}.md`;

/** The first review of 1-1-alpha asks for changes; every other review approves. */
const asked = new Set<string>();
const restartGate = gate();

function skills() {
  return async ({ body }: { body: ChatRequestBody }): Promise<Reply> => {
    const task = taskOf(body);
    if (!task) return reply.text('HALT: no story in the first message');
    const { key, kind, round } = task;
    const made = madeCalls(body);
    if (made.includes('save_output')) return reply.text(kind === 'build' ? `Story ${key} is built.` : `Story ${key} is reviewed.`);
    // A spec written before (by the build, or the review) is read before it is replaced, as the skills do.
    if ((kind === 'review' || round > 1) && !made.includes('read_file')) return reply.toolCalls([{ name: 'read_file', arguments: { file_path: specOf(key) } }]);
    if (kind === 'build') {
      // The second round of 1-1-alpha waits here until the test has restarted the server under it.
      if (key === '1-1-alpha' && round === 2) await restartGate.wait();
      const spec = `---\ntitle: ${key}\nstatus: done\n---\n\n# ${key}\n\nBuilt in round ${round}.\n\n## Auto Run Result\n\nStatus: done\nBlocking condition: none\n`;
      const calls = [{ name: 'save_output', arguments: { file_path: specOf(key), content: spec } }];
      if (FLAGGED.has(key)) calls.push({ name: 'run_command', arguments: { command: `mkdir -p flags && echo ${key} > flags/${key}.txt` } } as never);
      return reply.toolCalls(calls);
    }
    const changes = key === '1-1-alpha' && !asked.has(key);
    if (changes) asked.add(key);
    const verdict = changes ? 'in-progress' : 'done';
    const findings = changes ? '- [ ] [Review][Patch] Negative zero is parsed as zero [index.js:42]' : '- No findings.';
    const spec = `---\ntitle: ${key}\nstatus: ${verdict}\n---\n\n# ${key}\n\n### Review Findings\n\n${findings}\n`;
    return reply.toolCalls([{ name: 'save_output', arguments: { file_path: specOf(key), content: spec } }]);
  };
}

const AUTH = { enabled: true, allowSignup: false, secret: 'test-secret-test-secret-test-secret-0123' };
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  for (const [k, v] of Object.entries({ RUNS_CONCURRENCY: '4', AUTOPILOT_TICK_MS: '200' })) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  repo = await openSourceRepo({ name: 'minimist' });
  id = path.basename(repo.root);
  await fs.mkdir(path.join(repo.root, ARTIFACTS), { recursive: true });
  await fs.writeFile(path.join(repo.root, STATUS_PATH), SPRINT);
  for (const key of [...STORIES, '3-1-loop-a', '3-2-loop-b']) {
    const head = AFTER[key] ? `---\nafter: [${AFTER[key].join(', ')}]\n---\n\n` : '';
    await fs.writeFile(path.join(repo.root, ARTIFACTS, `${key}.md`), `${head}# Story ${key}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a CLI author, I want ${key}.\n`);
  }
  sh(repo.root, ['add', '-A']);
  sh(repo.root, ['commit', '-q', '-m', 'Sprint planning']);
  model = await startScriptedModel({ script: skills() });
  const models = path.join(repo.parent, 'models.yaml');
  await fs.writeFile(models, `default: builder\nprofiles:\n  builder: { baseURL: ${model.url}, model: scripted-build, contextWindow: 65536 }\n  reviewer: { baseURL: ${model.url}, model: scripted-review, contextWindow: 65536 }\n`);
  h = await startHarness({ PROJECTS_ROOT: repo.parent, MODELS_FILE: models }, { store: 'sqlite', auth: AUTH });
  const accounts = h.runtime.accounts!;
  const admin = await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const person = (name: string) => accounts.createPerson({ email: `${name}@example.com`, name: name[0]!.toUpperCase() + name.slice(1), password: `${name}-password-1`, role: 'member' });
  const [ed, vic, bob] = [await person('ed'), await person('vic'), await person('bob')];
  await accounts.setMember(id, ed.id, 'editor');
  await accounts.setMember(id, vic.id, 'viewer');
  for (const [who, p] of [['ed', ed], ['vic', vic], ['bob', bob], ['admin', admin]] as const) tokens[who] = (await accounts.createToken(p.id, { name: 't' })).token;
  expect((await putBuild(req('PUT', `/api/projects/${id}/build`, 'admin', { enabled: true }), params({ id })).then(answer)).status).toBe(200);
}, 240_000);

afterAll(async () => {
  await h?.close();
  await model?.close();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  if (repo) await fs.rm(repo.parent, { recursive: true, force: true });
});

const statusOnMain = (key: string) => new RegExp(`^  ${key}: ([a-z-]+)`, 'm').exec(sh(repo.root, ['show', `main:${STATUS_PATH}`]))?.[1];

describe('the sprint autopilot', () => {
  let maxActive = 0;
  let maxRunning = 0;
  let sampler: NodeJS.Timeout | undefined;

  it('is read by whoever sees the project and changed by owners and admins only; a dependency cycle is reported', async () => {
    expect((await view('bob')).status).toBe(404);
    expect((await put('bob', { enabled: true })).status).toBe(404);
    expect((await put('vic', { enabled: true })).status).toBe(403);
    expect((await put('ed', { enabled: true })).status).toBe(403);
    const v = await view('vic');
    expect(v.status).toBe(200);
    expect(v.body.data).toMatchObject({ enabled: false, maxParallel: 2, order: 'epic', maxReviewRounds: 2, testCommand: null, merge: { onRed: 'decide' }, running: 0, paused: null, decisions: [] });
    expect(v.body.data.problems).toEqual([{ kind: 'cycle', stories: expect.arrayContaining(['3-1-loop-a', '3-2-loop-b']), text: expect.stringContaining('cycle') }]);
    expect((await put('admin', { reviewModel: 'nope' })).status).toBe(400);
    expect((await put('admin', { maxParallel: 0 })).status).toBe(400);
  });

  it("pauses on a spent per-person budget before starting anything, and goes on once it is retried", async () => {
    // The project's limit for each person: none left for anyone this month (the real budgets, as the runtime wires them).
    expect((await budget('admin', { perPerson: { monthlyTokens: 0 } })).status).toBe(200);
    const on = await put('admin', { enabled: true, maxParallel: 2, reviewModel: 'reviewer', testCommand: TEST_LINE });
    expect(on.status).toBe(200);
    expect(on.body.data.enabledBy).toMatchObject({ name: 'Admin' });
    const paused = await until(() => view('vic'), (v) => v.body.data.paused !== null && v.body.data.decisions.length > 0, 20_000);
    expect(paused.body.data.paused.reason).toContain('budget per person in this project is spent');
    expect(paused.body.data.decisions).toEqual([expect.objectContaining({ kind: 'budget', storyKey: null, actions: ['retry', 'stop'] })]);
    expect(paused.body.data.running).toBe(0);
    expect(await h.runtime.runs.store.storyRuns(id)).toEqual([]);
    // A viewer may not take it; the project's editors and owners may.
    expect((await take('vic', paused.body.data.decisions[0].id, { action: 'retry' })).status).toBe(403);
    expect((await budget('admin', { perPerson: { monthlyTokens: null } })).status).toBe(200);
    sampler = setInterval(() => {
      void (async () => {
        const rows = await h.runtime.autopilot.store.stories(id).catch(() => []);
        maxActive = Math.max(maxActive, rows.filter((r) => ACTIVE_STEPS.has(r.step)).length);
        const runs = await h.runtime.runs.store.storyRuns(id).catch(() => []);
        maxRunning = Math.max(maxRunning, new Set(runs.filter((r) => r.status === 'running' || r.status === 'queued').map((r) => r.storyKey)).size);
      })();
    }, 50);
    const retried = await take('ed', paused.body.data.decisions[0].id, { action: 'retry' });
    expect(retried.status).toBe(200);
    expect(retried.body.data.paused).toBeNull();
    expect((await take('ed', paused.body.data.decisions[0].id, { action: 'retry' })).status).toBe(409);
  });

  it('goes on after a restart of the server mid-sprint (a new runtime over the same database) without a duplicate run', async () => {
    // 1-1-alpha's second round is under way (the review asked for changes) and 2-1-delta merged.
    await until(async () => restartGate.reached, (n) => n >= 1);
    expect(restartGate.reached).toBe(1);
    await until(() => view('vic'), (v) => v.body.data.stories['2-1-delta']?.step === 'merged');
    const before = await view('vic');
    expect(before.body.data.stories['1-1-alpha']).toMatchObject({ step: 'building', round: 2, note: 'The code review asked for changes.' });
    const next = createRuntime(h.config, undefined, { auth: AUTH });
    await setRuntime(next);
    h.runtime = next;
    startAutopilot();
    restartGate.open();
  });

  it('builds, reviews on the review model, tests the merge result and merges one story at a time, in dependency order, never more than maxParallel at once', async () => {
    // A story is held first and its decision written next: both are waited for.
    const end = await until(
      () => view('vic'),
      (v) =>
        Object.values(v.body.data.stories as Record<string, { step: string }>).filter((s) => s.step === 'merged').length === 5 &&
        Object.values(v.body.data.stories as Record<string, { step: string }>).some((s) => s.step === 'held') &&
        v.body.data.decisions.length > 0,
    );
    clearInterval(sampler);
    const steps = Object.fromEntries(Object.entries(end.body.data.stories as Record<string, { step: string }>).map(([k, s]) => [k, s.step]));
    const held = FLAGGED.has(Object.keys(steps).find((k) => steps[k] === 'held')!) ? Object.keys(steps).find((k) => steps[k] === 'held')! : null;
    expect(held).not.toBeNull();
    const mergedFlag = [...FLAGGED].find((k) => k !== held)!;
    expect(steps).toEqual({ ...Object.fromEntries(STORIES.map((k) => [k, 'merged'])), [held!]: 'held' });
    expect(maxActive).toBe(2);
    expect(maxRunning).toBeLessThanOrEqual(2);

    // The two that pass alone but not together: the second is held by the gate, main stays green.
    const decision = end.body.data.decisions.find((d: { kind: string }) => d.kind === 'test-gate');
    expect(decision).toMatchObject({ storyKey: held, actions: ['retry', 'merge-anyway', 'skip', 'stop'] });
    expect(decision.detail).toContain('too many flags: 2');
    expect(decision.detail).not.toContain(repo.parent);
    expect(sh(repo.root, ['ls-tree', '--name-only', 'main', 'flags/']).trim().split('\n')).toEqual([`flags/${mergedFlag}.txt`]);
    expect(statusOnMain(held!)).toBe('in-progress');
    for (const k of STORIES.filter((k) => k !== held)) expect(statusOnMain(k)).toBe('done');
    expect(statusOnMain('3-1-loop-a')).toBe('ready-for-dev');

    // Every story its own workspace once; its runs never overlap; one build and one review each,
    // 1-1-alpha two of each; the one run the restart cut is the only one made again.
    const runs = (await h.runtime.runs.store.storyRuns(id)).reverse();
    const workspaces = await h.runtime.workspaces.store.list(id);
    for (const key of STORIES) {
      const mine = runs.filter((r) => r.storyKey === key);
      expect(workspaces.filter((w) => w.name === key || w.name.startsWith(`${key}-`)).length).toBe(1);
      expect(new Set(mine.map((r) => r.workspaceId)).size).toBe(1);
      const kept = mine.filter((r) => r.status !== 'interrupted');
      const rounds = key === '1-1-alpha' ? 2 : 1;
      expect(kept.map((r) => r.skill)).toEqual(Array.from({ length: rounds }, () => ['bmad-build-auto', 'bmad-code-review']).flat());
      expect(kept.every((r) => r.status === 'complete')).toBe(true);
      for (let i = 1; i < mine.length; i++) expect(mine[i]!.createdAt >= mine[i - 1]!.endedAt!).toBe(true);
    }
    const cut = runs.filter((r) => r.status === 'interrupted');
    expect(cut.map((r) => [r.storyKey, r.skill])).toEqual([['1-1-alpha', 'bmad-build-auto']]);

    // Dependencies: 2-2-epsilon (after 1-1-alpha) and 1-2-beta (epic order) start only once 1-1-alpha is merged.
    const mergedAt = (key: string) => workspaces.find((w) => w.name === key)!.mergedAt!;
    const firstRun = (key: string) => runs.find((r) => r.storyKey === key)!.createdAt;
    expect(firstRun('2-2-epsilon') > mergedAt('1-1-alpha')).toBe(true);
    expect(firstRun('1-2-beta') > mergedAt('1-1-alpha')).toBe(true);
    expect(firstRun('2-3-zeta') > mergedAt('2-2-epsilon')).toBe(true);
    expect(firstRun('1-3-gamma') > mergedAt('1-2-beta')).toBe(true);

    // Reviews on the review model, builds on the builder's.
    const requests = model.chatRequests().map((r) => r.body as ChatRequestBody);
    const reviews = requests.filter((b) => taskOf(b)?.kind === 'review');
    expect(reviews.length).toBeGreaterThanOrEqual(7);
    expect(new Set(reviews.map((b) => b.model))).toEqual(new Set(['scripted-review']));
    expect(new Set(requests.filter((b) => taskOf(b)?.kind === 'build').map((b) => b.model))).toEqual(new Set(['scripted-build']));
    // The second round got the findings: its first message points at them, and the spec has them on main.
    expect(requests.some((b) => taskOf(b)?.key === '1-1-alpha' && taskOf(b)?.round === 2)).toBe(true);
    expect(sh(repo.root, ['show', `main:${ARTIFACTS}/spec-1-1-alpha.md`])).toContain('status: done');
  });

  it('takes a person\'s decision once: a skipped story leaves the pipeline; the cycle is still reported', async () => {
    const v = await view('ed');
    const decision = v.body.data.decisions.find((d: { kind: string }) => d.kind === 'test-gate');
    expect((await take('ed', decision.id, { action: 'answer', answer: 'x' })).status).toBe(400);
    const skipped = await take('ed', decision.id, { action: 'skip' });
    expect(skipped.status).toBe(200);
    expect(skipped.body.data.stories[decision.storyKey]).toMatchObject({ step: 'stopped' });
    expect(skipped.body.data.decisions).toEqual([]);
    expect(skipped.body.data.running).toBe(0);
    expect(skipped.body.data.problems.map((p: { kind: string }) => p.kind)).toEqual(['cycle']);
    expect((await take('ed', decision.id, { action: 'skip' })).status).toBe(409);
    // The board shows where the autopilot has each story.
    const board = await getBoard(req('GET', `/api/projects/${id}/board`, 'vic'), params({ id })).then(answer);
    const cards = board.body.data.epics.flatMap((e: { stories: unknown[] }) => e.stories) as { key: string; pipeline?: { step: string; round: number } }[];
    expect(cards.find((c) => c.key === '1-1-alpha')!.pipeline).toMatchObject({ step: 'merged', round: 2 });
    expect(cards.find((c) => c.key === decision.storyKey)!.pipeline).toMatchObject({ step: 'stopped' });
    expect(cards.find((c) => c.key === '3-1-loop-a')!.pipeline).toBeUndefined();
  });
});
