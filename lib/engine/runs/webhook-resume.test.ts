import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import os from 'node:os';
import path from 'node:path';
import type { ChatDeps } from '../chat';
import { conversationDatabase } from '../../store/conversations/database';
import { encodeHolder } from '../../store/db/lease';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';
import { RunService, type RunSettings } from './service';
import { SqlRunStore } from './sql-store';
import type { RunStore, WebhookOutcome } from './types';
import { signature } from './webhook';

/**
 * A run's end reaches its webhook even when the process that ended it stopped before it could
 * deliver: the next start delivers it, once, to a real HTTP server this test owns.
 */

// These cases queue no run: the chat service a run would be driven through is never reached.
const chat = {} as ChatDeps;
const settings: RunSettings = {
  concurrency: 1,
  maxAnswers: 1,
  leaseMs: 60_000,
  heartbeatMs: 10_000,
  pollMs: 60_000,
  webhook: { attempts: 3, backoffMs: 20, timeoutMs: 10_000, allowPrivate: true },
};
const SECRET = 'whsec-test';

interface Receiver {
  url: string;
  bodies: { body: string; signature: string | undefined }[];
  /** While set, requests are held unanswered. */
  hold: boolean;
  close(): Promise<void>;
}

async function receiver(): Promise<Receiver> {
  const held: http.ServerResponse[] = [];
  const r: Receiver = { url: '', bodies: [], hold: false, close: async () => undefined };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      r.bodies.push({ body, signature: req.headers['x-signature'] as string | undefined });
      if (r.hold) held.push(res);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  r.close = async () => {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return r;
}

async function until<T>(what: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await what();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const tmpDirs: string[] = [];
let pgDatabase: Promise<TestDatabase> | null = null;
afterAll(async () => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
  if (pgDatabase) await (await pgDatabase).drop();
});

const targets: [string, () => Promise<{ file: string } | { url: string }>][] = [
  [
    'SQLite',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'runs-webhook-'));
      tmpDirs.push(dir);
      return { file: path.join(dir, 'conversations.db') };
    },
  ],
  [
    'Postgres',
    async () => {
      pgDatabase ??= createTestDatabase('runs_webhook');
      return { url: (await pgDatabase).url };
    },
  ],
];

describe.each(targets)('webhooks across a restart on %s', (_name, target) => {
  let where: { file: string } | { url: string };
  let hook: Receiver;
  const open: RunStore[] = [];
  const services: RunService[] = [];

  /** A store on its own handle, ready (see store-contract.test.ts on SQLite handles migrating). */
  async function store(): Promise<RunStore> {
    const database = conversationDatabase(where).open();
    await database.ready();
    const s = new SqlRunStore(database);
    open.push(s);
    return s;
  }

  function service(s: RunStore, leaseMs = settings.leaseMs): RunService {
    const svc = new RunService({ chat, store: s, settings: { ...settings, leaseMs } });
    services.push(svc);
    return svc;
  }

  /** A run that ended with a webhook its process never delivered. */
  async function endedRun(s: RunStore, id: string): Promise<void> {
    await s.create({ id, projectId: 'p1', ownerId: 'u1', skill: 'bmad-prd', agentId: 'bmad-agent-pm', message: 'go', contract: { skill: 'bmad-prd', flag: 'headless: true', intentRequired: true, files: [] }, webhook: { url: hook.url, secret: SECRET } });
    const { lease } = (await s.claim('someone', new Date(Date.now() + 60_000).toISOString()))!;
    expect(await s.finish(lease, { status: 'complete', result: { status: 'complete', intent: 'create' }, artifacts: [] })).toBe(true);
  }

  async function outcome(s: RunStore, id: string): Promise<WebhookOutcome | undefined> {
    return (await s.get(id))?.webhookOutcome;
  }

  beforeEach(async () => {
    where = await target();
    if ('url' in where) {
      // One Postgres database for the file: each case starts with no runs.
      const database = conversationDatabase(where).open();
      await database.ready();
      await sql`DELETE FROM runs`.execute(database.db);
      await database.close();
    }
    hook = await receiver();
  });
  afterEach(async () => {
    for (const svc of services.splice(0)) await svc.close();
    for (const s of open.splice(0)) await s.close();
    await hook.close();
  });

  it('a delivery cut off by a close is made by the next start', async () => {
    const first = await store();
    await endedRun(first, 'run_cut');
    // The receiver takes the first POST and never answers it: the close comes mid-delivery.
    hook.hold = true;
    const before = service(first);
    before.start();
    await until(() => hook.bodies.length === 1);
    await before.close();
    const check = await store();
    expect(await outcome(check, 'run_cut')).toBeUndefined();
    expect(await check.awaitingWebhook('')).toContain('run_cut');

    hook.hold = false;
    const after = service(await store());
    after.start();
    const done = await until(() => outcome(check, 'run_cut'));
    expect(done).toMatchObject({ delivered: true, attempts: 1, status: 204 });
    expect(hook.bodies).toHaveLength(2);
    const last = hook.bodies[1];
    expect(last.signature).toBe(signature(last.body, SECRET));
    expect(JSON.parse(last.body)).toMatchObject({ id: 'run_cut', status: 'complete', result: { status: 'complete' }, webhook: { url: hook.url, outcome: null } });
  });

  it('a delivery a killed process had taken is made by the next start', async () => {
    const s = await store();
    await endedRun(s, 'run_killed');
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    const tag = encodeHolder({ host: os.hostname(), pid: dead, nonce: 'gone', started: null });
    // Taken by a process that then died, its time not yet run out.
    expect(await s.claimWebhook('run_killed', tag, new Date(Date.now() + 3_600_000).toISOString(), new Date().toISOString(), () => false)).not.toBeNull();
    service(await store()).start();
    expect(await until(() => outcome(s, 'run_killed'))).toMatchObject({ delivered: true, attempts: 1 });
    expect(hook.bodies).toHaveLength(1);
  });

  it('two instances starting together deliver it once', async () => {
    const s = await store();
    await endedRun(s, 'run_once');
    const a = service(await store());
    const b = service(await store());
    a.start();
    b.start();
    expect(await until(() => outcome(s, 'run_once'))).toMatchObject({ delivered: true });
    // Time for both starts to have looked at it, and for a second delivery to show.
    await new Promise((r) => setTimeout(r, 300));
    await Promise.all(services.map((svc) => svc.close()));
    expect(hook.bodies).toHaveLength(1);
  });

  it('a delivery under way on another host is left to it while its time runs, on a shared database', async () => {
    const s = await store();
    await endedRun(s, 'run_elsewhere');
    const tag = encodeHolder({ host: 'another-host.invalid', pid: 1, nonce: 'n', started: null });
    await s.claimWebhook('run_elsewhere', tag, new Date(Date.now() + 3_600_000).toISOString(), new Date().toISOString(), () => false);
    const svc = service(await store());
    svc.start();
    if ('url' in where) {
      // Postgres: that host may be delivering it right now.
      await new Promise((r) => setTimeout(r, 500));
      await svc.close();
      expect(hook.bodies).toHaveLength(0);
      expect(await outcome(s, 'run_elsewhere')).toBeUndefined();
    } else {
      // An SQLite file is shared on one host only: another host's holder is a past incarnation of this one.
      expect(await until(() => outcome(s, 'run_elsewhere'))).toMatchObject({ delivered: true });
    }
  });

  it('takes over a delivery whose holder on another host ran out of time, without waiting for a restart', async () => {
    const s = await store();
    await endedRun(s, 'run_stalled');
    const tag = encodeHolder({ host: 'another-host.invalid', pid: 1, nonce: 'n', started: null });
    // That host's claim runs out a moment after this instance started.
    await s.claimWebhook('run_stalled', tag, new Date(Date.now() + 400).toISOString(), new Date().toISOString(), () => false);
    const svc = service(await store(), 300);
    svc.start();
    expect(await until(() => outcome(s, 'run_stalled'))).toMatchObject({ delivered: true });
    expect(hook.bodies).toHaveLength(1);
  });
});
