import fs from 'node:fs';
import path from 'node:path';
import { makeRepo, tempDir } from '../../../test/git-repo';
import { spawnFromHelper, type SpawnRequest } from './spawner';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function repo(): string {
  const base = tempDir('git-spawner');
  dirs.push(base);
  return makeRepo(path.join(base, 'r'), { 'a.txt': 'a\n' });
}

const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LANG: 'C' };
const req = (cwd: string, args: string[], more: Partial<SpawnRequest> = {}): SpawnRequest => ({ args, cwd, env: ENV, timeoutMs: 10_000, maxBytes: 1 << 20, maxStderr: 64 * 1024, ...more });

/** This process's children started as `node -e …`: helpers (other test files' too, when they share the process, until they go idle). */
function allHelpers(): number[] {
  const pids: number[] = [];
  for (const t of fs.readdirSync('/proc/self/task')) {
    for (const p of fs.readFileSync(`/proc/self/task/${t}/children`, 'utf8').split(' ').filter(Boolean)) {
      const argv = fs.readFileSync(`/proc/${p}/cmdline`, 'latin1').split('\0');
      if (argv[0] === process.execPath && argv[1] === '-e') pids.push(Number(p));
    }
  }
  return pids;
}

/** Those started since this file began: its own. */
const before = allHelpers();
const helpers = () => allHelpers().filter((p) => !before.includes(p));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('git spawner', () => {
  it('answers as git does: exit code, bytes of stdout, stderr, stdin given as text or bytes', async () => {
    const r = repo();
    const head = await spawnFromHelper(req(r, ['rev-parse', 'HEAD']));
    expect(head.code).toBe(0);
    expect(head.stdout.toString().trim()).toMatch(/^[0-9a-f]{40}$/);
    const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x0a]);
    const blob = (await spawnFromHelper(req(r, ['hash-object', '-w', '--stdin'], { input: bytes }))).stdout.toString().trim();
    const back = await spawnFromHelper(req(r, ['cat-file', 'blob', blob]));
    expect(Buffer.compare(back.stdout, bytes)).toBe(0);
    const text = await spawnFromHelper(req(r, ['hash-object', '--stdin'], { input: 'é\n' }));
    expect(text.stdout.toString().trim()).toBe((await spawnFromHelper(req(r, ['hash-object', '--stdin'], { input: Buffer.from('é\n') }))).stdout.toString().trim());
    const bad = await spawnFromHelper(req(r, ['rev-parse', '--verify', 'no-such-ref']));
    expect(bad.code).toBe(128);
    expect(bad.stderr.toString()).toContain('fatal');
  });

  it('cuts stdout at the cap, kills the whole process group at the time limit, and refuses a folder that is not there', async () => {
    const r = repo();
    const big = await spawnFromHelper(req(r, ['cat-file', '--batch'], { input: 'HEAD\n'.repeat(50_000), maxBytes: 1000 }));
    expect(big.cut).toBe(true);
    expect(big.stdout.length).toBe(1000);
    const marker = path.join(path.dirname(r), 'slept');
    const started = Date.now();
    // An alias that runs a shell, which starts a sleep that would outlive git: the group goes.
    const hung = await spawnFromHelper(req(r, ['-c', `alias.hang=!sleep 3 && touch ${marker}`, 'hang'], { timeoutMs: 300 }));
    expect(hung.code).not.toBe(0);
    expect(Date.now() - started).toBeLessThan(2_500);
    await new Promise((res) => setTimeout(res, 3_500));
    expect(fs.existsSync(marker)).toBe(false);
    await expect(spawnFromHelper(req(path.join(r, 'missing'), ['status']))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('runs from a helper with an empty environment that gives git only what the request says', async () => {
    const r = repo();
    process.env.BMAD_SPAWNER_SECRET = 'must-not-leak';
    try {
      const shown = await spawnFromHelper(req(r, ['-c', 'alias.envnow=!env', 'envnow']));
      expect(shown.code).toBe(0);
      expect(shown.stdout.toString()).not.toContain('must-not-leak');
      expect(shown.stdout.toString()).toContain('HOME=/nonexistent');
      const [pid] = helpers();
      expect(pid).toBeDefined();
      // Only what Node.js sets for the message channel itself.
      const environ = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter(Boolean);
      expect(environ.map((v) => v.split('=')[0]).sort()).toEqual(['NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE']);
    } finally {
      delete process.env.BMAD_SPAWNER_SECRET;
    }
  });

  it('runs many gits at once from one helper, and starts another when it is gone', async () => {
    const r = repo();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => spawnFromHelper(req(r, ['hash-object', '--stdin'], { input: `${i}\n` }))));
    expect(new Set(answers.map((a) => a.stdout.toString())).size).toBe(40);
    const running = helpers();
    expect(running).toHaveLength(1);
    // The helper dies with a git under way: that git fails, the next one gets a new helper.
    const hanging = spawnFromHelper(req(r, ['-c', 'alias.hang=!sleep 5', 'hang']));
    await new Promise((res) => setTimeout(res, 200));
    process.kill(running[0]!, 'SIGKILL');
    await expect(hanging).rejects.toThrow(/helper/);
    while (alive(running[0]!) && helpers().includes(running[0]!)) await new Promise((res) => setTimeout(res, 20));
    expect((await spawnFromHelper(req(r, ['rev-parse', 'HEAD']))).code).toBe(0);
    expect(helpers().filter((p) => p !== running[0])).toHaveLength(1);
  });
});
