/**
 * `npm run bench` — performance figures for bmad-orchestrator. Reports, never asserts.
 *
 * Runs the production build (`next start` on a private copy of .next) against a scripted
 * OpenAI-compatible model in its own process (bench/model.ts), on 127.0.0.1, with the sample
 * bundles; writes a markdown table and a JSON file to bench/results/ (git-ignored).
 *
 * Options:
 *   --ttft-ms N           model time to first token (default 20)
 *   --token-delay-ms N    model delay between stream chunks (default 1; ~30 chunks per answer)
 *   --scale X             multiplies every turn count (default 1; 0.3 for a quick look)
 *   --stored N            conversations stored for the growth run (default 10000)
 *   --rss-conversations N conversations for the memory figure (default 1000, 10 turns = 20 messages each)
 *   --context-turns N     turns of the context session (default 20)
 *   --skip-growth, --skip-rss, --skip-micro, --skip-context
 *   --only-context        just the context figures (section 7)
 *   --skip-instances      no Postgres / nginx section (8)
 *   --only-instances      just section 8: 1 vs 2 instances on Postgres behind nginx
 *   --skip-command        no section 9 (a command through run_command against bash -c true)
 *   --only-command        just section 9 (no production build needed)
 *   --command-runs N      rounds of section 9 (default 50)
 *   --skip-setup          no workspace setup section (10: npm ci of a real project, twice, needs the npm registry)
 *   --only-setup          just section 10
 *   --skip-autopilot      no section 11 (the sprint autopilot: 6 stories, maxParallel 3 against 1)
 *   --only-autopilot      just section 11 (no production build needed)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { getJson, post, postJson } from './client';
import { bareHttpCpuUs, bareRelayCpuMs, discovery, relayPhase, tools, type DiscoveryFigures, type ToolFigures } from './micro';
import type { BenchMode, ModelRecord } from './model';
import { makeFolders, REPO, snapshotBuild, startApp, startModel, treeCpuMs, treeRssMb, type AppServer, type BenchModel } from './proc';
import { seedConversations } from './seed';
import { contextFigures, contextMarkdown, type ContextFigures } from './context';
import { fmt, summary, type Summary } from './stats';
import { instancesFigures, instancesMarkdown, type InstancesFigures } from './instances';
import { commandFigures, commandMarkdown, type CommandFigures } from './command';
import { setupFigures, setupMarkdown, type SetupFigures } from './setup';
import { autopilotFigures, autopilotMarkdown, type AutopilotFigures } from './autopilot';

process.env.LOG_LEVEL ??= 'silent'; // lib/ code run in this process (discovery, tools, seeding) stays quiet

function flag(name: string): boolean {
  return process.argv.includes(`--${name}`);
}
function num(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const n = i > 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

const OPT = {
  ttftMs: num('ttft-ms', 20),
  tokenDelayMs: num('token-delay-ms', 1),
  scale: num('scale', 1),
  stored: num('stored', 10_000),
  storedMessages: 10,
  rssConversations: num('rss-conversations', 1000),
  rssTurns: 10,
  turnsPerConversation: 4,
  skipGrowth: flag('skip-growth'),
  skipRss: flag('skip-rss'),
  skipMicro: flag('skip-micro'),
  contextTurns: Math.max(2, Math.round(num('context-turns', 20))),
  skipContext: flag('skip-context'),
  onlyContext: flag('only-context'),
  skipInstances: flag('skip-instances'),
  onlyInstances: flag('only-instances'),
  skipCommand: flag('skip-command'),
  onlyCommand: flag('only-command'),
  commandRuns: Math.max(5, Math.round(num('command-runs', 50))),
  skipSetup: flag('skip-setup'),
  onlySetup: flag('only-setup'),
  skipAutopilot: flag('skip-autopilot'),
  onlyAutopilot: flag('only-autopilot'),
};

const AGENT = 'product-lead';
const started = Date.now();
const say = (s: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s] ${s}\n`);
const scaled = (n: number) => Math.max(10, Math.round(n * OPT.scale));

// ---------------------------------------------------------------------------------------------
// Phases through HTTP

interface PhaseResult {
  label: string;
  mode: BenchMode;
  concurrency: number;
  turns: number;
  errors: number;
  firstError?: string;
  roundTripsPerTurn: number;
  wallMs: number;
  turnsPerSecond: number;
  /** user + sys CPU of the server process tree over the phase, per turn. */
  cpuPerTurnMs: number;
  cpuUserMs: number;
  cpuSysMs: number;
  /** Server CPU over wall time of the phase (100% = one core all the time). */
  serverBusyPct: number;
  turnWallMs: Summary;
  modelMs: Summary;
  overheadMs: Summary;
  overheadPerRoundTripMs: Summary;
  byTurnIndex?: Record<string, Summary>;
}

class Ctx {
  constructor(
    readonly app: AppServer,
    readonly model: BenchModel,
  ) {}
  async mode(mode: BenchMode) {
    await postJson(`${this.model.control}/mode`, { mode });
  }
  async collect(): Promise<ModelRecord[]> {
    // Records are compacted on a 100 ms timer; the last response may still be closing.
    await new Promise((r) => setTimeout(r, 30));
    return (await getJson<{ records: ModelRecord[] }>(`${this.model.control}/collect`)).records;
  }
  chat(message: string, conversationId?: string, keepBody = false) {
    return post(this.app.url, '/api/chat', { agentId: AGENT, message, stream: true, ...(conversationId ? { conversationId } : {}) }, { keepBody });
  }
}

let phaseSeq = 0;

async function phase(
  ctx: Ctx,
  label: string,
  mode: BenchMode,
  concurrency: number,
  turns: number,
  perConversation: number,
  opts: { byTurnIndex?: boolean } = {},
): Promise<PhaseResult> {
  const id = `p${phaseSeq++}`;
  await ctx.mode(mode);
  await ctx.collect();
  const timings = new Map<string, { wallMs: number; index: number }>();
  let errors = 0;
  let firstError: string | undefined;
  let next = 0;
  const cpu0 = treeCpuMs(ctx.app.pid);
  const t0 = performance.now();
  const worker = async () => {
    for (;;) {
      let conversationId: string | undefined;
      for (let k = 0; k < perConversation; k++) {
        const i = next++;
        if (i >= turns) return;
        const tag = `${id}-${i}`;
        const t = await ctx.chat(`bench#${tag} Please answer in one or two sentences.`, conversationId);
        if (t.error) {
          errors++;
          firstError ??= t.error;
        }
        timings.set(tag, { wallMs: t.wallMs, index: k + 1 });
        conversationId ??= t.conversationId;
        if (!conversationId) break;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const wallMs = performance.now() - t0;
  const cpu1 = treeCpuMs(ctx.app.pid);
  const records = await ctx.collect();

  const modelByTag = new Map<string, { ms: number; calls: number }>();
  for (const r of records) {
    const m = modelByTag.get(r.tag) ?? { ms: 0, calls: 0 };
    m.ms += r.serviceMs;
    m.calls++;
    modelByTag.set(r.tag, m);
  }
  const walls: number[] = [];
  const models: number[] = [];
  const overheads: number[] = [];
  const perTrip: number[] = [];
  const byIndex = new Map<number, number[]>();
  let trips = 0;
  for (const [tag, t] of timings) {
    const m = modelByTag.get(tag);
    if (!m) continue;
    const o = t.wallMs - m.ms;
    walls.push(t.wallMs);
    models.push(m.ms);
    overheads.push(o);
    perTrip.push(o / m.calls);
    trips += m.calls;
    const list = byIndex.get(t.index) ?? [];
    list.push(o);
    byIndex.set(t.index, list);
  }
  const cpuUser = cpu1.userMs - cpu0.userMs;
  const cpuSys = cpu1.sysMs - cpu0.sysMs;
  const result: PhaseResult = {
    label,
    mode,
    concurrency,
    turns: timings.size,
    errors,
    firstError,
    roundTripsPerTurn: walls.length ? trips / walls.length : NaN,
    wallMs,
    turnsPerSecond: (timings.size * 1000) / wallMs,
    cpuPerTurnMs: (cpuUser + cpuSys) / Math.max(1, timings.size),
    cpuUserMs: cpuUser,
    cpuSysMs: cpuSys,
    serverBusyPct: ((cpuUser + cpuSys) / wallMs) * 100,
    turnWallMs: summary(walls),
    modelMs: summary(models),
    overheadMs: summary(overheads),
    overheadPerRoundTripMs: summary(perTrip),
  };
  if (opts.byTurnIndex) {
    result.byTurnIndex = Object.fromEntries([...byIndex.entries()].sort((a, b) => a[0] - b[0]).map(([k, v]) => [String(k), summary(v)]));
  }
  say(
    `${label}: ${mode} c=${concurrency} ${result.turns} turns, overhead p50 ${fmt(result.overheadMs.median)} p99 ${fmt(result.overheadMs.p99)} ms, ` +
      `CPU ${fmt(result.cpuPerTurnMs)} ms/turn, ${result.turnsPerSecond.toFixed(0)} turns/s, errors ${errors}${firstError ? ` (${firstError.slice(0, 120)})` : ''}`,
  );
  return result;
}

async function warmup(ctx: Ctx) {
  await phase(ctx, 'warm-up', 'plain', 4, 60, 3);
  await phase(ctx, 'warm-up', 'tools3', 4, 40, 2);
}

async function overheadSet(ctx: Ctx, label: string): Promise<PhaseResult[]> {
  const out: PhaseResult[] = [];
  const plan: [BenchMode, number, number][] = [
    ['plain', 1, scaled(100)],
    ['tools3', 1, scaled(60)],
    ['plain', 10, scaled(200)],
    ['tools3', 10, scaled(120)],
    ['plain', 50, scaled(300)],
    ['tools3', 50, scaled(200)],
  ];
  for (const [mode, c, n] of plan) out.push(await phase(ctx, label, mode, c, n, OPT.turnsPerConversation));
  return out;
}

/** Plain turns one after another in conversations of 20 turns: overhead by position in the conversation. */
async function historyPhase(ctx: Ctx): Promise<PhaseResult> {
  return phase(ctx, 'history', 'plain', 1, 20 * Math.max(3, Math.round(4 * OPT.scale)), 20, { byTurnIndex: true });
}

/** CPU per request of GET /api/health: the framework's floor for any request on this machine. */
async function healthCpuMs(ctx: Ctx, requests: number): Promise<number> {
  const http = await import('node:http');
  const agent = new http.Agent({ keepAlive: true });
  const u = new URL(`${ctx.app.url}/api/health`);
  const get = () =>
    new Promise<void>((resolve, reject) =>
      http.get({ host: u.hostname, port: u.port, path: u.pathname, agent }, (r) => {
        r.resume();
        r.on('end', () => resolve());
      }).on('error', reject),
    );
  // Enough requests first for the route's code to be optimised, as it is in a running server.
  for (let i = 0; i < 500; i++) await get();
  const c0 = treeCpuMs(ctx.app.pid);
  for (let i = 0; i < requests; i++) await get();
  const c1 = treeCpuMs(ctx.app.pid);
  agent.destroy();
  return (c1.userMs + c1.sysMs - c0.userMs - c0.sysMs) / requests;
}

interface TtfbFigures {
  samples: number;
  ttftMs: number;
  /** First answer text through our server, first turn of a new conversation (critical actions run). */
  serverFirstTurnMs: Summary;
  /** First answer text through our server, second turn of a conversation. */
  serverLaterTurnMs: Summary;
  /** First byte of our response (the `start` chunks, sent before the model is called). */
  serverFirstByteMs: Summary;
  /** The same request body (captured from our server) sent straight to the model server. */
  directMs: Summary;
}

async function ttfb(ctx: Ctx, samples: number): Promise<TtfbFigures> {
  await ctx.mode('plain');
  const first: number[] = [];
  const later: number[] = [];
  const firstByte: number[] = [];
  for (let i = 0; i < samples; i++) {
    const a = await ctx.chat(`bench#ttfb-${i}a Hello there.`);
    first.push(a.firstTextMs);
    firstByte.push(a.firstByteMs);
    const b = await ctx.chat(`bench#ttfb-${i}b And again.`, a.conversationId);
    later.push(b.firstTextMs);
    firstByte.push(b.firstByteMs);
  }
  await ctx.collect();
  const { body } = await getJson<{ body: Record<string, unknown> }>(`${ctx.model.control}/last-body`);
  const direct: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t = await post(ctx.model.url.replace(/\/v1$/, ''), '/v1/chat/completions', { ...body, stream: true });
    direct.push(t.firstByteMs);
  }
  await ctx.collect();
  const f: TtfbFigures = {
    samples,
    ttftMs: OPT.ttftMs,
    serverFirstTurnMs: summary(first),
    serverLaterTurnMs: summary(later),
    serverFirstByteMs: summary(firstByte),
    directMs: summary(direct),
  };
  say(`ttfb: first text via server ${fmt(f.serverFirstTurnMs.median)} (new) / ${fmt(f.serverLaterTurnMs.median)} (later) ms, direct ${fmt(f.directMs.median)} ms`);
  return f;
}

interface RequestTokens {
  /** ceil(JSON.stringify(messages).length / 4): the scripted model's own usage estimate. */
  messageTokens: number;
  /** ceil(JSON.stringify(tools).length / 4): the tool schemas, sent with every request. */
  toolSchemaTokens: number;
  messages: number;
  toolResultTokens: number;
  /** Tool results from earlier turns, sent again. */
  historyToolResultTokens: number;
  /** Tool results identical to another one in the same request. */
  duplicateToolResultTokens: number;
}

interface WorkflowFigures {
  command: string;
  withShortcut: { roundTrips: number; promptTokens: number; requests: RequestTokens[]; askedFirstQuestion: boolean };
  withoutShortcut: { roundTrips: number; promptTokens: number; requests: RequestTokens[]; askedFirstQuestion: boolean };
  laterTurns: RequestTokens[];
  firstSystemPromptTokens: number;
  criticalContextTokens: number;
}

const tok = (chars: number) => Math.ceil(chars / 4);
function reqTokens(r: ModelRecord): RequestTokens {
  return {
    messageTokens: tok(r.messageChars),
    toolSchemaTokens: tok(r.toolSchemaChars),
    messages: r.messages,
    toolResultTokens: tok(r.toolResultChars),
    historyToolResultTokens: tok(r.historyToolResultChars),
    duplicateToolResultTokens: tok(r.duplicateToolResultChars),
  };
}

async function workflow(ctx: Ctx, laterTurns: number): Promise<WorkflowFigures> {
  await ctx.mode('workflow');
  await ctx.collect();
  const a = await ctx.chat('*plan', undefined, true);
  const aRecs = await ctx.collect();
  const later: RequestTokens[] = [];
  for (let i = 0; i < laterTurns; i++) {
    await ctx.chat(`Answer ${i + 1}: busy parents who forget school forms; today they dig through email and paper notes.`, a.conversationId);
    const recs = await ctx.collect();
    later.push(...recs.map(reqTokens));
  }
  const b = await ctx.chat("I'd like to write a product brief for my idea.", undefined, true);
  const bRecs = await ctx.collect();
  const first = aRecs[0];
  const sum = (rs: ModelRecord[]) => rs.reduce((n, r) => n + tok(r.messageChars) + tok(r.toolSchemaChars), 0);
  const f: WorkflowFigures = {
    command: '*plan (product-lead → product-brief workflow)',
    withShortcut: { roundTrips: aRecs.length, promptTokens: sum(aRecs), requests: aRecs.map(reqTokens), askedFirstQuestion: (a.body ?? '').includes('First question') },
    withoutShortcut: { roundTrips: bRecs.length, promptTokens: sum(bRecs), requests: bRecs.map(reqTokens), askedFirstQuestion: (b.body ?? '').includes('First question') },
    laterTurns: later,
    firstSystemPromptTokens: first ? tok(first.criticalAt >= 0 ? first.criticalAt : first.systemChars) : NaN,
    criticalContextTokens: first && first.criticalAt >= 0 ? tok(first.systemChars - first.criticalAt) : 0,
  };
  say(`workflow: shortcut ${f.withShortcut.roundTrips} round trip(s) / ${f.withShortcut.promptTokens} tokens; without ${f.withoutShortcut.roundTrips} / ${f.withoutShortcut.promptTokens}`);
  return f;
}

interface RssFigures {
  conversations: number;
  messagesEach: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  phase: PhaseResult;
}

async function rss(ctx: Ctx, conversations: number): Promise<RssFigures> {
  const before = treeRssMb(ctx.app.pid);
  const p = await phase(ctx, 'rss', 'plain', 50, conversations * OPT.rssTurns, OPT.rssTurns, { byTurnIndex: true });
  await new Promise((r) => setTimeout(r, 1000));
  const after = treeRssMb(ctx.app.pid);
  say(`rss: ${before.toFixed(0)} MB → ${after.toFixed(0)} MB after ${conversations} conversations`);
  return { conversations, messagesEach: OPT.rssTurns * 2, rssBeforeMb: before, rssAfterMb: after, phase: p };
}

// ---------------------------------------------------------------------------------------------
// Report

interface Machine {
  date: string;
  cpus: number;
  cpuModel: string;
  node: string;
  os: string;
  memGb: number;
  loadAvgStart: number[];
  loadAvgEnd?: number[];
}

function machine(): Machine {
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  return {
    date: new Date().toISOString(),
    cpus: os.availableParallelism?.() ?? os.cpus().length,
    cpuModel: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown',
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    memGb: Math.round(os.totalmem() / 2 ** 30),
    loadAvgStart: os.loadavg().map((n) => Math.round(n * 100) / 100),
  };
}

interface Results {
  machine: Machine;
  options: typeof OPT;
  buildId?: string;
  discovery?: DiscoveryFigures;
  tools?: ToolFigures;
  calibration?: { bareNodeHttpCpuUs: number; healthCpuMs?: number; bareRelayCpuMs?: number };
  empty?: { stored: number; overhead: PhaseResult[]; history: PhaseResult; ttfb: TtfbFigures; workflow: WorkflowFigures; rss?: RssFigures; rssAfterStartMb: number };
  growth?: { stored: number; storedMessages: number; seedMs: number; overhead: PhaseResult[]; rssAfterStartMb: number };
  context?: ContextFigures;
  instances?: InstancesFigures | { error: string };
  command?: CommandFigures | { error: string };
  setup?: SetupFigures | { error: string };
  autopilot?: AutopilotFigures | { error: string };
  /** The bare relay driven like the plain phases, beside them in the same run. */
  relay?: RelayResult[];
  durationS?: number;
}

interface RelayResult {
  concurrency: number;
  turns: number;
  cpuPerTurnMs: number;
  overheadMs: Summary;
}

/** The bare node:http relay at one concurrency, its overhead measured as the phases measure ours. */
async function relayVersus(ctx: Ctx, concurrency: number, turns: number): Promise<RelayResult> {
  await ctx.mode('plain');
  await ctx.collect();
  const label = `relay${concurrency}`;
  const r = await relayPhase(ctx.model.url, turns, concurrency, label);
  const records = await ctx.collect();
  const modelMs = new Map<string, number>();
  for (const rec of records) modelMs.set(rec.tag, (modelMs.get(rec.tag) ?? 0) + rec.serviceMs);
  const overheads: number[] = [];
  r.tags.forEach((tag, i) => {
    const m = modelMs.get(tag);
    if (m !== undefined) overheads.push(r.wallMs[i] - m);
  });
  say(`bare relay at ${concurrency}: CPU ${fmt(r.cpuPerTurnMs)} ms/turn, overhead p50 ${fmt(summary(overheads).median)} ms`);
  return { concurrency, turns, cpuPerTurnMs: r.cpuPerTurnMs, overheadMs: summary(overheads) };
}

function relayTable(r: Results): string | null {
  if (!r.relay?.length) return null;
  const lines = [
    '| conc. | plain turn CPU | bare relay CPU | ratio | plain turn overhead p50 | bare relay overhead p50 | later by |',
    '|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const x of r.relay) {
    const ours = find(r.empty?.overhead, 'plain', x.concurrency);
    if (!ours) continue;
    lines.push(
      `| ${x.concurrency} | ${ms(ours.cpuPerTurnMs)} | ${ms(x.cpuPerTurnMs)} | ${fmt(ours.cpuPerTurnMs / x.cpuPerTurnMs, 1)}× | ${ms(ours.overheadMs.median)} | ${ms(x.overheadMs.median)} | ${ms(ours.overheadMs.median - x.overheadMs.median)} |`,
    );
  }
  return '#### Plain turn beside a bare relay (same run, same scripted model)\n\n' + lines.join('\n');
}

const ms = (x: number) => `${fmt(x)} ms`;
const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');

function overheadTable(rows: PhaseResult[]): string {
  const lines = [
    '| turn | conc. | turns | round trips/turn | overhead/turn p50 | p99 | overhead/round trip p50 | p99 | server CPU/turn | server busy | turns/s | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.mode === 'plain' ? 'plain answer' : '3 tool calls'} | ${r.concurrency} | ${r.turns} | ${fmt(r.roundTripsPerTurn, 1)} | ${ms(r.overheadMs.median)} | ${ms(r.overheadMs.p99)} | ` +
        `${ms(r.overheadPerRoundTripMs.median)} | ${ms(r.overheadPerRoundTripMs.p99)} | ${ms(r.cpuPerTurnMs)} | ${r.serverBusyPct.toFixed(0)}% | ${r.turnsPerSecond.toFixed(0)} | ${r.errors} |`,
    );
  }
  return lines.join('\n');
}

function find(rows: PhaseResult[] | undefined, mode: BenchMode, c: number): PhaseResult | undefined {
  return rows?.find((r) => r.mode === mode && r.concurrency === c);
}

function markdown(r: Results): string {
  const m = r.machine;
  const out: string[] = [];
  out.push(`Measured ${m.date.slice(0, 10)} on ${m.cpus} × ${m.cpuModel}, ${m.memGb} GB, ${m.os}, Node ${m.node}; load average at start ${m.loadAvgStart.join(' / ')}` +
    (m.loadAvgEnd ? `, at end ${m.loadAvgEnd.join(' / ')}` : '') + `. Scripted model: ${r.options.ttftMs} ms to first token, ${r.options.tokenDelayMs} ms between ~30 stream chunks. Full run ${r.durationS?.toFixed(0)} s.`);

  if (r.calibration) {
    out.push(
      `Calibration on this machine: a bare \`node:http\` server spends ${r.calibration.bareNodeHttpCpuUs.toFixed(0)} µs CPU per small JSON request (compare this line across machines)` +
        (r.calibration.healthCpuMs !== undefined ? `; our \`GET /api/health\` (Next.js route, no work) spends ${fmt(r.calibration.healthCpuMs)} ms — the framework's floor per request` : '') +
        (r.calibration.bareRelayCpuMs !== undefined
          ? `; a bare \`node:http\` process that only relays the plain answer from the model to its client, chunk by chunk, spends ${fmt(r.calibration.bareRelayCpuMs)} ms per turn — the floor of a plain turn in Node here, before any framework, storage or prompt.`
          : '.'),
    );
  }

  // Targets
  const e = r.empty;
  const g = r.growth;
  const p1 = find(e?.overhead, 'plain', 1);
  const p50 = find(e?.overhead, 'plain', 50);
  const g1 = find(g?.overhead, 'plain', 1);
  const t = [
    '| target (BRIEF "The bar") | measured | |',
    '|---|---|---|',
  ];
  if (p1) {
    const cpus = (e?.overhead ?? []).filter((x) => x.mode === 'plain').map((x) => x.cpuPerTurnMs);
    t.push(`| server CPU ≤ 2 ms per plain turn | ${cpus.map((x) => fmt(x)).join(' / ')} ms (1 / 10 / 50 concurrent) | ${verdict(Math.max(...cpus) <= 2)} |`);
    t.push(`| overhead per model round trip ≤ 2 ms median, one conversation | ${ms(p1.overheadPerRoundTripMs.median)} | ${verdict(p1.overheadPerRoundTripMs.median <= 2)} |`);
    t.push(`| overhead per model round trip ≤ 10 ms p99, one conversation | ${ms(p1.overheadPerRoundTripMs.p99)} | ${verdict(p1.overheadPerRoundTripMs.p99 <= 10)} |`);
  }
  if (p50) {
    t.push(
      `| server never the bottleneck at 50 concurrent | server busy ${p50.serverBusyPct.toFixed(0)}% of one core; overhead p50 ${ms(p50.overheadMs.median)} vs ${ms(p1?.overheadMs.median ?? NaN)} at 1 | ${verdict(p50.serverBusyPct < 80)} |`,
    );
  }
  if (p1 && g1) {
    const ratio = g1.cpuPerTurnMs / p1.cpuPerTurnMs;
    t.push(
      `| per-turn cost flat from 0 to ${g?.stored.toLocaleString('en')} stored conversations | CPU/turn ${fmt(p1.cpuPerTurnMs)} → ${fmt(g1.cpuPerTurnMs)} ms; overhead p50 ${fmt(p1.overheadMs.median)} → ${fmt(g1.overheadMs.median)} ms | ${verdict(ratio <= 1.25 && g1.overheadMs.median <= p1.overheadMs.median * 1.25 + 0.5)} |`,
    );
  }
  if (r.discovery) {
    t.push(`| discovery of 100 bundles ≤ 150 ms cold | ${ms(r.discovery.coldMs.median)} median (first ${ms(r.discovery.firstColdMs)}) | ${verdict(r.discovery.coldMs.median <= 150)} |`);
    t.push(`| discovery ≤ 2 ms cached | ${ms(r.discovery.cachedListMs.median)} (listAgents), ${ms(r.discovery.cachedGetAgentMs.median)} (getAgent, per chat request) | ${verdict(r.discovery.cachedListMs.median <= 2)} |`);
  }
  if (r.tools) {
    t.push(`| a 1 MB read ≤ 20 ms | ${ms(r.tools.readFile1MbWhole.median)} whole file, ${ms(r.tools.readFile1MbDefaultLimit.median)} with the default 50 kB limit | ${verdict(r.tools.readFile1MbWhole.median <= 20)} |`);
  }
  if (e?.workflow) {
    t.push(`| one model call to the first question of a \`*command\` workflow | ${e.workflow.withShortcut.roundTrips} with the shortcut, ${e.workflow.withoutShortcut.roundTrips} without | ${verdict(e.workflow.withShortcut.roundTrips === 1)} |`);
  }
  if (r.command && !('error' in r.command)) {
    const c = r.command;
    t.push(`| a command (\`true\`) through run_command ≤ 50 ms over \`bash -c true\` directly, p50, idle machine | ${ms(c.toolCallMs.median)} vs ${ms(c.directBashMs.median)}: ${ms(c.overheadP50Ms)} over (load ${c.loadAvgStart[0]}) | ${verdict(c.overheadP50Ms <= 50)} |`);
  }
  if (r.setup && !('error' in r.setup)) {
    t.push(`| second workspace of an unchanged lockfile ready in ≤ 40 % of the first's setup | ${(r.setup.second.ms / 1000).toFixed(1)} s vs ${(r.setup.first.ms / 1000).toFixed(1)} s (${(r.setup.ratio * 100).toFixed(0)} %) | ${verdict(r.setup.second.ok && r.setup.ratio <= 0.4)} |`);
  }
  out.push('#### Targets\n\n' + t.join('\n'));

  if (e) {
    const hi = e.history.byTurnIndex ?? {};
    const hk = Object.keys(hi).filter((k) => ['1', '2', '5', '10', '20'].includes(k));
    out.push(
      `#### 1. Overhead per model round trip (${e.stored} stored conversations)\n\n` +
        overheadTable(e.overhead) +
        `\n\nBy position in a conversation (plain turns, one at a time, conversations of 20 turns, ${e.history.turns} turns, CPU ${fmt(e.history.cpuPerTurnMs)} ms/turn): overhead p50 ` +
        hk.map((k) => `turn ${k}: ${fmt(hi[k].median)} ms`).join(', ') +
        '.',
    );
    const tt = e.ttfb;
    out.push(
      '#### 2. Time to first byte of the streamed answer\n\n' +
        '| | p50 | p99 |\n|---|---:|---:|\n' +
        `| straight from the model server (same request body) | ${ms(tt.directMs.median)} | ${ms(tt.directMs.p99)} |\n` +
        `| through our server, first turn (critical actions run) | ${ms(tt.serverFirstTurnMs.median)} | ${ms(tt.serverFirstTurnMs.p99)} |\n` +
        `| through our server, later turn | ${ms(tt.serverLaterTurnMs.median)} | ${ms(tt.serverLaterTurnMs.p99)} |\n` +
        `| first byte of our response (stream start, before the model is called) | ${ms(tt.serverFirstByteMs.median)} | ${ms(tt.serverFirstByteMs.p99)} |`,
    );
    const w = e.workflow;
    const rows = [
      '| | model round trips | prompt tokens (messages + tool schemas) |',
      '|---|---:|---:|',
      `| \`*plan\` → first question, with the command shortcut | ${w.withShortcut.roundTrips} | ${w.withShortcut.promptTokens.toLocaleString('en')} |`,
      `| plain request → model calls execute_workflow → first question | ${w.withoutShortcut.roundTrips} | ${w.withoutShortcut.promptTokens.toLocaleString('en')} |`,
      ...w.laterTurns.map(
        (l, i) =>
          `| later turn ${i + 1} (answer → next question) | 1 | ${(l.messageTokens + l.toolSchemaTokens).toLocaleString('en')} (of which tool results re-sent ${l.historyToolResultTokens.toLocaleString('en')}, duplicates ${l.duplicateToolResultTokens}) |`,
      ),
      `| first system prompt + critical context | | ${w.firstSystemPromptTokens.toLocaleString('en')} + ${w.criticalContextTokens.toLocaleString('en')} (tool schemas ${w.withShortcut.requests[0]?.toolSchemaTokens.toLocaleString('en')} more) |`,
    ];
    out.push('#### 3. Round trips and prompt tokens, sample workflow (`product-lead` `*plan`)\n\n' + rows.join('\n'));
  }
  if (r.discovery) {
    const d = r.discovery;
    out.push(
      `#### 4. Discovery (${d.bundles} generated bundles × ${d.agentsPerBundle} agents, ${d.offered} offered)\n\n| | p50 | p99 | n |\n|---|---:|---:|---:|\n` +
        `| cold: fresh catalog, listAgents | ${ms(d.coldMs.median)} | ${ms(d.coldMs.p99)} | ${d.coldMs.n} |\n` +
        `| cached: listAgents again | ${ms(d.cachedListMs.median)} | ${ms(d.cachedListMs.p99)} | ${d.cachedListMs.n} |\n` +
        `| cached: getAgent (each chat request) | ${ms(d.cachedGetAgentMs.median)} | ${ms(d.cachedGetAgentMs.p99)} | ${d.cachedGetAgentMs.n} |`,
    );
  }
  if (r.tools) {
    const x = r.tools;
    out.push(
      '#### 5. Tools (executeTool, audit log on)\n\n| call | p50 | p99 | n |\n|---|---:|---:|---:|\n' +
        `| read_file, 1 MB file, whole (maxReadBytes 2 MB) | ${ms(x.readFile1MbWhole.median)} | ${ms(x.readFile1MbWhole.p99)} | ${x.readFile1MbWhole.n} |\n` +
        `| read_file, 1 MB file, default limit (returns ${Math.round(x.readFile1MbDefaultLimit.returnedBytes / 1000)} kB, hashes all) | ${ms(x.readFile1MbDefaultLimit.median)} | ${ms(x.readFile1MbDefaultLimit.p99)} | ${x.readFile1MbDefaultLimit.n} |\n` +
        `| search_files, ${x.searchFiles1000.filesSearched} files (${x.searchFiles1000.matches} matches) | ${ms(x.searchFiles1000.median)} | ${ms(x.searchFiles1000.p99)} | ${x.searchFiles1000.n} |\n` +
        `| save_output, ${Math.round(x.saveOutput100kB.bytes / 1000)} kB | ${ms(x.saveOutput100kB.median)} | ${ms(x.saveOutput100kB.p99)} | ${x.saveOutput100kB.n} |`,
    );
  }
  if (g || e?.rss) {
    const parts: string[] = [];
    if (g) parts.push(`With ${g.stored.toLocaleString('en')} stored conversations (${g.storedMessages} messages each, seeded in ${(g.seedMs / 1000).toFixed(1)} s):\n\n` + overheadTable(g.overhead));
    if (e && g) {
      const cmp = ['| | 0 stored | ' + `${g.stored.toLocaleString('en')} stored |`, '|---|---:|---:|'];
      for (const [mode, c] of [['plain', 1], ['tools3', 1], ['plain', 50]] as [BenchMode, number][]) {
        const a = find(e.overhead, mode, c);
        const b = find(g.overhead, mode, c);
        if (a && b) {
          cmp.push(`| ${mode === 'plain' ? 'plain' : '3 tools'}, c=${c}: CPU/turn | ${ms(a.cpuPerTurnMs)} | ${ms(b.cpuPerTurnMs)} |`);
          cmp.push(`| ${mode === 'plain' ? 'plain' : '3 tools'}, c=${c}: overhead p50 / p99 | ${ms(a.overheadMs.median)} / ${ms(a.overheadMs.p99)} | ${ms(b.overheadMs.median)} / ${ms(b.overheadMs.p99)} |`);
        }
      }
      cmp.push(`| server RSS after start | ${e.rssAfterStartMb.toFixed(0)} MB | ${g.rssAfterStartMb.toFixed(0)} MB |`);
      parts.push(cmp.join('\n'));
    }
    if (e?.rss) {
      const x = e.rss;
      const idx = x.phase.byTurnIndex ?? {};
      const keys = Object.keys(idx).filter((k) => ['1', '2', '5', '10'].includes(k));
      parts.push(
        `Memory: server RSS ${x.rssBeforeMb.toFixed(0)} MB after warm-up → ${x.rssAfterMb.toFixed(0)} MB after ${x.conversations.toLocaleString('en')} conversations of ${x.messagesEach} messages ` +
          `(${x.phase.turns.toLocaleString('en')} turns at 50 concurrent, CPU ${fmt(x.phase.cpuPerTurnMs)} ms/turn, errors ${x.phase.errors}). ` +
          `Overhead p50 by turn of the conversation (history length): ${keys.map((k) => `turn ${k}: ${fmt(idx[k].median)} ms`).join(', ')}.`,
      );
    }
    out.push('#### 6. Growth\n\n' + parts.join('\n\n'));
  }

  const relay = relayTable(r);
  if (relay) out.push(relay);
  if (r.context) out.push(contextMarkdown(r.context));
  if (r.instances) out.push('error' in r.instances ? `#### 8. Many instances\n\nNot measured: ${r.instances.error}` : instancesMarkdown(r.instances));
  if (r.command) out.push('error' in r.command ? `#### 9. A command\n\nNot measured: ${r.command.error}` : commandMarkdown(r.command));
  if (r.setup) out.push('error' in r.setup ? `#### 10. Workspace setup\n\nNot measured: ${r.setup.error}` : setupMarkdown(r.setup));
  if (r.autopilot) out.push('error' in r.autopilot ? `#### 11. Sprint autopilot\n\nNot measured: ${r.autopilot.error}` : autopilotMarkdown(r.autopilot));

  out.push(
    '#### Method (one line per figure)\n\n' +
      [
        `1. Overhead: wall time of a streamed POST /api/chat (request sent → last byte) minus the model server's own time for that turn's requests (its arrival → last byte, matched by a tag in the message), median/p99 over N turns (${OPT.turnsPerConversation} turns per conversation, agent product-lead, first turns include critical actions); per round trip = turn overhead ÷ model calls; CPU = user+sys of the \`next start\` process tree from /proc over the phase ÷ turns; busy = that CPU ÷ phase wall time (over 100% = threadpool and GC threads too).`,
        '2. TTFB: time to the first `text-delta` chunk through our server vs. time to the first body byte when the very request body our server sent is replayed straight to the model server; sequential.',
        '3. Round trips: model requests counted by the scripted model; tokens = ceil(characters ÷ 4) of JSON.stringify(messages) plus of JSON.stringify(tools) per request (the scripted model\'s usage estimate); "without the shortcut" = a plain message and a model that calls execute_workflow itself.',
        '4. Discovery: lib/content/agents createCatalog(root).listAgents() in-process over 100 generated bundles of 3 agents (copies of the sample agent); cold = a fresh catalog each run (OS file cache warm; first run of the process reported apart, then 2 untimed), cached = the same catalog again.',
        '5. Tools: lib/engine/tools executeTool in-process with the audit log on, 3 warm-up calls then N timed calls; search = plain pattern over 1,000 files of ~1.7 kB in 10 folders.',
        `6. Growth: 1 repeated on a fresh server whose database was seeded through SqliteConversationStore with ${OPT.stored.toLocaleString('en')} conversations; RSS = VmRSS of the server process tree after ${OPT.rssConversations.toLocaleString('en')} conversations × ${OPT.rssTurns} plain turns at 50 concurrent.`,
        `7. Context: a server with MODELS_FILE (profiles \`roomy\`, 128 k, and \`small\`, 8 k with 1 k kept for the answer, on the same scripted model); one conversation per profile, sequential; every request counted at the model server with lib/engine/context countRequest (cl100k_base); prefix share of request k = tokens of the tool schemas plus the leading messages equal (JSON) to those of request k−1, ÷ tokens of request k.`,
        '8. Many instances: two `next start` servers on one fresh Postgres database and one shared folder; plain turns at 20 concurrent (4 per conversation) through nginx (keep-alive to the upstreams), first with one instance as its only upstream, then with both round robin, after 60 warm-up turns on each; turns/s = turns ÷ phase wall time.',
        '9. A command: in this process, `true` through executeTool run_command in a workspace checkout (a git repository of 100 files; bubblewrap, git status before and after, the set-id clearing, the quota watch, the workspace lock, audit) against spawn(\'/bin/bash\', [\'-c\', \'true\']), interleaved round by round with runCommand alone, runCommand without git and a bare bwrap; p50 and p99 of wall time; over = p50 of the tool call − p50 of the direct bash.',
        '10. Workspace setup: lib/sandbox/commands runSetup in-process (bubblewrap, slirp4netns, the project\'s cache folder) on fresh `git clone`s of one commit of the npm package with a lockfile made from the registry once; first = empty package cache, its time includes keeping its node_modules; second = the same lockfile; tree reuse off = a third clone with the warm package cache only; wall time of each call.',
        '11. Sprint autopilot: in this process, the app\'s runtime (SQLite store, RUNS_CONCURRENCY 4, AUTOPILOT_TICK_MS 200, accounts off) on a fresh copy of minimist with BMAD 6.12 in a git repository per sprint, against the scripted model through the `openai` SDK; 6 ready stories in free order, each build calls run_command `sleep 5` (bubblewrap) then writes the spec with status done, each review approves, no test line (gate skipped), merges one at a time; wall time = PUT of `enabled: true` → the sixth story `merged` in the autopilot\'s store, polled every 100 ms; active and running counts sampled every 250 ms; CPU = this process\'s user+system time (process.cpuUsage), and that of every process under it (cutime+cstime of /proc/self/stat plus utime+stime+cutime+cstime of each child still running: the git helper and its gits, bubblewrap and what ran inside) over the same span; maxParallel 3 first, then 1.',
      ].join('\n'),
  );
  return out.join('\n\n');
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const results: Results = { machine: machine(), options: OPT };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-bench-'));
  const cleanups: (() => Promise<void> | void)[] = [() => fs.rmSync(tmp, { recursive: true, force: true })];
  const onSignal = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    if (OPT.onlySetup) await setupRun(results);
    else if (OPT.onlyAutopilot) await autopilotRun(results);
    else if (OPT.onlyCommand) await commandRun(results);
    else await benchApp(results, tmp, cleanups);
  } finally {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  }
  report(results);
}

async function benchApp(results: Results, tmp: string, cleanups: (() => Promise<void> | void)[]) {
  const { appDir, buildId } = await snapshotBuild(say);
  results.buildId = buildId;
  cleanups.push(() => fs.rmSync(appDir, { recursive: true, force: true }));
  say(`production build ${buildId} copied to ${appDir}`);

  if (OPT.onlyContext) {
    const model = await startModel(OPT.ttftMs, OPT.tokenDelayMs);
    cleanups.push(() => model.stop());
    const folders = await makeFolders('bench-context');
    cleanups.push(() => fs.rmSync(folders.root, { recursive: true, force: true }));
    results.context = await contextFigures(appDir, folders, model, { OPENAI_API_KEY: 'bench', MAX_ITERATIONS: '10' }, OPT.contextTurns, say);
  } else if (OPT.onlyInstances) {
    const model = await startModel(OPT.ttftMs, OPT.tokenDelayMs);
    cleanups.push(() => model.stop());
    await instancesRun(results, appDir, model);
  } else await fullRun(results, appDir, tmp, cleanups);
}

async function fullRun(results: Results, appDir: string, tmp: string, cleanups: (() => Promise<void> | void)[]) {
  results.calibration = { bareNodeHttpCpuUs: await bareHttpCpuUs(2000) };
  say(`bare node:http: ${results.calibration.bareNodeHttpCpuUs.toFixed(0)} µs CPU per request`);

  if (!OPT.skipMicro) {
    say('discovery (100 bundles × 3 agents)');
    results.discovery = await discovery(tmp, { cold: 10, cached: 300 });
    say(`discovery: cold ${fmt(results.discovery.coldMs.median)} ms, cached ${fmt(results.discovery.cachedListMs.median)} ms`);
    results.tools = await tools(tmp, 30);
    say(`tools: read 1 MB ${fmt(results.tools.readFile1MbWhole.median)} ms, search 1,000 files ${fmt(results.tools.searchFiles1000.median)} ms, save 100 kB ${fmt(results.tools.saveOutput100kB.median)} ms`);
  }

  const model = await startModel(OPT.ttftMs, OPT.tokenDelayMs);
  cleanups.push(() => model.stop());
  const env = { OPENAI_BASE_URL: model.url, OPENAI_API_KEY: 'bench', OPENAI_MODEL: 'scripted', MAX_ITERATIONS: '10' };
  await postJson(`${model.control}/mode`, { mode: 'plain' });
  results.calibration.bareRelayCpuMs = await bareRelayCpuMs(model.url, scaled(300));
  await fetch(`${model.control}/collect`).then((r) => r.text());
  say(`bare node:http relay of a plain answer: ${fmt(results.calibration.bareRelayCpuMs)} ms CPU per turn`);

  // Run 1: an empty database.
  {
    const folders = await makeFolders('bench-empty');
    cleanups.push(() => fs.rmSync(folders.root, { recursive: true, force: true }));
    const app = await startApp(appDir, folders, env);
    cleanups.push(() => app.stop());
    const ctx = new Ctx(app, model);
    await warmup(ctx);
    const rssAfterStartMb = treeRssMb(app.pid);
    results.calibration!.healthCpuMs = await healthCpuMs(ctx, scaled(1000));
    say(`GET /api/health: ${fmt(results.calibration!.healthCpuMs)} ms CPU per request`);
    const overhead = await overheadSet(ctx, 'empty');
    results.relay = [await relayVersus(ctx, 1, scaled(100)), await relayVersus(ctx, 50, scaled(300))];
    const history = await historyPhase(ctx);
    const tt = await ttfb(ctx, scaled(30));
    const wf = await workflow(ctx, 5);
    results.empty = { stored: 0, overhead, history, ttfb: tt, workflow: wf, rssAfterStartMb };
    if (!OPT.skipRss) results.empty.rss = await rss(ctx, Math.max(10, Math.round(OPT.rssConversations)));
    await app.stop();
  }

  // Run 2: the same with many stored conversations.
  if (!OPT.skipGrowth) {
    const folders = await makeFolders('bench-stored');
    cleanups.push(() => fs.rmSync(folders.root, { recursive: true, force: true }));
    say(`seeding ${OPT.stored} conversations × ${OPT.storedMessages} messages`);
    const seeded = await seedConversations(folders.dataDir, OPT.stored, OPT.storedMessages);
    say(`seeded in ${(seeded.ms / 1000).toFixed(1)} s`);
    const app = await startApp(appDir, folders, env);
    cleanups.push(() => app.stop());
    const ctx = new Ctx(app, model);
    await warmup(ctx);
    const rssAfterStartMb = treeRssMb(app.pid);
    const overhead = await overheadSet(ctx, 'stored');
    results.growth = { stored: OPT.stored, storedMessages: OPT.storedMessages, seedMs: seeded.ms, overhead, rssAfterStartMb };
    await app.stop();
  }

  // Run 3: a models file with an 8 k profile, for the context figures.
  if (!OPT.skipContext) {
    const folders = await makeFolders('bench-context');
    cleanups.push(() => fs.rmSync(folders.root, { recursive: true, force: true }));
    results.context = await contextFigures(appDir, folders, model, { OPENAI_API_KEY: 'bench', MAX_ITERATIONS: '10' }, OPT.contextTurns, say);
  }

  if (!OPT.skipInstances) await instancesRun(results, appDir, model);
  if (!OPT.skipCommand) await commandRun(results);
  if (!OPT.skipSetup) await setupRun(results);
  if (!OPT.skipAutopilot) await autopilotRun(results);
}

/** Section 9; a host without bubblewrap gets the reason in the report instead. */
async function commandRun(results: Results) {
  try {
    results.command = await commandFigures(OPT.commandRuns, say);
  } catch (e) {
    results.command = { error: String((e as Error)?.message ?? e).slice(0, 300) };
    say(`command: not measured (${results.command.error})`);
  }
}

/** Section 10; a machine without the sandbox or the registry gets the reason instead. */
async function setupRun(results: Results) {
  try {
    results.setup = await setupFigures(say);
  } catch (e) {
    results.setup = { error: String((e as Error)?.message ?? e).slice(0, 300) };
    say(`setup: not measured (${results.setup.error})`);
  }
}

/** Section 11; a host without bubblewrap or the BMAD install gets the reason instead. */
async function autopilotRun(results: Results) {
  try {
    results.autopilot = await autopilotFigures(say);
  } catch (e) {
    results.autopilot = { error: String((e as Error)?.message ?? e).slice(0, 300) };
    say(`autopilot: not measured (${results.autopilot.error})`);
  }
}

/** Section 8; a machine without Postgres or nginx gets the reason in the report instead. */
async function instancesRun(results: Results, appDir: string, model: BenchModel) {
  const env = { OPENAI_BASE_URL: model.url, OPENAI_API_KEY: 'bench', OPENAI_MODEL: 'scripted', MAX_ITERATIONS: '10' };
  try {
    results.instances = await instancesFigures(appDir, model, env, { concurrency: 20, turns: scaled(400), perConversation: OPT.turnsPerConversation }, say);
  } catch (e) {
    results.instances = { error: String((e as Error)?.message ?? e).slice(0, 300) };
    say(`instances: not measured (${results.instances.error})`);
  }
}

function report(results: Results) {
  results.machine.loadAvgEnd = os.loadavg().map((n) => Math.round(n * 100) / 100);
  results.durationS = (Date.now() - started) / 1000;
  const dir = path.join(REPO, 'bench/results');
  fs.mkdirSync(dir, { recursive: true });
  const stamp = results.machine.date.replace(/[:.]/g, '-');
  const md = markdown(results);
  fs.writeFileSync(path.join(dir, `${stamp}.json`), JSON.stringify(results, null, 2));
  fs.writeFileSync(path.join(dir, `${stamp}.md`), md + '\n');
  fs.writeFileSync(path.join(dir, 'latest.json'), JSON.stringify(results, null, 2));
  fs.writeFileSync(path.join(dir, 'latest.md'), md + '\n');
  process.stdout.write(md + '\n');
  say(`results: bench/results/${stamp}.{md,json} (also latest.md / latest.json)`);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
