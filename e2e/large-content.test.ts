/**
 * The production server (`next start`) with content a stuck model sends in one piece: a 200 kB
 * tool-call argument without a space, then a 1 MB one. /api/health, asked from outside, keeps
 * answering within 500 ms while the server counts it, and SIGTERM ends the server within 10 s
 * meanwhile. (With the old quadratic counter the server froze for 30 s on the 200 kB word and a
 * blocked event loop never ran its SIGTERM handler.)
 */
import { performance } from 'node:perf_hooks';
import { startScriptedModel, reply, type ScriptedModel } from '../test/scripted-model';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { chatJson, chatStream, sleep } from './durability-helpers';

jest.setTimeout(120_000);

const AGENT = 'product-lead';
let model: ScriptedModel;
let folders: Folders;
const running: AppServer[] = [];

beforeAll(async () => {
  model = await startScriptedModel({});
  folders = await makeFolders('large');
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((a) => a.kill9()));
  await model.close();
  await folders.cleanup();
});

async function boot(): Promise<AppServer> {
  const app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'scripted-e2e', OPENAI_CONTEXT_WINDOW: '1000000' });
  running.push(app);
  return app;
}

/** Polls /api/health every 50 ms from this process; the worst time one call took. */
function watchHealth(url: string): { stop(): Promise<{ worstMs: number; calls: number }> } {
  let running = true;
  let worst = 0;
  let calls = 0;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(15_000) }).catch(() => null);
      if (!running && !res) break;
      await res?.text();
      calls++;
      worst = Math.max(worst, performance.now() - t);
      await sleep(50);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { worstMs: worst, calls };
    },
  };
}

// Random letters: nothing for a tokenizer's caches to reuse.
function letters(n: number, seed: number): string {
  let s = seed;
  let out = '';
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out += String.fromCharCode(97 + (s % 26));
  }
  return out;
}

it('keeps /api/health answering (within 2 s) while a 200 kB one-word argument is counted, and later turns stay fast', async () => {
  const app = await boot();
  model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: 'word.md', content: letters(200_000, 3) } }], { argumentChunks: 40 }), reply.text('Done.')]);
  const watch = watchHealth(app.url);
  const t0 = performance.now();
  const first = await chatJson(app.url, { agentId: AGENT, message: 'Save the word.' });
  const took = performance.now() - t0;
  const { worstMs, calls } = await watch.stop();
  expect(first.status).toBe(200);
  expect(took).toBeLessThan(20_000);
  expect(calls).toBeGreaterThan(0);
  expect(worstMs).toBeLessThan(2_000);

  model.setScript([reply.text('Quick.')]);
  const t1 = performance.now();
  const later = await chatJson(app.url, { agentId: AGENT, conversationId: first.body.data.conversationId, message: 'Still there?' });
  expect(later.status).toBe(200);
  expect(performance.now() - t1).toBeLessThan(3_000);
});

it('ends on SIGTERM within 10 s while it counts a 1 MB one-word argument', async () => {
  const app = await boot();
  // The second model call never answers: the turn is still running when the signal comes.
  model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: 'big.md', content: letters(900_000, 5) } }], { argumentChunks: 60 }), reply.hang()]);
  const from = model.chatRequests().length;
  const watch = watchHealth(app.url);
  const s = await chatStream(app.url, { agentId: AGENT, message: 'Save the big word.' });
  await s.conversationId();
  // The first answer has arrived: the server now stores the call and counts the next request.
  await model.waitFor(() => model.chatRequests().length > from && model.chatRequests()[from].serviceMs !== undefined, 30_000);
  await sleep(100);
  const { worstMs } = await watch.stop();
  const t0 = Date.now();
  const fallback = setTimeout(() => app.proc.kill('SIGKILL'), 15_000);
  await app.stop();
  clearTimeout(fallback);
  running.splice(running.indexOf(app), 1);
  expect({ bySigterm: app.proc.signalCode !== 'SIGKILL', under10s: Date.now() - t0 < 10_000, healthUnder500ms: worstMs < 500 }).toEqual({ bySigterm: true, under10s: true, healthUnder500ms: true });
});
