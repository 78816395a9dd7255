/**
 * Operator check before a rollout: against the configured endpoint (OPENAI_BASE_URL /
 * OPENAI_API_KEY / OPENAI_MODEL), verify that the tool schemas are accepted and that one real
 * tool call round trip works. Prints timings; exits non-zero with the reason on failure.
 *
 * With `--server URL` (or BMAD_URL) it first checks that the running server answers and accepts
 * the API token of `--token` (or BMAD_TOKEN): the server has accounts on by default, and every
 * API call of a script carries `Authorization: Bearer <token>`.
 */
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/core/config';
import { createLlmClient } from '../lib/model/llm';
import { runTurn } from '../lib/model/loop';
import { runToolCall, toolDefinitions } from '../lib/engine/tools';
import type { ToolContext } from '../lib/engine/tools/types';

function line(label: string, value: string) {
  process.stdout.write(`${label.padEnd(28)} ${value}\n`);
}

function option(name: string, env: string): string | undefined {
  const args = process.argv.slice(2);
  const at = args.indexOf(`--${name}`);
  const given = at >= 0 ? args[at + 1] : args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  return given || process.env[env] || undefined;
}

/** The server's health and who the token is; a message on failure. */
async function checkServer(url: string, token: string | undefined): Promise<string | null> {
  const base = url.replace(/\/$/, '');
  const health = await fetch(`${base}/api/health`).catch(() => null);
  if (!health?.ok) return `the server at ${base} does not answer /api/health`;
  const me = await fetch(`${base}/api/users/me`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  if (me.status === 401) return token ? 'the server refused the token (revoked, expired or mistyped)' : 'the server has accounts on: pass --token (or BMAD_TOKEN) with an API token';
  if (!me.ok) return `GET /api/users/me answered ${me.status}`;
  const who = ((await me.json()) as { data?: { name?: string; email?: string; kind?: string } }).data;
  line('server', `${new URL(base).host} as ${who?.kind === 'local' ? 'the single user (AUTH=off)' : (who?.email ?? who?.name ?? '?')}`);
  return null;
}

async function main(): Promise<number> {
  const server = option('server', 'BMAD_URL');
  if (server) {
    const problem = await checkServer(server, option('token', 'BMAD_TOKEN'));
    if (problem) {
      process.stderr.write(`smoke: FAILED — ${problem}\n`);
      return 1;
    }
  }
  const config = loadConfig();
  if (!config.llm.configured) {
    process.stderr.write('smoke: no model configured. Set OPENAI_API_KEY and/or OPENAI_BASE_URL, and OPENAI_MODEL.\n');
    return 2;
  }
  line('endpoint', config.llm.baseURL ? new URL(config.llm.baseURL).host : 'api.openai.com');
  line('model', config.llm.model);

  const token = `smoke-${crypto.randomBytes(4).toString('hex')}`;
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-smoke-'));
  try {
    const bundleRoot = path.join(tmp, 'bundle');
    await fs.mkdir(bundleRoot, { recursive: true });
    await fs.writeFile(path.join(bundleRoot, 'smoke.txt'), `The smoke token is ${token}.\n`);
    const ctx: ToolContext = {
      conversationId: 'smoke',
      agentId: 'smoke',
      bundleRoot,
      coreRoot: path.join(tmp, 'core'),
      projectRoot: tmp,
      outputRoot: path.join(tmp, 'output'),
      variables: {},
      limits: config.limits,
    };
    const client = createLlmClient(config.llm);
    const controller = new AbortController();
    const started = performance.now();
    let firstToken = 0;
    const calls: string[] = [];
    let answer = '';
    let failure = '';
    for await (const event of runTurn({
      client,
      model: config.llm.model,
      messages: [
        { role: 'system', content: 'You are a test agent. Use the tools you are given; never guess file contents.' },
        { role: 'user', content: 'Call the read_file tool with file_path "{bundle-root}/smoke.txt", then reply with the smoke token it contains and nothing else.' },
      ],
      tools: { definitions: toolDefinitions(), execute: (call, signal) => runToolCall(call, { ...ctx, signal }) },
      maxIterations: 4,
      signal: controller.signal,
      timeoutMs: Number(process.env.SMOKE_TIMEOUT_MS ?? 60_000),
    })) {
      if (event.type === 'text-delta' && !firstToken) firstToken = performance.now();
      if (event.type === 'text-delta') answer += event.delta;
      if (event.type === 'tool-call') calls.push(event.call.name);
      if (event.type === 'error') failure = `${event.error.code}: ${event.error.message}`;
      if (event.type === 'finish') {
        line('model round trips', String(event.iterations));
        line('tokens (prompt/completion)', `${event.usage.promptTokens}/${event.usage.completionTokens}`);
      }
    }
    const total = performance.now() - started;
    line('tool schemas', failure.includes('400') ? 'REJECTED' : `accepted (${toolDefinitions().length} tools)`);
    line('tool calls', calls.join(', ') || 'none');
    line('time to first text token', firstToken ? `${Math.round(firstToken - started)} ms` : 'n/a');
    line('total', `${Math.round(total)} ms`);
    if (failure) {
      process.stderr.write(`smoke: FAILED — ${failure}\n`);
      return 1;
    }
    if (!calls.includes('read_file')) {
      process.stderr.write('smoke: FAILED — the model answered without calling read_file; tool calling does not work with this model/endpoint.\n');
      return 1;
    }
    if (!answer.includes(token)) {
      process.stderr.write(`smoke: FAILED — the tool ran but the answer does not contain the token from the file (answer: ${JSON.stringify(answer.slice(0, 200))}).\n`);
      return 1;
    }
    process.stdout.write('smoke: OK — tool schemas accepted and a read_file round trip answered correctly.\n');
    return 0;
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`smoke: FAILED — ${(e as Error).message}\n`);
    process.exit(1);
  },
);
