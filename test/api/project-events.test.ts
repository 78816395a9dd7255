import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as projectEvents } from '@/app/api/projects/[id]/events/route';
import { PATCH as moveStory } from '@/app/api/projects/[id]/board/stories/[key]/route';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { bmadProject } from '../bmad-installs';
import { sh, writeFiles } from '../git-repo';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * GET /api/projects/:id/events on a real 6.12 install in a real git repository: a client sees a
 * story move on the board and a headless run go through its statuses, as server-sent events,
 * without asking again; the stream ends when the client goes away.
 */
let h: Harness;
let projectsRoot: string;
const ARTIFACTS = '_bmad-output/implementation-artifacts';
const SPRINT = `development_status:
  epic-1: in-progress
  1-1-login: ready-for-dev
  1-2-logout: backlog
`;

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-events-'));
  const shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  sh(shop, ['init', '-q', '-b', 'main']);
  writeFiles(shop, { [`${ARTIFACTS}/sprint-status.yaml`]: SPRINT });
  sh(shop, ['add', '-A']);
  sh(shop, ['commit', '-q', '-m', 'initial']);
  // The runtime (whose run service emits) from a second copy of lib/, as next start builds it: the bus is one per process all the same.
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { separateGraph: true });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

interface Sse {
  events: { event: string; data: any }[];
  comments: string[];
  /** Resolves with the first event (from the start) that `ok` holds for. */
  until(ok: (e: { event: string; data: any }) => boolean, ms?: number): Promise<{ event: string; data: any }>;
  ended: Promise<void>;
}

/** Reads a server-sent event stream as it comes. */
function reader(res: Response): Sse {
  const events: Sse['events'] = [];
  const comments: string[] = [];
  const waiters: (() => void)[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const ended = (async () => {
    const r = res.body!.getReader();
    for (;;) {
      const { done, value } = await r.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let at: number;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (block.startsWith(':')) comments.push(block.slice(1).trim());
        else {
          const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
          const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null');
          events.push({ event, data });
        }
        for (const w of waiters.splice(0)) w();
      }
    }
    for (const w of waiters.splice(0)) w();
  })();
  let finished = false;
  void ended.then(() => (finished = true));
  return {
    events,
    comments,
    ended,
    async until(ok, ms = 60_000) {
      const end = Date.now() + ms;
      for (;;) {
        const found = events.find(ok);
        if (found) return found;
        if (finished || Date.now() > end) throw new Error(`no such event; got ${JSON.stringify(events).slice(0, 400)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    },
  };
}

it('answers 404 for a project that is not there', async () => {
  const res = await projectEvents(get('/api/projects/nope/events'), params({ id: 'nope' }));
  expect(res.status).toBe(404);
  expect(((await res.json()) as { code: string }).code).toBe('E_PROJECT_NOT_FOUND');
});

it('streams a story move and a run\'s changes to a client, and ends when the client goes away', async () => {
  const ac = new AbortController();
  // Held to the end: a Request's signal follows the controller's only while the Request lives
  // (undici keeps it weakly), and a collected one would never tell the stream the client left.
  const request = new Request('http://localhost/api/projects/shop/events', { signal: ac.signal });
  const res = await projectEvents(request, params({ id: 'shop' }));
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const sse = reader(res);
  await new Promise<void>((r) => {
    const t = setInterval(() => sse.comments.includes('ready') && (clearInterval(t), r()), 10);
  });

  const moved = await moveStory(jsonRequest('/api/projects/shop/board/stories/1-1-login', { status: 'in-progress' }, { method: 'PATCH' }), params({ id: 'shop', key: '1-1-login' }));
  expect(moved.status).toBe(200);
  const story = await sse.until((e) => e.event === 'story');
  expect(story.data).toEqual({ type: 'story', storyKey: '1-1-login', at: expect.any(String) });

  h.model.setScript('headless-complete');
  const created = await createRun(jsonRequest('/api/runs', { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox.' }));
  expect(created.status).toBe(202);
  const runId = ((await created.json()) as { data: { runId: string } }).data.runId;
  const first = await sse.until((e) => e.event === 'run' && e.data.runId === runId);
  expect(first.data).toMatchObject({ type: 'run', runId, storyKey: null });
  // Each event is a signal: the run is read again through the API, and reaches its end.
  const end = Date.now() + 60_000;
  let status = 'queued';
  while (['queued', 'running'].includes(status) && Date.now() < end) {
    status = ((await (await getRun(get(`/api/runs/${runId}`), params({ id: runId }))).json()) as { data: { status: string } }).data.status;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(status).toBe('complete');
  // Queued, running, complete: each change told.
  const runEvents = () => sse.events.filter((e) => e.event === 'run' && e.data.runId === runId);
  await sse.until(() => runEvents().length >= 3);
  expect(runEvents().map((e) => e.data.type)).toEqual(runEvents().map(() => 'run'));

  ac.abort();
  expect(request.signal.aborted).toBe(true);
  await sse.ended;
  h.model.setScript(undefined);
}, 120_000);
