/**
 * The sprint autopilot's parallel slots: a sprint of six independent stories (free order) in a
 * real project (minimist from the npm registry with BMAD 6.12 installed by its own installer, in
 * a real git repository), driven by the app's engine in this process against the scripted model
 * through the real `openai` SDK. Each story's build calls run_command `sleep 5` (the real
 * sandbox) and then writes the story's spec with its status as the build skill does; its review
 * approves; no test line, so the gate is skipped and the merge queue merges one at a time. The
 * same sprint, on a fresh copy of the project, with maxParallel 3 and with maxParallel 1: wall
 * time from enabling the autopilot to the sixth merge. Figures only; never asserts.
 *
 *   npx tsx bench/autopilot.ts        (also section 11 of `npm run bench`; --only-autopilot)
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Runtime } from '../lib/engine/runtime';
import { reply, startScriptedModel, type ChatMessage, type ChatRequestBody, type Reply } from '../test/scripted-model';
import { openSourceRepo } from '../test/open-source-repo';
import { sh } from '../test/git-repo';
import { treeCpuSplitMs } from './proc';

const REPO = path.resolve(__dirname, '..');
const ARTIFACTS = '_bmad-output/implementation-artifacts';
const STORIES = ['1-1-alpha', '1-2-beta', '1-3-gamma', '2-1-delta', '2-2-epsilon', '2-3-zeta'];
const SLEEP_S = 5;
const SPRINT = `generated: 2026-11-20
project: minimist
tracking_system: file-system
story_location: "{project-root}/${ARTIFACTS}"

development_status:
  epic-1: in-progress
${STORIES.slice(0, 3).map((k) => `  ${k}: ready-for-dev`).join('\n')}
  epic-1-retrospective: optional
  epic-2: in-progress
${STORIES.slice(3).map((k) => `  ${k}: ready-for-dev`).join('\n')}
  epic-2-retrospective: optional
`;

export interface AutopilotSprintFigure {
  maxParallel: number;
  /** Enabling the autopilot → the sixth story merged. */
  wallMs: number;
  merged: number;
  /** Stories in a step holding a slot at once, sampled every 250 ms (at most maxParallel). */
  maxActive: number;
  /** Stories with a run queued or running at once. */
  maxRunning: number;
  runs: number;
  /** Median of a build run, of a review run (started → ended), and of a run's wait in the queue (created → started). */
  buildRunMs: number;
  reviewRunMs: number;
  queuedMs: number;
  modelRequests: number;
  /** Where a story stopped short of merged (step and note), when one did. */
  problems: string[];
  loadAvgStart: number[];
  loadAvgEnd: number[];
  /** CPU time over the sprint: this process (the engine, the sampler, the scripted model), and every process under it (the git helper and its gits, bubblewrap and what ran inside). */
  cpuSelfMs: number;
  cpuChildrenMs: number;
}

export interface AutopilotFigures {
  stories: number;
  sleepS: number;
  runsConcurrency: number;
  parallel: AutopilotSprintFigure;
  serial: AutopilotSprintFigure;
  /** parallel ÷ serial wall time (goal ≤ 0.45); null when a sprint stopped short of six merges (the times are not of the same work). */
  ratio: number | null;
  cpus: number;
}

const load = () => os.loadavg().map((n) => Math.round(n * 100) / 100);

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

/**
 * The story and the step (build or code review) of a conversation, from its first message. A
 * review started through a menu code does not name its skill; the autopilot's review inputs say it.
 */
function taskOf(body: ChatRequestBody): { key: string; kind: 'build' | 'review' } | null {
  const first = (body.messages ?? []).find((m: ChatMessage) => m.role === 'user' && /Story: \d+-\d+-/.test(textOf(m.content)));
  if (!first) return null;
  const text = textOf(first.content);
  return { key: /Story: (\d+-\d+-[a-z0-9-]+)/.exec(text)![1]!, kind: text.includes('bmad-code-review') || text.includes("Review the story's changes") ? 'review' : 'build' };
}

const madeCalls = (body: ChatRequestBody) => (body.messages ?? []).flatMap((m) => (m.tool_calls ?? []).map((c) => c.function?.name ?? ''));
const specOf = (key: string) => `{project-root}/${ARTIFACTS}/spec-${key.split('-').slice(0, 2).join('-')}-${key.split('-').slice(2).join('-')}.md`;

/** What the build and review skills do, scripted: the build waits on a command, then both write the spec with the status they decide. */
async function skills({ body }: { body: ChatRequestBody }): Promise<Reply> {
  const task = taskOf(body);
  if (!task) return reply.text('HALT: no story in the first message');
  const { key, kind } = task;
  const made = madeCalls(body);
  if (made.includes('save_output')) return reply.text(kind === 'build' ? `Story ${key} is built.` : `Story ${key} is reviewed.`);
  if (kind === 'build' && !made.includes('run_command')) return reply.toolCalls([{ name: 'run_command', arguments: { command: `sleep ${SLEEP_S}` } }]);
  const spec =
    kind === 'build'
      ? `---\ntitle: ${key}\nstatus: done\n---\n\n# ${key}\n\nBuilt.\n\n## Auto Run Result\n\nStatus: done\nBlocking condition: none\n`
      : `---\ntitle: ${key}\nstatus: done\n---\n\n# ${key}\n\n### Review Findings\n\n- No findings.\n`;
  return reply.toolCalls([{ name: 'save_output', arguments: { file_path: specOf(key), content: spec } }]);
}

/** The app's modules, loaded only once the caller has set LOG_LEVEL (the logger reads it when it is loaded). */
async function app() {
  const [{ loadConfig }, { LOCAL_CALLER }, { createRuntime, setRuntime }, { ACTIVE_STEPS }, { closeVersionStores }, { putAutopilot, putBuildSettings, startAutopilot }] = await Promise.all([
    import('../lib/core/config'),
    import('../lib/core/access'),
    import('../lib/engine/runtime'),
    import('../lib/engine/autopilot'),
    import('../lib/content/versions'),
    import('../lib/services'),
  ]);
  return { loadConfig, LOCAL_CALLER, createRuntime, setRuntime, ACTIVE_STEPS, closeVersionStores, putAutopilot, putBuildSettings, startAutopilot };
}

async function sprintOnce(maxParallel: number, say: (s: string) => void): Promise<AutopilotSprintFigure> {
  const { loadConfig, LOCAL_CALLER, createRuntime, setRuntime, ACTIVE_STEPS, closeVersionStores, putAutopilot, putBuildSettings, startAutopilot } = await app();
  const repo = await openSourceRepo({ name: 'minimist' });
  const id = path.basename(repo.root);
  await fs.mkdir(path.join(repo.root, ARTIFACTS), { recursive: true });
  await fs.writeFile(path.join(repo.root, ARTIFACTS, 'sprint-status.yaml'), SPRINT);
  for (const key of STORIES) await fs.writeFile(path.join(repo.root, ARTIFACTS, `${key}.md`), `# Story ${key}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a CLI author, I want ${key}.\n`);
  sh(repo.root, ['add', '-A']);
  sh(repo.root, ['commit', '-q', '-m', 'Sprint planning']);
  const model = await startScriptedModel({ script: skills });
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-autopilot-'));
  const config = loadConfig(
    {
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: 'bench',
      OPENAI_MODEL: 'scripted-build',
      BUNDLES_ROOT: path.join(REPO, 'bmad/custom/bundles'),
      CORE_ROOT: path.join(REPO, 'bmad/core'),
      OUTPUT_PATH: path.join(tmp, 'output'),
      DATA_DIR: path.join(tmp, 'data'),
      CONVERSATION_STORE: 'sqlite',
      PROJECTS_ROOT: repo.parent,
    },
    tmp,
  );
  let runtime: Runtime | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    runtime = createRuntime(config, undefined, {});
    await setRuntime(runtime);
    startAutopilot();
    await putBuildSettings(LOCAL_CALLER, id, { enabled: true });
    let maxActive = 0;
    let maxRunning = 0;
    const rt = runtime;
    // Sampled often enough for steps that last seconds, seldom enough not to load the process it measures.
    let sampling = false;
    sampler = setInterval(() => {
      if (sampling) return;
      sampling = true;
      void (async () => {
        const rows = await rt.autopilot.store.stories(id).catch(() => []);
        maxActive = Math.max(maxActive, rows.filter((r) => ACTIVE_STEPS.has(r.step)).length);
        const runs = await rt.runs.store.storyRuns(id).catch(() => []);
        maxRunning = Math.max(maxRunning, new Set(runs.filter((r) => r.status === 'running' || r.status === 'queued').map((r) => r.storyKey)).size);
      })().finally(() => (sampling = false));
    }, 250);
    const loadAvgStart = load();
    const cpu0 = treeCpuSplitMs(process.pid);
    const t0 = performance.now();
    await putAutopilot(LOCAL_CALLER, id, async () => ({ enabled: true, maxParallel, order: 'free' as const }));
    // Until every story is merged, or one stopped short of it (held for a person, stopped), or ten minutes.
    const end = Date.now() + 600_000;
    let rows = await rt.autopilot.store.stories(id);
    let lastSaid = '';
    for (;;) {
      rows = await rt.autopilot.store.stories(id);
      const merged = rows.filter((r) => r.step === 'merged').length;
      const stuck = rows.filter((r) => r.step === 'held' || r.step === 'stopped');
      const now = rows.map((r) => `${r.storyKey.split('-').slice(0, 2).join('-')}:${r.step}`).join(' ');
      if (now !== lastSaid) say(`autopilot ×${maxParallel} ${((performance.now() - t0) / 1000).toFixed(1)} s: ${now}`);
      lastSaid = now;
      if (merged === STORIES.length || stuck.length > 0 || Date.now() > end) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const wallMs = performance.now() - t0;
    const cpu1 = treeCpuSplitMs(process.pid);
    clearInterval(sampler);
    const runs = await rt.runs.store.storyRuns(id, 200);
    const ms = (a?: string | null, b?: string | null) => (a && b ? Date.parse(b) - Date.parse(a) : NaN);
    const median = (xs: number[]) => {
      const v = xs.filter(Number.isFinite).sort((x, y) => x - y);
      return v.length ? v[Math.floor((v.length - 1) / 2)]! : NaN;
    };
    const isReview = (skill: string) => skill.includes('review');
    const buildRunMs = median(runs.filter((r) => !isReview(r.skill)).map((r) => ms(r.startedAt, r.endedAt)));
    const reviewRunMs = median(runs.filter((r) => isReview(r.skill)).map((r) => ms(r.startedAt, r.endedAt)));
    const queuedMs = median(runs.map((r) => ms(r.createdAt, r.startedAt)));
    const problems = rows.filter((r) => r.step !== 'merged').map((r) => `${r.storyKey}: ${r.step}${r.note ? ` (${r.note})` : ''}`);
    if (rows.length < STORIES.length) problems.push(`${STORIES.length - rows.length} stories never taken`);
    return { maxParallel, wallMs, merged: rows.filter((r) => r.step === 'merged').length, maxActive, maxRunning, runs: runs.length, buildRunMs, reviewRunMs, queuedMs, modelRequests: model.chatRequests().length, problems, loadAvgStart, loadAvgEnd: load(), cpuSelfMs: cpu1.ownMs - cpu0.ownMs, cpuChildrenMs: cpu1.underMs - cpu0.underMs };
  } finally {
    clearInterval(sampler);
    await setRuntime(undefined).catch(() => undefined);
    await closeVersionStores(config.dataDir).catch(() => undefined);
    await model.close();
    await fs.rm(tmp, { recursive: true, force: true });
    await fs.rm(repo.parent, { recursive: true, force: true });
  }
}

export async function autopilotFigures(say: (s: string) => void = () => undefined): Promise<AutopilotFigures> {
  // The autopilot's slots are bounded by the runs one process drives at once: enough for three here.
  const saved = { RUNS_CONCURRENCY: process.env.RUNS_CONCURRENCY, AUTOPILOT_TICK_MS: process.env.AUTOPILOT_TICK_MS, AUTH: process.env.AUTH };
  process.env.RUNS_CONCURRENCY = '4';
  process.env.AUTOPILOT_TICK_MS = '200';
  process.env.AUTH = 'off';
  try {
    const parallel = await sprintOnce(3, say);
    say(`autopilot maxParallel 3: ${(parallel.wallMs / 1000).toFixed(1)} s, ${parallel.merged} merged`);
    const serial = await sprintOnce(1, say);
    say(`autopilot maxParallel 1: ${(serial.wallMs / 1000).toFixed(1)} s, ${serial.merged} merged`);
    return { stories: STORIES.length, sleepS: SLEEP_S, runsConcurrency: 4, parallel, serial, ratio: parallel.merged === STORIES.length && serial.merged === STORIES.length ? parallel.wallMs / serial.wallMs : null, cpus: os.cpus().length };
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

export function autopilotMarkdown(f: AutopilotFigures): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const row = (r: AutopilotSprintFigure) =>
    `| ${r.maxParallel} | ${s(r.wallMs)} | ${r.merged} / ${f.stories} | ${r.maxActive} | ${r.maxRunning} | ${r.runs} | ${s(r.buildRunMs)} / ${s(r.reviewRunMs)} / ${s(r.queuedMs)} | ${r.modelRequests} | ${s(r.cpuSelfMs)} / ${s(r.cpuChildrenMs)} | ${r.loadAvgStart.join(' / ')} → ${r.loadAvgEnd.join(' / ')} |`;
  const problems = [...f.parallel.problems.map((p) => `×3 ${p}`), ...f.serial.problems.map((p) => `×1 ${p}`)];
  return [
    `#### 11. Sprint autopilot: ${f.stories} independent stories, each build waiting on \`sleep ${f.sleepS}\` in the sandbox (RUNS_CONCURRENCY ${f.runsConcurrency}, ${f.cpus} CPUs)`,
    '',
    '| maxParallel | wall time | merged | max stories active | max stories with a run | runs | run p50: build / review / queued | model requests | CPU: this process / its children | load average (1 / 5 / 15 min) |',
    '|---:|---:|---:|---:|---:|---:|---|---:|---|---|',
    row(f.parallel),
    row(f.serial),
    '',
    `maxParallel 3 ÷ maxParallel 1: ${f.ratio === null ? 'not comparable (a sprint stopped short of its merges)' : `**${(f.ratio * 100).toFixed(0)} %**`} (goal ≤ 45 %).${problems.length ? ` Not merged: ${problems.join('; ')}.` : ''}`,
  ].join('\n');
}

if (require.main === module) {
  process.env.LOG_LEVEL ??= 'silent';
  autopilotFigures((m) => process.stderr.write(`${m}\n`))
    .then((f) => {
      console.log(JSON.stringify(f, null, 2));
      console.log(autopilotMarkdown(f));
    })
    .catch((e: unknown) => {
      process.stderr.write(`bench autopilot failed: ${(e as Error).stack ?? e}\n`);
      process.exit(1);
    });
}
