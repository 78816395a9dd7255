/**
 * The sprint autopilot's parallelism: a sprint of six independent stories on a real project with
 * BMAD 6.12 (minimist from the npm registry, BMAD's own install), each story built by a scripted
 * `bmad-build-auto` whose build waits on a 5 s command in the sandbox, then reviewed (approved) and
 * merged one at a time; wall time from enabling the autopilot to the sixth merge, with
 * `maxParallel` 1 and 3 (a fresh project each). Figures only; not a timed test.
 *
 *   npx tsx bench/autopilot.ts      (also section 11 of `npm run bench`; --only-autopilot)
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../lib/core/config';
import { MemoryConversationStore } from '../lib/store/conversations';
import { createRuntime, setRuntime } from '../lib/engine/runtime';
import { startAutopilot } from '../lib/services/autopilot';
import { reply, startScriptedModel, type ChatMessage, type ChatRequestBody, type Reply } from '../test/scripted-model';
import { openSourceRepo } from '../test/open-source-repo';

export interface AutopilotFigures {
  stories: number;
  commandS: number;
  serialMs: number;
  parallelMs: number;
  parallel: number;
  ratio: number;
}

const ARTIFACTS = '_bmad-output/implementation-artifacts';
const KEYS = ['1-1-one', '1-2-two', '1-3-three', '2-1-four', '2-2-five', '2-3-six'];
const SLEEP_S = 5;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

/** bmad-build-auto (a 5 s command, then the spec `done`) and bmad-code-review (approves), as the scripted model plays them. */
function skills() {
  return ({ body }: { body: ChatRequestBody }): Reply => {
    const messages = body.messages ?? [];
    const first = messages.find((m: ChatMessage) => m.role === 'user' && /Story: \d+-\d+-/.test(textOf(m.content)));
    if (!first) return reply.text('HALT');
    const key = /Story: (\d+-\d+-[a-z0-9-]+)/.exec(textOf(first.content))![1]!;
    const review = messages.some((m) => m.role !== 'system' && textOf(m.content).includes('bmad-code-review'));
    const made = messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function?.name ?? ''));
    const spec = `{project-root}/${ARTIFACTS}/spec-${key.split('-').slice(0, 2).join('-')}-${key.split('-')[2]}.md`;
    if (made.includes('save_output')) return reply.text(`${key}: done.`);
    if (review) {
      if (!made.includes('read_file')) return reply.toolCalls([{ name: 'read_file', arguments: { file_path: spec } }]);
      return reply.toolCalls([{ name: 'save_output', arguments: { file_path: spec, content: `---\nstatus: done\n---\n\n### Review Findings\n\n- No findings.\n` } }]);
    }
    if (!made.includes('run_command')) return reply.toolCalls([{ name: 'run_command', arguments: { command: `sleep ${SLEEP_S} && mkdir -p src && echo ${key} > src/${key}.txt` } }]);
    return reply.toolCalls([{ name: 'save_output', arguments: { file_path: spec, content: `---\nstatus: done\n---\n\n# ${key}\n\nStatus: done\n` } }]);
  };
}

async function sprint(maxParallel: number, modelUrl: string, say: (s: string) => void): Promise<number> {
  const repo = await openSourceRepo({ name: 'minimist' });
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-autopilot-'));
  try {
    const { execFileSync } = await import('node:child_process');
    const git = (args: string[]) => execFileSync('git', args, { cwd: repo.root, env: { PATH: process.env.PATH, HOME: '/nonexistent', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 'B', GIT_AUTHOR_EMAIL: 'b@x', GIT_COMMITTER_NAME: 'B', GIT_COMMITTER_EMAIL: 'b@x' } as unknown as NodeJS.ProcessEnv });
    await fs.mkdir(path.join(repo.root, ARTIFACTS), { recursive: true });
    const lines = ['development_status:', '  epic-1: in-progress', ...KEYS.slice(0, 3).map((k) => `  ${k}: ready-for-dev`), '  epic-2: in-progress', ...KEYS.slice(3).map((k) => `  ${k}: ready-for-dev`)];
    await fs.writeFile(path.join(repo.root, ARTIFACTS, 'sprint-status.yaml'), `${lines.join('\n')}\n`);
    for (const k of KEYS) await fs.writeFile(path.join(repo.root, ARTIFACTS, `${k}.md`), `# Story ${k}\n\nStatus: ready-for-dev\n`);
    git(['add', '-A']);
    git(['commit', '-q', '-m', 'Sprint planning']);
    const config = loadConfig(
      {
        OPENAI_BASE_URL: modelUrl,
        OPENAI_MODEL: 'scripted',
        OPENAI_API_KEY: 'bench',
        PROJECTS_ROOT: repo.parent,
        OUTPUT_PATH: path.join(tmp, 'output'),
        DATA_DIR: path.join(tmp, 'data'),
        CONVERSATION_STORE: 'memory',
      },
      tmp,
    );
    const runtime = createRuntime(config, new MemoryConversationStore(), { auth: { enabled: false } as never });
    await setRuntime(runtime);
    startAutopilot();
    const id = path.basename(repo.root);
    await runtime.workspaces.putBuild(id, { enabled: true });
    const t0 = performance.now();
    const state = await runtime.autopilot.store.putSettings(id, { enabled: true, maxParallel, order: 'free', reviewSkill: null, reviewModel: null, maxReviewRounds: 2, testCommand: null, merge: { onRed: 'decide' } }, { id: 'local', name: 'local' });
    void state;
    runtime.autopilot.kick();
    for (;;) {
      const rows = await runtime.autopilot.store.stories(id);
      if (rows.filter((r) => r.step === 'merged').length === KEYS.length) break;
      const stuck = rows.find((r) => r.step === 'held' || r.step === 'stopped');
      if (stuck) throw new Error(`${stuck.storyKey} is ${stuck.step}: ${stuck.note ?? ''}`);
      if (performance.now() - t0 > 600_000) throw new Error('the sprint did not finish in 10 minutes');
      await new Promise((r) => setTimeout(r, 100));
    }
    const ms = performance.now() - t0;
    if (process.env.BENCH_TIMELINE) {
      const start = Date.now() - ms;
      const at = (iso?: string) => (iso ? ((Date.parse(iso) - start) / 1000).toFixed(1) : '-');
      for (const r of (await runtime.runs.store.storyRuns(id)).reverse()) say(`  ${r.storyKey} ${r.skill} created ${at(r.createdAt)} started ${at(r.startedAt)} ended ${at(r.endedAt)}`);
      for (const w of await runtime.workspaces.store.list(id)) say(`  ${w.name} created ${at(w.createdAt)} merged ${at(w.mergedAt)}`);
    }
    say(`autopilot: maxParallel ${maxParallel}: ${(ms / 1000).toFixed(1)} s`);
    await setRuntime(undefined);
    return ms;
  } finally {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    await fs.rm(repo.parent, { recursive: true, force: true }).catch(() => undefined);
  }
}

export async function autopilotFigures(say: (s: string) => void = () => undefined): Promise<AutopilotFigures> {
  const saved = { RUNS_CONCURRENCY: process.env.RUNS_CONCURRENCY, AUTOPILOT_TICK_MS: process.env.AUTOPILOT_TICK_MS, AUTH: process.env.AUTH };
  process.env.RUNS_CONCURRENCY = '6';
  process.env.AUTOPILOT_TICK_MS = '200';
  const model = await startScriptedModel({ script: skills() });
  try {
    const serialMs = await sprint(1, model.url, say);
    const parallelMs = await sprint(3, model.url, say);
    return { stories: KEYS.length, commandS: SLEEP_S, serialMs, parallelMs, parallel: 3, ratio: parallelMs / serialMs };
  } finally {
    await model.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

export function autopilotMarkdown(f: AutopilotFigures): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return [
    `#### 11. Sprint autopilot (${f.stories} independent stories, each build waiting on a ${f.commandS} s command; review, merge one at a time)`,
    '',
    '| maxParallel | wall time |',
    '|---:|---:|',
    `| 1 | ${s(f.serialMs)} |`,
    `| ${f.parallel} | ${s(f.parallelMs)} |`,
    '',
    `${f.parallel} ÷ 1: **${(f.ratio * 100).toFixed(0)} %** (goal ≤ 45 %).`,
  ].join('\n');
}

if (require.main === module) {
  autopilotFigures((s) => process.stderr.write(`${s}\n`))
    .then((f) => process.stdout.write(`${autopilotMarkdown(f)}\n`))
    .catch((e: unknown) => {
      process.stderr.write(`${(e as Error).stack ?? e}\n`);
      process.exit(1);
    });
}
