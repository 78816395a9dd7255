import fs from 'node:fs/promises';
import path from 'node:path';
import { GET as getBoard } from '@/app/api/projects/[id]/board/route';
import { PATCH as moveStory } from '@/app/api/projects/[id]/board/stories/[key]/route';
import { POST as startStory } from '@/app/api/projects/[id]/board/stories/[key]/start/route';
import { PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { GET as listWorkspaces } from '@/app/api/projects/[id]/workspaces/route';
import { POST as mergeWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/merge/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { POST as createRun } from '@/app/api/runs/route';
import { POST as answerRun } from '@/app/api/runs/[id]/answer/route';
import { GET as getBudget, PUT as putBudget } from '@/app/api/projects/[id]/budget/route';
import { reply, type ChatMessage, type ChatRequestBody, type Reply } from '../scripted-model';
import { openSourceRepo, type OpenSourceRepo } from '../open-source-repo';
import { sh } from '../git-repo';
import { params, startHarness, type Harness } from './harness';

/**
 * The sprint board on a real project (minimist, from the npm registry) with BMAD 6.12 installed
 * by BMAD's own installer, a sprint status with comments and two story files committed on
 * `main`. Stories are started from the board and built by BMAD's `bmad-build-auto` run headless
 * in workspaces of their own; the scripted model writes what the skill writes (the story's spec
 * with its status, and the workspace's own edit of sprint-status.yaml).
 */
jest.setTimeout(300_000);

const ARTIFACTS = '_bmad-output/implementation-artifacts';
const STATUS_PATH = `${ARTIFACTS}/sprint-status.yaml`;
const SPRINT = `# generated: 2026-11-20
# project: minimist
# STATUS DEFINITIONS: backlog → ready-for-dev → in-progress → review → done

generated: 2026-11-20
project: minimist
tracking_system: file-system
story_location: "{project-root}/_bmad-output/implementation-artifacts"

development_status:
  # Epic 1: numbers and flags
  epic-1: in-progress
  1-1-negative-numbers: ready-for-dev # after a long flag
  1-2-boolean-aliases: ready-for-dev
  1-3-help-text: backlog
  epic-1-retrospective: optional
`;
const STORY = (n: string, title: string) => `# Story ${n}: ${title}

Status: ready-for-dev

## Story

As a CLI author, I want ${title.toLowerCase()}, so that my users are not surprised.
`;

let h: Harness;
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

async function answer(res: Response): Promise<{ status: number; body: any; text: string }> {
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

const board = (who: Who) => getBoard(req('GET', `/api/projects/${id}/board`, who), params({ id })).then(answer);
const start = (who: Who, key: string, body?: unknown) => startStory(req('POST', `/api/projects/${id}/board/stories/${key}/start`, who, body), params({ id, key })).then(answer);
const move = (who: Who, key: string, status: unknown) => moveStory(req('PATCH', `/api/projects/${id}/board/stories/${key}`, who, { status }), params({ id, key })).then(answer);
const merge = (who: Who, wid: string) => mergeWorkspace(req('POST', `/api/projects/${id}/workspaces/${wid}/merge`, who), params({ id, wid })).then(answer);
const runOf = (who: Who, rid: string) => getRun(req('GET', `/api/runs/${rid}`, who), params({ id: rid })).then(answer);
const workspaces = (who: Who) => listWorkspaces(req('GET', `/api/projects/${id}/workspaces`, who), params({ id })).then(answer);

const baseFile = () => sh(repo.root, ['show', `main:${STATUS_PATH}`]);
const baseHead = () => sh(repo.root, ['rev-parse', 'main']).trim();
const statusIn = (text: string, key: string) => new RegExp(`^  ${key}: ([a-z-]+)`, 'm').exec(text)?.[1];

/** Waits until `ok` holds, polling. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A gate the scripted model waits at, opened by the test. */
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

/** The story the run builds, from its first message. */
function storyOf(body: ChatRequestBody): string | null {
  const first = (body.messages ?? []).find((m: ChatMessage) => m.role === 'user' && /Story: \d+-\d+-/.test(textOf(m.content)));
  return first ? /Story: (\d+-\d+-[a-z0-9-]+)/.exec(textOf(first.content))![1]! : null;
}

/** Tool calls the model made so far (all turns of the conversation), by name and file. */
function calls(body: ChatRequestBody): { name: string; args: Record<string, any> }[] {
  return (body.messages ?? []).flatMap((m) => (m.tool_calls ?? []).map((c) => ({ name: c.function?.name ?? '', args: JSON.parse(c.function?.arguments || '{}') })));
}

const SLUGS: Record<string, string> = { '1-1-negative-numbers': 'negative-numbers', '1-2-boolean-aliases': 'boolean-aliases' };

/**
 * What bmad-build-auto does, in its outline: read the story, write its spec with the final status
 * and the Auto Run Result, mark the story done in the workspace's own sprint-status.yaml (the
 * line next to the other story's: merged as text, the two would conflict), then end.
 */
function buildAuto(gates: { started: ReturnType<typeof gate>; finishing: ReturnType<typeof gate> }) {
  return async ({ body }: { body: ChatRequestBody }): Promise<Reply> => {
    const key = storyOf(body);
    if (!key) return reply.text('HALT: no story in the first message');
    const made = calls(body);
    const has = (name: string, file: string) => made.some((c) => c.name === name && String(c.args.file_path ?? '').includes(file));
    const number = key.split('-').slice(0, 2).join('-');
    const spec = `{project-root}/${ARTIFACTS}/spec-${number}-${SLUGS[key]}.md`;
    if (!has('read_file', `${key}.md`)) {
      await gates.started.wait();
      return reply.toolCalls([{ name: 'read_file', arguments: { file_path: `{project-root}/${ARTIFACTS}/${key}.md` } }]);
    }
    if (!has('save_output', `spec-${number}-`)) {
      const content = `---\ntitle: ${key}\nstatus: done\n---\n\n# ${key}\n\n## Auto Run Result\n\nStatus: done\nBlocking condition: none\n`;
      return reply.toolCalls([{ name: 'save_output', arguments: { file_path: spec, content } }]);
    }
    if (!has('edit_file', 'sprint-status.yaml')) {
      return reply.toolCalls([
        { name: 'edit_file', arguments: { file_path: `{project-root}/${STATUS_PATH}`, old_text: `  ${key}: ${key === '1-1-negative-numbers' ? 'ready-for-dev # after a long flag' : 'ready-for-dev'}\n`, new_text: `  ${key}: done${key === '1-1-negative-numbers' ? ' # after a long flag' : ''}\n` } },
      ]);
    }
    await gates.finishing.wait();
    return reply.text(`Story ${key} is implemented and reviewed; its spec says done.`);
  };
}

beforeAll(async () => {
  repo = await openSourceRepo({ name: 'minimist' });
  id = path.basename(repo.root);
  await fs.mkdir(path.join(repo.root, ARTIFACTS), { recursive: true });
  await fs.writeFile(path.join(repo.root, STATUS_PATH), SPRINT);
  await fs.writeFile(path.join(repo.root, ARTIFACTS, '1-1-negative-numbers.md'), STORY('1.1', 'Negative numbers after a long flag'));
  await fs.writeFile(path.join(repo.root, ARTIFACTS, '1-2-boolean-aliases.md'), STORY('1.2', 'Aliases of boolean flags'));
  sh(repo.root, ['add', '-A']);
  sh(repo.root, ['commit', '-q', '-m', 'Sprint planning']);
  h = await startHarness({ PROJECTS_ROOT: repo.parent }, { store: 'sqlite', auth: {} });
  const accounts = h.runtime.accounts!;
  const admin = await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const person = (name: string) => accounts.createPerson({ email: `${name}@example.com`, name: name[0]!.toUpperCase() + name.slice(1), password: `${name}-password-1`, role: 'member' });
  const [ed, vic, bob] = [await person('ed'), await person('vic'), await person('bob')];
  await accounts.setMember(id, admin.id, 'owner');
  await accounts.setMember(id, ed.id, 'editor');
  await accounts.setMember(id, vic.id, 'viewer');
  for (const [who, p] of [['ed', ed], ['vic', vic], ['bob', bob]] as const) tokens[who] = (await accounts.createToken(p.id, { name: 't' })).token;
  tokens.admin = (await accounts.createToken(admin.id, { name: 't' })).token;
}, 240_000);

afterAll(async () => {
  await h?.close();
  if (repo) await fs.rm(repo.parent, { recursive: true, force: true });
});

describe('the sprint board', () => {
  it('reads the base branch sprint status with its comments: epics, stories, titles from the story files', async () => {
    const a = await board('vic');
    expect(a.status).toBe(200);
    expect(a.body.data.source).toEqual({ path: STATUS_PATH, branch: 'main', commit: baseHead() });
    expect(a.body.data.epics).toEqual([
      {
        key: 'epic-1',
        status: 'in-progress',
        retrospective: 'optional',
        stories: [
          { key: '1-1-negative-numbers', title: 'Negative numbers after a long flag', status: 'ready-for-dev', file: `${ARTIFACTS}/1-1-negative-numbers.md` },
          { key: '1-2-boolean-aliases', title: 'Aliases of boolean flags', status: 'ready-for-dev', file: `${ARTIFACTS}/1-2-boolean-aliases.md` },
          { key: '1-3-help-text', title: 'Help text', status: 'backlog', file: null },
        ],
      },
    ]);
    expect(a.body.data.decisions).toEqual([]);
    expect(a.text).not.toContain(repo.parent);
    expect((await board('bob')).status).toBe(404);
  });

  it('refuses a start while build is off (409), making nothing', async () => {
    const head = baseHead();
    const a = await start('ed', '1-1-negative-numbers');
    expect([a.status, a.body.code]).toEqual([409, 'E_BUILD_DISABLED']);
    expect(baseHead()).toBe(head);
    const put = await putBuild(req('PUT', `/api/projects/${id}/build`, 'admin', { enabled: true }), params({ id })).then(answer);
    expect(put.status).toBe(200);
  });

  const gates = { started: gate(), finishing: gate() };
  const started: Record<string, { runId: string; workspace: { id: string; branch: string } }> = {};

  it('starts two stories together: each in its own workspace, both in-progress at once, both running at the same time', async () => {
    h.model.reset();
    h.model.setScript(buildAuto(gates));
    const [a, b] = await Promise.all([start('ed', '1-1-negative-numbers', { inputs: 'Keep the change small.' }), start('ed', '1-2-boolean-aliases')]);
    expect([a.status, b.status]).toEqual([202, 202]);
    started['1-1-negative-numbers'] = a.body.data;
    started['1-2-boolean-aliases'] = b.body.data;
    expect(a.body.data.workspace.branch).toBe('bmad/1-1-negative-numbers');
    expect(b.body.data.workspace.branch).toBe('bmad/1-2-boolean-aliases');
    // In the base file at once, each key only, comments kept.
    const text = baseFile();
    expect(statusIn(text, '1-1-negative-numbers')).toBe('in-progress');
    expect(statusIn(text, '1-2-boolean-aliases')).toBe('in-progress');
    expect(text).toBe(SPRINT.replace('1-1-negative-numbers: ready-for-dev', '1-1-negative-numbers: in-progress').replace('1-2-boolean-aliases: ready-for-dev', '1-2-boolean-aliases: in-progress'));
    expect(sh(repo.root, ['log', '-2', '--format=%an|%s', 'main']).trim().split('\n').sort()).toEqual([
      'Ed|Sprint: 1-1-negative-numbers → in-progress (by Ed)',
      'Ed|Sprint: 1-2-boolean-aliases → in-progress (by Ed)',
    ]);
    // The project folder's checkout followed.
    expect(await fs.readFile(path.join(repo.root, STATUS_PATH), 'utf8')).toBe(text);
    // Both runs reach the model before either goes on: they run at the same time.
    await until(async () => gates.started.reached, (n) => n >= 2, 60_000);
    expect(gates.started.reached).toBe(2);
    const runs = await Promise.all([runOf('ed', a.body.data.runId), runOf('ed', b.body.data.runId)]);
    expect(runs.map((r) => r.body.data.status)).toEqual(['running', 'running']);
    // The first message carries the story, its file and the inputs.
    const first = h.model.chatRequests().map((r) => (r.body as ChatRequestBody).messages ?? []).flat().find((m: ChatMessage) => m.role === 'user' && textOf(m.content).includes('Story: 1-1-negative-numbers'));
    expect(textOf(first?.content)).toContain(`${ARTIFACTS}/1-1-negative-numbers.md`);
    expect(textOf(first?.content)).toContain('Keep the change small.');
    const shown = await board('vic');
    const stories = shown.body.data.epics[0].stories;
    expect(stories[0]).toMatchObject({ status: 'in-progress', run: { id: a.body.data.runId, status: 'running' }, workspace: { id: a.body.data.workspace.id, branch: 'bmad/1-1-negative-numbers', status: 'open' } });
    expect(stories[1]).toMatchObject({ status: 'in-progress', run: { id: b.body.data.runId, status: 'running' } });
    gates.started.open();
  });

  it('refuses an unknown story (404), a busy one (409), a viewer (403) and a stranger (404), changing nothing', async () => {
    const head = baseHead();
    const before = (await workspaces('ed')).body.data.length;
    const unknown = await start('ed', '9-9-nothing');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'E_STORY_NOT_FOUND']);
    const busy = await start('ed', '1-1-negative-numbers');
    expect([busy.status, busy.body.code]).toEqual([409, 'E_STORY_BUSY']);
    expect((await start('vic', '1-3-help-text')).status).toBe(403);
    expect((await start('bob', '1-3-help-text')).status).toBe(404);
    const viewer = await move('vic', '1-3-help-text', 'ready-for-dev');
    expect([viewer.status, viewer.body.code]).toEqual([403, 'E_FORBIDDEN']);
    const stranger = await move('bob', '1-3-help-text', 'ready-for-dev');
    expect([stranger.status, stranger.body.code]).toEqual([404, 'E_PROJECT_NOT_FOUND']);
    expect((await move('ed', '9-9-nothing', 'done')).status).toBe(404);
    const bad = await move('ed', '1-3-help-text', 'finished');
    expect([bad.status, bad.body.code]).toEqual([400, 'E_VALIDATION']);
    expect(baseHead()).toBe(head);
    expect((await workspaces('ed')).body.data.length).toBe(before);
    expect((await h.runtime.runs.store.storyRuns(id)).length).toBe(2);
  });

  it("keeps a person's move and the runs' changes made at the same moment; both runs complete, their stories in review", async () => {
    await until(async () => gates.finishing.reached, (n) => n >= 2, 60_000);
    expect(gates.finishing.reached).toBe(2);
    const moved = move('ed', '1-3-help-text', 'ready-for-dev');
    gates.finishing.open();
    const m = await moved;
    expect(m.status).toBe(200);
    expect(m.body.data).toMatchObject({ key: '1-3-help-text', status: 'ready-for-dev' });
    const ids = Object.values(started).map((s) => s.runId);
    const ended = await Promise.all(ids.map((rid) => until(() => runOf('ed', rid), (r) => !['queued', 'running'].includes(r.body.data.status))));
    for (const r of ended) {
      expect(r.body.data.status).toBe('complete');
      expect(r.body.data.result).toMatchObject({ status: 'complete', storyStatus: 'done' });
    }
    expect(ended[0]!.body.data.result.file).toBe(`${ARTIFACTS}/spec-1-1-negative-numbers.md`);
    const text = baseFile();
    expect([statusIn(text, '1-1-negative-numbers'), statusIn(text, '1-2-boolean-aliases'), statusIn(text, '1-3-help-text')]).toEqual(['review', 'review', 'ready-for-dev']);
    expect(text).toContain('# Epic 1: numbers and flags\n');
    expect(text).toContain('1-1-negative-numbers: review # after a long flag\n');
    const log = sh(repo.root, ['log', '-3', '--format=%s', 'main']).trim().split('\n').sort();
    expect(log).toEqual([
      'Sprint: 1-1-negative-numbers → review (by run ' + started['1-1-negative-numbers']!.runId + ' for Ed)',
      'Sprint: 1-2-boolean-aliases → review (by run ' + started['1-2-boolean-aliases']!.runId + ' for Ed)',
      'Sprint: 1-3-help-text → ready-for-dev (by Ed)',
    ].sort());
  });

  it('merges both workspaces without a conflict on the sprint status; each story is done', async () => {
    for (const key of ['1-1-negative-numbers', '1-2-boolean-aliases']) {
      const ws = started[key]!.workspace;
      // The workspace's own edit of the file is there, on its branch.
      expect(statusIn(sh(repo.root, ['show', `${ws.branch}:${STATUS_PATH}`]), key)).toBe('done');
      // The run's commits are titled after its story.
      const title = ((await board('vic')).body.data.epics[0].stories as { key: string; title: string }[]).find((s) => s.key === key)!.title;
      const subjects = sh(repo.root, ['log', '--format=%s', `main..${ws.branch}`]).trim().split('\n');
      expect(subjects.some((s) => s.startsWith(`Story ${key.split('-').slice(0, 2).join('-')}: ${title} — `))).toBe(true);
      const m = await merge('ed', ws.id);
      expect(m.status).toBe(200);
      expect(m.body.data.workspace.status).toBe('merged');
    }
    const text = baseFile();
    expect([statusIn(text, '1-1-negative-numbers'), statusIn(text, '1-2-boolean-aliases'), statusIn(text, '1-3-help-text')]).toEqual(['done', 'done', 'ready-for-dev']);
    expect(text).toContain('1-1-negative-numbers: done # after a long flag\n');
    expect(text.startsWith('# generated: 2026-11-20\n')).toBe(true);
    // The specs the runs wrote are in the base branch, and the project folder shows it all.
    expect(sh(repo.root, ['show', `main:${ARTIFACTS}/spec-1-2-boolean-aliases.md`])).toContain('status: done');
    // The story files follow the sprint: merged as done, they say done (they said ready-for-dev).
    for (const key of ['1-1-negative-numbers', '1-2-boolean-aliases']) expect(sh(repo.root, ['show', `main:${ARTIFACTS}/${key}.md`])).toMatch(/^Status: done$/m);
    expect(await fs.readFile(path.join(repo.root, STATUS_PATH), 'utf8')).toBe(text);
    expect(sh(repo.root, ['status', '--porcelain'])).toBe('');
    const shown = (await board('vic')).body.data.epics[0].stories;
    expect(shown[0]).toMatchObject({ status: 'done', run: { status: 'complete' }, workspace: { status: 'merged' } });
    expect(shown[0].spend.tokens).toBeGreaterThan(0);
  });
});

describe('a story whose build stops', () => {
  /**
   * Story 1-3 has no story file: the first run asks a question (answered by the server with the
   * unattended rule), then halts as bmad-build-auto halts, blocked with its blocking condition in
   * a result file. The second run completes and changes README.md's first line, which the base
   * branch changes too meanwhile: its merge conflicts and the story stays in review.
   */
  const KEY = '1-3-help-text';
  const README_LINE = (head: string) => head.split('\n')[0]!;

  it('a question is answered by the server, then a halt with a blocking condition ends the run blocked with that reason', async () => {
    h.model.reset();
    h.model.setScript(async ({ body }) => {
      const made = calls(body);
      const users = (body.messages ?? []).filter((m) => m.role === 'user').length;
      if (users === 1) return reply.text('The story has no file. Should I write the help text from the README?');
      if (!made.some((c) => c.name === 'save_output')) {
        const content = '---\nstatus: blocked\n---\n\n# BMad Build Auto Result\n\nStatus: blocked\nBlocking condition: no epic spec found\n';
        return reply.toolCalls([{ name: 'save_output', arguments: { file_path: `{project-root}/${ARTIFACTS}/bmad-build-auto-result-1-3-help-text.md`, content } }]);
      }
      return reply.text('HALT: blocked, no epic spec found.');
    });
    const s = await start('ed', KEY);
    expect(s.status).toBe(202);
    expect(s.body.data.workspace.branch).toBe(`bmad/${KEY}`);
    expect(statusIn(baseFile(), KEY)).toBe('in-progress');
    const r = await until(() => runOf('ed', s.body.data.runId), (x) => !['queued', 'running'].includes(x.body.data.status));
    expect(r.body.data).toMatchObject({ status: 'blocked', answers: 1, result: { status: 'blocked', reason: 'no epic spec found', story: KEY } });
    // The answer the run was given is the unattended rule, not the JSON contract of headless skills.
    const second = (h.model.chatRequests().at(-1)!.body as ChatRequestBody).messages!.filter((m) => m.role === 'user')[1];
    expect(textOf(second?.content)).toContain('Unattended run');
    // Blocked is not review: the story stays where the start put it.
    expect(statusIn(baseFile(), KEY)).toBe('in-progress');
  });

  it('the blocked run waits on the board as a decision; an editor answers it, and it goes on in its workspace to review', async () => {
    const run = (await board('vic')).body.data.epics[0].stories[2].run;
    const blocked = (await runOf('ed', run.id)).body.data;
    expect(blocked.status).toBe('blocked');
    expect((await board('vic')).body.data.decisions).toEqual([{ runId: run.id, storyKey: KEY, kind: 'blocked', text: 'no epic spec found', since: blocked.endedAt }]);
    const ANSWER = 'There is no epic spec: write the help text from the README and put the story in review.';
    h.model.reset();
    h.model.setScript(async ({ body }) => {
      const users = (body.messages ?? []).filter((m) => m.role === 'user');
      if (!textOf(users.at(-1)?.content).includes(ANSWER)) return reply.text('HALT: the answer never came.');
      const wrote = (body.messages ?? []).slice((body.messages ?? []).lastIndexOf(users.at(-1)!)).some((m) => m.role === 'tool');
      if (!wrote) return reply.toolCalls([{ name: 'save_output', arguments: { file_path: `{project-root}/${ARTIFACTS}/spec-1-3-help-text.md`, content: '---\nstatus: review\n---\n\n# Help text, from the README\n' } }]);
      return reply.text('Done: the spec is in review.');
    });
    const viewer = await answerRun(req('POST', `/api/runs/${run.id}/answer`, 'vic', { text: ANSWER }), params({ id: run.id })).then(answer);
    expect([viewer.status, viewer.body.code]).toEqual([403, 'E_FORBIDDEN']);
    const answered = await answerRun(req('POST', `/api/runs/${run.id}/answer`, 'ed', { text: ANSWER }), params({ id: run.id })).then(answer);
    expect([answered.status, answered.body.data.status]).toEqual([202, 'queued']);
    const r = await until(() => runOf('ed', run.id), (x) => !['queued', 'running'].includes(x.body.data.status));
    expect(r.body.data).toMatchObject({ status: 'complete', conversationId: blocked.conversationId, result: { story: KEY, storyStatus: 'review' } });
    // In its own workspace: the spec is on its branch, not on the base's.
    expect(sh(repo.root, ['show', `bmad/${KEY}:${ARTIFACTS}/spec-1-3-help-text.md`])).toContain('Help text, from the README');
    expect(statusIn(baseFile(), KEY)).toBe('review');
    expect((await board('vic')).body.data.decisions).toEqual([]);
  });

  it('a second start makes a workspace with a suffixed name; a merge that conflicts leaves the story in review with the paths', async () => {
    h.model.reset();
    h.model.setScript(async ({ body }) => {
      const made = calls(body);
      if (!made.some((c) => c.name === 'save_output')) {
        return reply.toolCalls([
          { name: 'save_output', arguments: { file_path: `{project-root}/${ARTIFACTS}/spec-1-3-help-text.md`, content: '---\nstatus: review\n---\n\n# Help text\n' } },
          { name: 'save_output', arguments: { file_path: '{project-root}/README.md', content: `# minimist, with help text\n${sh(repo.root, ['show', 'main:README.md']).split('\n').slice(1).join('\n')}` } },
        ]);
      }
      return reply.text('Done: the spec is in review.');
    });
    const s = await start('ed', KEY, { skill: 'bmad-build-auto' });
    expect(s.status).toBe(202);
    expect(s.body.data.workspace.branch).toBe(`bmad/${KEY}-2`);
    const r = await until(() => runOf('ed', s.body.data.runId), (x) => !['queued', 'running'].includes(x.body.data.status));
    expect(r.body.data).toMatchObject({ status: 'complete', result: { storyStatus: 'review' } });
    expect(statusIn(baseFile(), KEY)).toBe('review');
    // The base changes the same line meanwhile.
    const readme = await fs.readFile(path.join(repo.root, 'README.md'), 'utf8');
    await fs.writeFile(path.join(repo.root, 'README.md'), `# minimist (upstream)\n${readme.split('\n').slice(1).join('\n')}`);
    sh(repo.root, ['commit', '-q', '-am', 'Retitle the README']);
    const head = baseHead();
    const m = await merge('ed', s.body.data.workspace.id);
    expect([m.status, m.body.code, m.body.paths]).toEqual([409, 'E_MERGE_CONFLICT', ['README.md']]);
    expect(statusIn(baseFile(), KEY)).toBe('review');
    expect(baseHead()).toBe(head);
    expect(README_LINE(sh(repo.root, ['show', 'main:README.md']))).toBe('# minimist (upstream)');
    const story = (await board('vic')).body.data.epics[0].stories[2];
    expect(story).toMatchObject({ key: KEY, status: 'review', run: { id: s.body.data.runId, status: 'complete' }, workspace: { branch: `bmad/${KEY}-2`, status: 'open' } });
  });
});

describe('a build skill through POST /api/runs', () => {
  it('needs a story named in its inputs (400 otherwise, nothing queued); with one, it is judged by the story files like a board run', async () => {
    const before = (await h.runtime.runs.store.list({ projectId: id })).length;
    const none = await answer(await createRun(req('POST', '/api/runs', 'ed', { projectId: id, skill: 'bmad-build-auto', inputs: 'Build something nice.' })));
    expect([none.status, none.body.code, none.body.field]).toEqual([400, 'E_VALIDATION', 'inputs']);
    expect((await h.runtime.runs.store.list({ projectId: id })).length).toBe(before);
    h.model.reset();
    h.model.setScript(async ({ body }) => {
      if (!calls(body).some((c) => c.name === 'save_output')) {
        const content = '---\nstatus: done\n---\n\n# Aliases of boolean flags, again\n';
        return reply.toolCalls([{ name: 'save_output', arguments: { file_path: `{project-root}/${ARTIFACTS}/spec-1-2-boolean-aliases.md`, content } }]);
      }
      return reply.text('Done.');
    });
    const made = await answer(await createRun(req('POST', '/api/runs', 'ed', { projectId: id, skill: 'bmad-build-auto', inputs: 'Rebuild story 1-2-boolean-aliases.', workspace: { name: 'api-build' } })));
    expect(made.status).toBe(202);
    const r = await until(() => runOf('ed', made.body.data.runId), (x) => !['queued', 'running'].includes(x.body.data.status));
    expect(r.body.data).toMatchObject({ status: 'complete', result: { story: '1-2-boolean-aliases', storyStatus: 'done' } });
    expect(statusIn(baseFile(), '1-2-boolean-aliases')).toBe('review');
    const story = (await board('vic')).body.data.epics[0].stories[1];
    expect(story).toMatchObject({ status: 'review', run: { id: made.body.data.runId, status: 'complete' }, workspace: { branch: 'bmad/api-build' } });
  });
});

describe("a project's monthly budget", () => {
  it('refuses a story start on a spent project with 402, before anything is made; a story run takes its own budget', async () => {
    const put = (value: unknown) => putBudget(req('PUT', `/api/projects/${id}/budget`, 'admin', value), params({ id })).then(answer);
    const spent = (await getBudget(req('GET', `/api/projects/${id}/budget`, 'vic'), params({ id })).then(answer)).body.data.spent.tokens;
    expect(spent).toBeGreaterThan(0);
    expect((await put({ monthlyTokens: spent })).status).toBe(200);
    const head = baseHead();
    const before = (await workspaces('ed')).body.data.length;
    const runs = (await h.runtime.runs.store.list({ projectId: id })).length;
    const refused = await start('ed', '1-3-help-text');
    expect([refused.status, refused.body.code]).toEqual([402, 'E_BUDGET']);
    expect(baseHead()).toBe(head);
    expect((await workspaces('ed')).body.data.length).toBe(before);
    expect((await h.runtime.runs.store.list({ projectId: id })).length).toBe(runs);
    expect((await put({ monthlyTokens: null })).status).toBe(200);

    const bad = await start('ed', '1-3-help-text', { budget: { tokens: -1 } });
    expect([bad.status, bad.body.code, bad.body.field]).toEqual([400, 'E_VALIDATION', 'budget.tokens']);
    h.model.reset();
    h.model.setScript(() => reply.toolCalls([{ name: 'read_file', arguments: { file_path: `{project-root}/${STATUS_PATH}` } }], { usage: { prompt_tokens: 400, completion_tokens: 100 } }));
    const s = await start('ed', '1-3-help-text', { budget: { tokens: 1000 } });
    expect(s.status).toBe(202);
    const r = await until(() => runOf('ed', s.body.data.runId), (x) => !['queued', 'running'].includes(x.body.data.status));
    expect(r.body.data).toMatchObject({ status: 'blocked', budget: { tokens: 1000 }, result: { reason: 'E_BUDGET', budget: 'run' } });
    expect(h.model.chatRequests()).toHaveLength(2);
    expect((await board('vic')).body.data.decisions[0]).toMatchObject({ runId: s.body.data.runId, storyKey: '1-3-help-text', kind: 'blocked' });
  });
});
