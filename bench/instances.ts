/**
 * Section 8 of `npm run bench`: the same plain turns through nginx to one instance, then to two
 * (round robin), both on one Postgres database and one shared folder; same machine, same run.
 * On 2 cores the model, the load generator, nginx and Postgres share the cores with the servers,
 * so the ratio is reported, never asserted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { post, postJson } from './client';
import { makeFolders, startApp, treeCpuMs, type AppServer, type BenchModel } from './proc';
import { fmt, summary, type Summary } from './stats';
import { startNginx } from '../e2e/nginx';
import { createTestDatabase } from '../test/postgres';

export interface InstancesRow {
  instances: number;
  concurrency: number;
  turns: number;
  errors: number;
  firstError?: string;
  wallMs: number;
  turnsPerSecond: number;
  turnWallMs: Summary;
  /** user + sys CPU of every server process tree over the phase, per turn. */
  cpuPerTurnMs: number;
}

export interface InstancesFigures {
  rows: InstancesRow[];
  /** turns/s with two instances ÷ with one. */
  ratio: number;
}

const AGENT = 'product-lead';

async function load(url: string, servers: AppServer[], concurrency: number, turns: number, perConversation: number, tag: string): Promise<InstancesRow> {
  const walls: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let next = 0;
  const cpu = () => servers.reduce((sum, s) => sum + ((c) => c.userMs + c.sysMs)(treeCpuMs(s.pid)), 0);
  const cpu0 = cpu();
  const t0 = performance.now();
  const worker = async () => {
    for (;;) {
      let conversationId: string | undefined;
      for (let k = 0; k < perConversation; k++) {
        const i = next++;
        if (i >= turns) return;
        const t = await post(url, '/api/chat', { agentId: AGENT, message: `bench#${tag}-${i} Please answer in one or two sentences.`, stream: true, ...(conversationId ? { conversationId } : {}) });
        if (t.error) {
          errors++;
          firstError ??= t.error;
        } else walls.push(t.wallMs);
        conversationId ??= t.conversationId;
        if (!conversationId) break;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const wallMs = performance.now() - t0;
  return {
    instances: servers.length,
    concurrency,
    turns,
    errors,
    firstError,
    wallMs,
    turnsPerSecond: (turns * 1000) / wallMs,
    turnWallMs: summary(walls),
    cpuPerTurnMs: (cpu() - cpu0) / Math.max(1, turns),
  };
}

export async function instancesFigures(
  appDir: string,
  model: BenchModel,
  env: Record<string, string>,
  opts: { concurrency: number; turns: number; perConversation: number },
  say: (s: string) => void,
): Promise<InstancesFigures> {
  const database = await createTestDatabase('bench');
  const folders = await makeFolders('bench-instances');
  const servers: AppServer[] = [];
  const proxies: { stop(): Promise<void> }[] = [];
  try {
    await postJson(`${model.control}/mode`, { mode: 'plain' });
    const shared = { ...env, DATABASE_URL: database.url, AUTH: 'off' };
    servers.push(...(await Promise.all([startApp(appDir, folders, shared), startApp(appDir, folders, shared)])));
    const ports = servers.map((s) => Number(new URL(s.url).port));
    const one = await startNginx(path.join(folders.root, 'nginx-1'), ports.slice(0, 1), { keepalive: 64 });
    proxies.push(one);
    // Both warm (JIT, caches, pool connections) before anything is timed.
    await Promise.all([load(one.url, servers.slice(0, 1), 4, 60, 3, 'warm-a'), load(servers[1]!.url, servers.slice(1), 4, 60, 3, 'warm-b')]);
    const rows: InstancesRow[] = [];
    rows.push(await load(one.url, servers.slice(0, 1), opts.concurrency, opts.turns, opts.perConversation, 'one'));
    say(`instances: 1 behind nginx, ${rows[0]!.turnsPerSecond.toFixed(0)} turns/s, errors ${rows[0]!.errors}`);
    await one.stop();
    const two = await startNginx(path.join(folders.root, 'nginx-2'), ports, { keepalive: 64 });
    proxies.push(two);
    rows.push(await load(two.url, servers, opts.concurrency, opts.turns, opts.perConversation, 'two'));
    say(`instances: 2 behind nginx, ${rows[1]!.turnsPerSecond.toFixed(0)} turns/s, errors ${rows[1]!.errors}`);
    return { rows, ratio: rows[1]!.turnsPerSecond / rows[0]!.turnsPerSecond };
  } finally {
    for (const p of proxies) await p.stop().catch(() => undefined);
    await Promise.all(servers.map((s) => s.stop()));
    await database.drop().catch(() => undefined);
    fs.rmSync(folders.root, { recursive: true, force: true });
  }
}

export function instancesMarkdown(f: InstancesFigures): string {
  const lines = [
    '| instances (Postgres, nginx round robin) | conc. | turns | turns/s | turn wall p50 | p99 | server CPU/turn (all instances) | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...f.rows.map(
      (r) =>
        `| ${r.instances} | ${r.concurrency} | ${r.turns} | ${r.turnsPerSecond.toFixed(0)} | ${fmt(r.turnWallMs.median)} ms | ${fmt(r.turnWallMs.p99)} ms | ${fmt(r.cpuPerTurnMs)} ms | ${r.errors}${r.firstError ? ` (${r.firstError.slice(0, 80)})` : ''} |`,
    ),
  ];
  return (
    '#### 8. Many instances\n\n' +
    lines.join('\n') +
    `\n\nTwo instances give **${f.ratio.toFixed(2)}×** the turns/s of one, on this machine: the scripted model, the load generator, nginx and Postgres run on the same cores as the servers.`
  );
}
