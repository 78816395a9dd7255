import { existsSync } from 'node:fs';
import { GET as health } from '@/app/api/health/route';
import { forgetCapabilities } from '@/lib/sandbox/scripts';
import { get, startHarness, type Harness } from './harness';

/** /api/health says what the host can do for the method's scripts, besides the model. */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  forgetCapabilities();
});

const capabilities = async (env: Record<string, string>) => {
  h = await startHarness(env);
  const body = await (await health(get('/api/health'))).json();
  expect(body).toMatchObject({ success: true, data: { status: 'ok', llm: { configured: true } } });
  return body.data.capabilities;
};

const hostReady = existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/python3');

const netReady = hostReady && existsSync('/usr/bin/slirp4netns') && existsSync('/usr/bin/nsenter');

(hostReady || process.env.CI ? it : it.skip)('scripts and sandbox are on where bubblewrap and python3 are installed; setup has its network with slirp4netns', async () => {
  expect(await capabilities({})).toEqual({ scripts: true, sandbox: true, setupNetwork: netReady || !!process.env.CI });
});

it('all are off without bubblewrap', async () => {
  expect(await capabilities({ SANDBOX_BWRAP: '/nonexistent/bwrap' })).toEqual({ scripts: false, sandbox: false, setupNetwork: false });
});

(hostReady || process.env.CI ? it : it.skip)('scripts are off without python3, the sandbox still on', async () => {
  // Commands (and setup) fall back to /usr/bin/python3 for their helpers.
  expect(await capabilities({ SCRIPT_PYTHON: '/usr/nonexistent/python3' })).toEqual({ scripts: false, sandbox: true, setupNetwork: netReady || !!process.env.CI });
});

describe('the store', () => {
  it('is reachable with its migrations current (SQLite)', async () => {
    h = await startHarness({}, { store: 'sqlite' });
    const res = await health(get('/api/health'));
    expect(res.status).toBe(200);
    const { data } = await res.json();
    expect(data.store).toEqual({ kind: 'sqlite', ok: true, migrations: { applied: expect.any(Number), latest: data.store.migrations.applied, current: true } });
  });

  it('is 503 when the database cannot be reached (Postgres)', async () => {
    h = await startHarness({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' }, { store: 'sqlite' });
    const res = await health(get('/api/health'));
    expect(res.status).toBe(503);
    const { data } = await res.json();
    expect(data).toMatchObject({ status: 'unavailable', store: { kind: 'postgres', ok: false, migrations: { current: false } } });
  });
});
