/**
 * The command line for CI: starts a headless run of a BMAD skill on a bmad-orchestrator server
 * and, with --wait, waits for its end.
 *
 *   npm run bmad -- run --url URL --project P --skill S [--intent I] [--input FILE] [--model M] [--wait]
 *
 * BMAD_TOKEN, when set, goes as `Authorization: Bearer <token>` (nothing is sent without it).
 * Prints the run as JSON (its `result` is the skill's JSON status). Exit codes: 0 complete,
 * 10 partial, 20 blocked, 1 failed, cancelled or interrupted (or any error), 2 bad usage;
 * without --wait, 0 once the run is queued.
 */
import fs from 'node:fs/promises';

const USAGE = 'usage: npm run bmad -- run --url URL --project P --skill S [--intent I] [--input FILE] [--model M] [--wait] [--timeout SECONDS]';

export const EXIT = { complete: 0, partial: 10, blocked: 20, failed: 1, cancelled: 1, interrupted: 1, usage: 2 } as const;

interface Args {
  url: string;
  project: string;
  skill: string;
  intent?: string;
  input?: string;
  model?: string;
  wait: boolean;
  timeoutMs: number;
}

class UsageError extends Error {}

function parseArgs(argv: string[]): Args {
  const [command, ...rest] = argv;
  if (command !== 'run') throw new UsageError(command ? `unknown command "${command}"` : 'no command');
  const out: Record<string, string | boolean> = {};
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument "${a}"`);
    const [name, inline] = a.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if (name === 'wait') {
      out.wait = true;
      continue;
    }
    const value = inline ?? rest[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    out[name] = value;
  }
  for (const k of Object.keys(out)) if (!['url', 'project', 'skill', 'intent', 'input', 'model', 'wait', 'timeout'].includes(k)) throw new UsageError(`unknown option --${k}`);
  for (const k of ['url', 'project', 'skill']) if (typeof out[k] !== 'string' || !out[k]) throw new UsageError(`--${k} is required`);
  const timeout = out.timeout === undefined ? 3600 : Number(out.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError('--timeout must be a number of seconds');
  return {
    url: String(out.url).replace(/\/+$/, ''),
    project: String(out.project),
    skill: String(out.skill),
    ...(typeof out.intent === 'string' ? { intent: out.intent } : {}),
    ...(typeof out.input === 'string' ? { input: out.input } : {}),
    ...(typeof out.model === 'string' ? { model: out.model } : {}),
    wait: out.wait === true,
    timeoutMs: timeout * 1000,
  };
}

function headers(): Record<string, string> {
  const token = process.env.BMAD_TOKEN?.trim();
  return { 'content-type': 'application/json', accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
}

async function call(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { ...init, headers: headers() });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // a proxy's HTML error page: shown as text
  }
  return { status: res.status, body };
}

function failWith(status: number, body: any): never {
  const message = body && typeof body === 'object' ? `${body.code ?? 'error'}: ${body.error ?? JSON.stringify(body)}` : String(body).slice(0, 500);
  const extra = body && typeof body === 'object' && Array.isArray(body.skills) ? `\nskills that can run headless: ${body.skills.join(', ')}` : '';
  throw new Error(`HTTP ${status} ${message}${extra}`);
}

const TERMINAL = new Set(['complete', 'partial', 'blocked', 'failed', 'cancelled', 'interrupted']);

async function main(argv: string[]): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`bmad: ${e.message}\n${USAGE}\n`);
    return EXIT.usage;
  }
  const inputs = args.input ? await fs.readFile(args.input, 'utf8') : '';
  if (!inputs.trim()) {
    process.stderr.write('bmad: the inputs are empty; give the skill its inputs with --input FILE\n');
    return EXIT.usage;
  }
  const created = await call(`${args.url}/api/runs`, {
    method: 'POST',
    body: JSON.stringify({ projectId: args.project, skill: args.skill, inputs, ...(args.intent ? { intent: args.intent } : {}), ...(args.model ? { model: args.model } : {}) }),
  });
  if (created.status !== 202) failWith(created.status, created.body);
  const runId: string = created.body.data.runId;
  process.stderr.write(`bmad: run ${runId} queued (${created.body.data.skill} via ${created.body.data.agentId})\n`);
  if (!args.wait) {
    process.stdout.write(`${JSON.stringify({ runId, status: created.body.data.status })}\n`);
    return 0;
  }
  const deadline = Date.now() + args.timeoutMs;
  let last = '';
  for (;;) {
    const got = await call(`${args.url}/api/runs/${encodeURIComponent(runId)}`);
    if (got.status !== 200) failWith(got.status, got.body);
    const run = got.body.data;
    if (run.status !== last) process.stderr.write(`bmad: ${run.status}\n`);
    last = run.status;
    if (TERMINAL.has(run.status)) {
      process.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
      if (run.error) process.stderr.write(`bmad: ${run.error.code}: ${run.error.message}\n`);
      return EXIT[run.status as keyof typeof EXIT] ?? 1;
    }
    if (Date.now() > deadline) {
      process.stderr.write(`bmad: gave up waiting after ${args.timeoutMs / 1000} s; the run goes on (GET /api/runs/${runId})\n`);
      return 1;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`bmad: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
