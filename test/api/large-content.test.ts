import { existsSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { POST as chat } from '@/app/api/chat/route';
import { GET as health } from '@/app/api/health/route';
import { GET as getOne } from '@/app/api/conversations/[id]/route';
import { MODEL_OUTPUT_LIMITS } from '@/lib/model/llm/types';
import { loadTokenizer, tokenizerFor } from '@/lib/engine/context';
import { reply } from '../scripted-model';
import type { ChatMessage } from '../scripted-model/types';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * Content a model or a user sends in one piece without a space — a long "word" — never holds up
 * the server: the turn ends in time, and /api/health, served by the same event loop, answers
 * within 2 s all along. (Before the linear counter a 200 kB word stalled everything for 30 s; the
 * bound leaves room for a machine loaded by other test workers, not for a stall.)
 */
jest.setTimeout(120_000);

/** The worst /api/health delay allowed while the long content is handled. */
const HEALTH_MS = 2_000;

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const AGENT = 'product-lead';
// A window that holds what these tests send, so all of it is counted and sent, not compacted away.
const WIDE = { OPENAI_CONTEXT_WINDOW: '2000000' };
const send = async (body: Record<string, unknown>) => {
  const started = performance.now();
  const res = await chat(jsonRequest('/api/chat', { agentId: AGENT, ...body }));
  const json = await res.json();
  return { status: res.status, body: json, ms: performance.now() - started };
};
const detail = async (id: string) => (await (await getOne(get(`/api/conversations/${id}`), params({ id }))).json()).data;

/**
 * Calls GET /api/health every 20 ms and keeps the worst delay: from when the call was due to when
 * its answer came. In this process a blocked event loop delays both the timer and the handler.
 */
function watchHealth(): { stop(): Promise<{ worstMs: number; calls: number }> } {
  let running = true;
  let worst = 0;
  let calls = 0;
  const loop = (async () => {
    while (running) {
      const due = performance.now() + 20;
      await new Promise((r) => setTimeout(r, 20));
      const res = await health(get('/api/health'));
      await res.json();
      calls++;
      worst = Math.max(worst, performance.now() - due);
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

// Random letters: the counter's hardest one-word input (no repeated merges to reuse).
function letters(n: number, seed = 1): string {
  let s = seed;
  let out = '';
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out += String.fromCharCode(97 + (s % 26));
  }
  return out;
}

const toolResults = (messages: ChatMessage[] | undefined) => (messages ?? []).filter((m) => m.role === 'tool').map((m) => JSON.parse(String(m.content)));

describe('one long word never stalls the server', () => {
  it('answers a 19,000-letter message without spaces within 5 s, /api/health answering meanwhile', async () => {
    h = await startHarness(WIDE, { store: 'sqlite' });
    // A server warms its tokenizers and opens its store before it serves (instrumentation); the
    // first turn of a fresh test runtime would measure that start, not the long word.
    await Promise.all([...h.config.models.profiles.values()].map((p) => loadTokenizer(tokenizerFor(p.model, p.tokenizer))));
    h.model.setScript([reply.text('Warm.')]);
    expect((await send({ message: 'hello' })).status).toBe(200);
    h.model.setScript([reply.text('Read it all.')]);
    const watch = watchHealth();
    const r = await send({ message: letters(19_000) });
    const { worstMs, calls } = await watch.stop();
    expect(r.status).toBe(200);
    expect(r.body.data.message.content).toBe('Read it all.');
    expect(r.ms).toBeLessThan(5_000);
    expect(calls).toBeGreaterThan(0);
    expect(worstMs).toBeLessThan(HEALTH_MS);
  });

  it('ends a turn whose tool call carries a 200 kB one-word argument within 20 s; later turns stay fast', async () => {
    h = await startHarness(WIDE, { store: 'sqlite' });
    const word = letters(200_000, 7);
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: 'word.md', content: word } }], { argumentChunks: 40 }), reply.text('Saved, or told why not.')]);
    const watch = watchHealth();
    const first = await send({ message: 'Save the word.' });
    const { worstMs } = await watch.stop();
    expect(first.status).toBe(200);
    expect(first.ms).toBeLessThan(20_000);
    expect(worstMs).toBeLessThan(HEALTH_MS);
    // The call ran (the write limit answers it); the next request carried its 200 kB argument.
    const second = h.model.chatRequests()[1].body!;
    const call = second.messages!.find((m) => m.role === 'assistant' && m.tool_calls?.length);
    expect(call!.tool_calls![0].function!.arguments!.length).toBeGreaterThan(200_000);

    h.model.setScript([reply.text('Still here.')]);
    const watchLater = watchHealth();
    const later = await send({ conversationId: first.body.data.conversationId, message: 'And now?' });
    const lateHealth = await watchLater.stop();
    expect(later.status).toBe(200);
    expect(later.body.data.message.content).toBe('Still here.');
    expect(later.ms).toBeLessThan(10_000);
    expect(lateHealth.worstMs).toBeLessThan(HEALTH_MS);
  });

  it('counts a 1 MB minified file an agent reads while /api/health keeps answering', async () => {
    h = await startHarness(WIDE, { store: 'sqlite' });
    h.model.setScript([reply.text('Ready.')]);
    const opened = await send({ message: 'Hello' });
    const id = opened.body.data.conversationId;
    const minified = Array.from({ length: 40_000 }, (_, i) => `function f${i}(a,b){return a+b*${i}}`).join(';').slice(0, 1_000_000);
    await fs.writeFile(path.join(h.config.outputPath, id, 'app.min.js'), minified).catch(async () => {
      await fs.mkdir(path.join(h.config.outputPath, id), { recursive: true });
      await fs.writeFile(path.join(h.config.outputPath, id, 'app.min.js'), minified);
    });
    h.model.setScript([reply.toolCalls([{ name: 'read_file', arguments: { file_path: '{output_folder}/app.min.js' } }]), reply.text('It is minified.')]);
    const watch = watchHealth();
    const r = await send({ conversationId: id, message: 'Read app.min.js' });
    const { worstMs } = await watch.stop();
    expect(r.status).toBe(200);
    expect(r.body.data.message.content).toBe('It is minified.');
    expect(r.ms).toBeLessThan(20_000);
    expect(worstMs).toBeLessThan(HEALTH_MS);
    const [result] = toolResults(h.model.chatRequests().at(-1)!.body!.messages);
    expect(result).toMatchObject({ ok: true });
  });
});

describe('limits on what a model sends', () => {
  it('ends a step whose tool-call arguments pass the cap with E_ARGS_TOO_LARGE, and the turn goes on', async () => {
    h = await startHarness(WIDE, { store: 'sqlite' });
    const cap = MODEL_OUTPUT_LIMITS.toolArgumentChars;
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: 'huge.md', content: 'a'.repeat(cap + 100_000) } }], { argumentChunks: 60 }), reply.text('I will write it in parts.')]);
    const watch = watchHealth();
    const r = await send({ message: 'Write the huge file.' });
    const { worstMs } = await watch.stop();
    expect(r.status).toBe(200);
    expect(r.body.data.message.content).toBe('I will write it in parts.');
    expect(worstMs).toBeLessThan(HEALTH_MS);
    // What the model got back: the code, the cap and what to do instead.
    const [result] = toolResults(h.model.chatRequests()[1].body!.messages);
    expect(result).toMatchObject({ ok: false, error: { code: 'E_ARGS_TOO_LARGE', details: { limitChars: cap } } });
    expect(result.error.message).toContain('1,000,000 characters');
    expect(result.error.message).toMatch(/in parts/);
    // Nothing was written, and the stored call holds no megabyte.
    expect(existsSync(path.join(h.config.outputPath, r.body.data.conversationId, 'huge.md'))).toBe(false);
    const stored = await detail(r.body.data.conversationId);
    expect(JSON.stringify(stored).length).toBeLessThan(50_000);
  });

  it('cuts an answer that passes the cap and ends the turn with what it kept', async () => {
    h = await startHarness(WIDE, { store: 'sqlite' });
    const cap = MODEL_OUTPUT_LIMITS.answerChars;
    h.model.setScript([reply.text('b'.repeat(cap + 200_000), { chunkSize: 50_000 })]);
    const r = await send({ message: 'Say b forever.' });
    expect(r.status).toBe(200);
    expect(r.body.data.message.content.length).toBe(cap);
  });
});

const HOST_READY = existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/python3');
(HOST_READY || process.env.CI ? describe : describe.skip)('a project agent', () => {
  let projectsRoot: string;
  beforeAll(async () => {
    projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-large-'));
    const shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
    // As BMAD 6.10 on writes it: no project_name in any layer.
    for (const f of ['_bmad/config.toml', '_bmad/bmm/config.yaml', '_bmad/core/config.yaml']) {
      const file = path.join(shop, f);
      const text = await fs.readFile(file, 'utf8');
      await fs.writeFile(file, text.replace(/^project_name\s*[=:].*$/m, ''));
    }
    await fs.writeFile(path.join(shop, '_bmad', 'scripts', 'flood.py'), 'import sys\nsys.stdout.write("a" * 8_000_000)\n');
  }, 120_000);
  afterAll(async () => {
    await fs.rm(projectsRoot, { recursive: true, force: true });
  });

  it('counts a script printing megabytes of one letter (cut to 1 MB) while /api/health keeps answering', async () => {
    h = await startHarness({ ...WIDE, PROJECTS_ROOT: projectsRoot }, { store: 'sqlite' });
    h.model.setScript([reply.toolCalls([{ name: 'run_script', arguments: { script: '{project-root}/_bmad/scripts/flood.py' } }]), reply.text('That was a lot of a.')]);
    const watch = watchHealth();
    const r = await send({ projectId: 'shop', agentId: 'bmad-agent-pm', message: 'Run the flood script.' });
    const { worstMs } = await watch.stop();
    expect(r.status).toBe(200);
    expect(r.body.data.message.content).toBe('That was a lot of a.');
    expect(r.ms).toBeLessThan(20_000);
    expect(worstMs).toBeLessThan(HEALTH_MS);
    const [result] = toolResults(h.model.chatRequests().at(-1)!.body!.messages);
    expect(result).toMatchObject({ exit_code: 0, truncated: true });
    expect(String(result.stdout).length).toBeGreaterThan(500_000);
  });

  it("fills {project_name} with the project's folder name when no config layer sets it", async () => {
    h = await startHarness({ ...WIDE, PROJECTS_ROOT: projectsRoot }, { store: 'sqlite' });
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/{project_name}-run/notes.md', content: '# Notes\n' } }]), reply.text('Saved.')]);
    const r = await send({ projectId: 'shop', agentId: 'bmad-agent-pm', message: 'Save notes.' });
    expect(r.status).toBe(200);
    const [result] = toolResults(h.model.chatRequests().at(-1)!.body!.messages);
    expect(result).toMatchObject({ ok: true, path: expect.stringContaining('shop-run/notes.md') });
    expect(existsSync(path.join(projectsRoot, 'shop', '_bmad-output', 'shop-run', 'notes.md'))).toBe(true);
  });
});
