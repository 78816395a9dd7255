/**
 * In-process figures that need no HTTP: bundle discovery and single tool calls, through the same
 * lib/ code the server runs (lib/content/agents createCatalog, lib/engine/tools executeTool with auditing on).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPO } from './proc';
import { summary, type Summary } from './stats';

export interface DiscoveryFigures {
  bundles: number;
  agentsPerBundle: number;
  offered: number;
  /** createCatalog + listAgents on a fresh catalog: manifest scan, validation, every agent file read and parsed. */
  coldMs: Summary;
  /** The very first cold run in this process (parser and YAML code not yet optimised), as at server start. */
  firstColdMs: number;
  /** listAgents again on the same catalog (stats every watched file, returns the cached list). */
  cachedListMs: Summary;
  /** getAgent on the same catalog: what each chat request pays. */
  cachedGetAgentMs: Summary;
}

export interface ToolFigures {
  readFile1MbDefaultLimit: Summary & { returnedBytes: number; truncated: boolean };
  readFile1MbWhole: Summary & { returnedBytes: number };
  searchFiles1000: Summary & { filesSearched: number; matches: number };
  saveOutput100kB: Summary & { bytes: number };
}

async function time<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await fn();
  return [performance.now() - t0, v];
}

function agentText(id: string, n: number): string {
  const sample = fs.readFileSync(path.join(REPO, 'bmad/custom/bundles/product-studio/agents/product-lead.md'), 'utf8');
  return sample.replace('id="product-lead"', `id="${id}"`).replace('Maya', `Agent ${n}`);
}

/** 100 bundles of 3 entry-point agents, each agent file a copy of the sample product lead. */
export function generateBundles(root: string, bundles: number, perBundle: number): void {
  fs.mkdirSync(root, { recursive: true });
  for (let b = 0; b < bundles; b++) {
    const folder = path.join(root, `bundle-${String(b).padStart(3, '0')}`);
    fs.mkdirSync(path.join(folder, 'agents'), { recursive: true });
    const agents: string[] = [];
    for (let a = 0; a < perBundle; a++) {
      const id = `agent-${b}-${a}`;
      fs.writeFileSync(path.join(folder, 'agents', `${id}.md`), agentText(id, a));
      agents.push(
        `  - id: ${id}\n    name: Agent ${a}\n    title: Generated agent ${a}\n    file: agents/${id}.md\n    entry_point: true\n    description: Generated for the discovery benchmark.`,
      );
    }
    fs.writeFileSync(
      path.join(folder, 'bundle.yaml'),
      `type: bundle\nname: bench-bundle-${b}\nversion: 1.0.0\ndescription: Generated bundle ${b}.\nagents:\n${agents.join('\n')}\n`,
    );
  }
}

export async function discovery(tmp: string, runs: { cold: number; cached: number }): Promise<DiscoveryFigures> {
  const { createCatalog } = await import('../lib/content/agents');
  const root = path.join(tmp, 'discovery-bundles');
  const bundles = 100;
  const perBundle = 3;
  generateBundles(root, bundles, perBundle);

  // The first run is reported on its own; the next two warm the JIT; then `runs.cold` are timed.
  const cold: number[] = [];
  let offered = 0;
  let firstColdMs = NaN;
  for (let i = 0; i < runs.cold + 3; i++) {
    const catalog = createCatalog(root);
    const [ms, list] = await time(() => catalog.listAgents());
    offered = list.length;
    if (i === 0) firstColdMs = ms;
    if (i >= 3) cold.push(ms);
  }
  const catalog = createCatalog(root);
  await catalog.listAgents();
  const cached: number[] = [];
  for (let i = 0; i < runs.cached; i++) cached.push((await time(() => catalog.listAgents()))[0]);
  const gets: number[] = [];
  for (let i = 0; i < runs.cached; i++) gets.push((await time(() => catalog.getAgent(`agent-${i % bundles}-${i % perBundle}`)))[0]);
  return {
    bundles,
    agentsPerBundle: perBundle,
    offered,
    coldMs: summary(cold),
    firstColdMs,
    cachedListMs: summary(cached),
    cachedGetAgentMs: summary(gets),
  };
}

export async function tools(tmp: string, runs: number): Promise<ToolFigures> {
  const { executeTool } = await import('../lib/engine/tools');
  const { DEFAULT_LIMITS } = await import('../lib/core/config');
  const bundleRoot = path.join(tmp, 'tools-bundle');
  const outputRoot = path.join(tmp, 'tools-output', 'conv-bench');
  const auditDir = path.join(tmp, 'tools-audit');
  fs.mkdirSync(outputRoot, { recursive: true });

  // 1 MB of markdown-ish text lines.
  const line = 'The quick brown fox jumps over the lazy dog; product briefs keep goals measurable. 0123456789\n';
  fs.mkdirSync(bundleRoot, { recursive: true });
  fs.writeFileSync(path.join(bundleRoot, 'big.md'), line.repeat(Math.ceil(1_000_000 / line.length)).slice(0, 1_000_000));

  // 1,000 files of ~2 kB in 10 folders; one in fifty holds the needle.
  for (let i = 0; i < 1000; i++) {
    const dir = path.join(bundleRoot, 'corpus', `d${i % 10}`);
    if (i < 10) fs.mkdirSync(dir, { recursive: true });
    const body = Array.from({ length: 25 }, (_, j) => `Line ${j} of note ${i}: research findings, sizing and user stories.`);
    if (i % 50 === 0) body[12] = `Line 12 of note ${i}: NEEDLE-${i} the rare finding.`;
    fs.writeFileSync(path.join(dir, `note-${String(i).padStart(4, '0')}.md`), body.join('\n') + '\n');
  }

  const ctx = (limits = DEFAULT_LIMITS) => ({
    conversationId: 'conv-bench',
    agentId: 'bench',
    bundleRoot,
    coreRoot: path.join(REPO, 'bmad/core'),
    projectRoot: tmp,
    outputRoot,
    variables: { date: new Date().toISOString().slice(0, 10) },
    limits: { ...limits },
    auditDir,
  });
  let n = 0;
  const call = (name: string, args: unknown) => ({ id: `call_${n++}`, name, arguments: JSON.stringify(args) });

  const bench = async (fn: () => Promise<Record<string, unknown>>, n = runs) => {
    const times: number[] = [];
    let last: Record<string, unknown> = {};
    for (let i = 0; i < n + 3; i++) {
      const [ms, r] = await time(fn);
      if (r.ok !== true) throw new Error(`tool failed: ${JSON.stringify(r).slice(0, 300)}`);
      if (i >= 3) times.push(ms); // three warm-up calls
      last = r;
    }
    return { s: summary(times), last };
  };

  const readDefault = await bench(() => executeTool(call('read_file', { file_path: '{bundle-root}/big.md' }), ctx()) as Promise<Record<string, unknown>>);
  const readWhole = await bench(
    () => executeTool(call('read_file', { file_path: '{bundle-root}/big.md' }), ctx({ ...DEFAULT_LIMITS, maxReadBytes: 2_000_000 })) as Promise<Record<string, unknown>>,
  );
  const search = await bench(
    () => executeTool(call('search_files', { path: '{bundle-root}/corpus', pattern: 'NEEDLE' }), ctx()) as Promise<Record<string, unknown>>,
    Math.max(5, Math.round(runs / 3)),
  );
  const content = 'A line of the saved product brief, with enough words to look like prose.\n'.repeat(2000).slice(0, 100_000);
  const save = await bench(
    () => executeTool(call('save_output', { file_path: '{output_folder}/brief.md', content }), ctx()) as Promise<Record<string, unknown>>,
  );
  return {
    readFile1MbDefaultLimit: { ...readDefault.s, returnedBytes: Buffer.byteLength(String(readDefault.last.content)), truncated: readDefault.last.truncated === true },
    readFile1MbWhole: { ...readWhole.s, returnedBytes: Buffer.byteLength(String(readWhole.last.content)) },
    searchFiles1000: {
      ...search.s,
      filesSearched: Number(search.last.files_searched),
      matches: (search.last.matches as unknown[]).length,
    },
    saveOutput100kB: { ...save.s, bytes: Number(save.last.bytes_written) },
  };
}

/**
 * CPU milliseconds per request of a one-file node:http server (`script` prints its port once
 * listening), measured from /proc over `requests` keep-alive requests after `warm` untimed ones.
 */
async function inlineServerCpuMs(script: string, method: 'GET' | 'POST', requests: number, warm: number): Promise<number> {
  const { spawn } = await import('node:child_process');
  const http = await import('node:http');
  const { treeCpuMs } = await import('./proc');
  const p = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const agent = new http.Agent({ keepAlive: true });
  try {
    const port = await new Promise<number>((resolve) => p.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    const call = () =>
      new Promise<void>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: '/', method, agent }, (r) => {
          r.resume();
          r.on('end', () => resolve());
        });
        req.on('error', reject);
        req.end(method === 'POST' ? '{}' : undefined);
      });
    for (let i = 0; i < warm; i++) await call();
    const c0 = treeCpuMs(p.pid!);
    for (let i = 0; i < requests; i++) await call();
    const c1 = treeCpuMs(p.pid!);
    return (c1.userMs + c1.sysMs - c0.userMs - c0.sysMs) / requests;
  } finally {
    agent.destroy();
    p.kill();
  }
}

/**
 * Calibration: CPU per request of a bare node:http server answering a small JSON body, so the
 * figures can be compared across machines.
 */
export async function bareHttpCpuUs(requests: number): Promise<number> {
  const script =
    "require('http').createServer((q,s)=>{s.setHeader('content-type','application/json');s.end(JSON.stringify({success:true,data:{status:'ok'}}))}).listen(0,'127.0.0.1',function(){console.log(this.address().port)})";
  return (await inlineServerCpuMs(script, 'GET', requests, 200)) * 1000;
}

/**
 * The floor of a plain turn in Node on this machine: a bare node:http process that forwards each
 * request to the model (keep-alive) and relays the streamed answer to its client chunk by chunk.
 * No framework, storage, prompt or parsing; only the two connections a turn cannot avoid.
 */
export function bareRelayCpuMs(modelUrl: string, turns: number): Promise<number> {
  const script = `
const http = require('http');
const up = new URL(${JSON.stringify(modelUrl)} + '/chat/completions');
const agent = new http.Agent({ keepAlive: true });
let n = 0;
http.createServer((q, s) => {
  q.resume();
  q.on('end', () => {
    const body = JSON.stringify({ model: 'scripted', stream: true, messages: [{ role: 'user', content: 'bench#relay-' + n++ + ' hi' }] });
    const r = http.request({ agent, host: up.hostname, port: up.port, path: up.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (m) => {
      s.writeHead(200, { 'content-type': 'text/event-stream' });
      m.on('data', (c) => s.write(c));
      m.on('end', () => s.end());
    });
    r.end(body);
  });
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;
  return inlineServerCpuMs(script, 'POST', turns, 100);
}

export interface RelayFigures {
  concurrency: number;
  turns: number;
  /** user + sys CPU of the relay process per turn. */
  cpuPerTurnMs: number;
  /** Wall time of each turn (client), and the model's own time for it (by tag). */
  wallMs: number[];
  tags: string[];
}

/**
 * The bare relay of bareRelayCpuMs driven like the bench's phases: `concurrency` clients, each
 * turn tagged in its message so the model server's own time can be subtracted (overhead), CPU of
 * the relay process over the phase. The client reads the request body and the answer as our
 * server's clients do.
 */
export async function relayPhase(modelUrl: string, turns: number, concurrency: number, label: string): Promise<RelayFigures> {
  const script = `
const http = require('http');
const up = new URL(${JSON.stringify(modelUrl)} + '/chat/completions');
const agent = new http.Agent({ keepAlive: true });
http.createServer((q, s) => {
  let raw = '';
  q.setEncoding('utf8');
  q.on('data', (c) => (raw += c));
  q.on('end', () => {
    const { tag } = JSON.parse(raw || '{}');
    const body = JSON.stringify({ model: 'scripted', stream: true, messages: [{ role: 'user', content: 'bench#' + tag + ' hi' }] });
    const r = http.request({ agent, host: up.hostname, port: up.port, path: up.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (m) => {
      s.writeHead(200, { 'content-type': 'text/event-stream' });
      m.on('data', (c) => s.write(c));
      m.on('end', () => s.end());
    });
    r.end(body);
  });
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;
  const { spawn } = await import('node:child_process');
  const http = await import('node:http');
  const { treeCpuMs } = await import('./proc');
  const p = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    const port = await new Promise<number>((resolve) => p.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    const call = (tag: string) =>
      new Promise<number>((resolve, reject) => {
        const t = performance.now();
        const req = http.request({ host: '127.0.0.1', port, path: '/', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (r) => {
          r.resume();
          r.on('end', () => resolve(performance.now() - t));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ tag }));
      });
    for (let i = 0; i < 50; i++) await call(`${label}-warm-${i}`);
    const wallMs: number[] = [];
    const tags: string[] = [];
    let next = 0;
    const c0 = treeCpuMs(p.pid!);
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (;;) {
          const i = next++;
          if (i >= turns) return;
          const tag = `${label}-${i}`;
          wallMs.push(await call(tag));
          tags.push(tag);
        }
      }),
    );
    const c1 = treeCpuMs(p.pid!);
    return { concurrency, turns, cpuPerTurnMs: (c1.userMs + c1.sysMs - c0.userMs - c0.sysMs) / turns, wallMs, tags };
  } finally {
    agent.destroy();
    p.kill();
  }
}
