import { KeyedLock, setFileLockFolder, withFileLock } from './file-lock';

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('KeyedLock', () => {
  it('runs holders of one key one at a time, in arrival order', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    const job = (name: string) =>
      lock.run('k', async () => {
        events.push(`${name}:start`);
        await tick();
        events.push(`${name}:end`);
        return name;
      });
    expect(await Promise.all([job('a'), job('b'), job('c')])).toEqual(['a', 'b', 'c']);
    expect(events).toEqual(['a:start', 'a:end', 'b:start', 'b:end', 'c:start', 'c:end']);
    expect(lock.size).toBe(0);
  });

  it('lets other keys run meanwhile', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    let release!: () => void;
    const held = lock.run('a', () => new Promise<void>((r) => (release = r)));
    await lock.run('b', async () => events.push('b ran while a is held'));
    release();
    await held;
    expect(events).toEqual(['b ran while a is held']);
  });

  it('a throwing holder releases the key and the error reaches its caller only', async () => {
    const lock = new KeyedLock();
    const first = lock.run('k', async () => {
      throw new Error('boom');
    });
    const second = lock.run('k', async () => 'fine');
    await expect(first).rejects.toThrow('boom');
    await expect(second).resolves.toBe('fine');
    expect(lock.size).toBe(0);
  });

  it('withFileLock is one lock per process', async () => {
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 10 }, () =>
        withFileLock('/same/file', async () => {
          inside++;
          most = Math.max(most, inside);
          await tick();
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
  });
});

describe('withFileLock across processes', () => {
  const { spawn } = require('node:child_process') as typeof import('node:child_process');
  const fs = require('node:fs') as typeof import('node:fs');
  const os = require('node:os') as typeof import('node:os');
  const path = require('node:path') as typeof import('node:path');
  const REPO_ROOT = path.resolve(__dirname, '../../..');
  let dir: string;
  beforeEach(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-file-lock-')));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function child(...args: string[]) {
    const proc = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '__fixtures__', 'lock-writer.ts'), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    return { proc, exited, out: () => out, err: () => err };
  }

  it('two processes never interleave on one file: no increment is lost', async () => {
    const locks = path.join(dir, 'locks');
    const counter = path.join(dir, 'counter.txt');
    const writers = [child('count', locks, counter, '40'), child('count', locks, counter, '40')];
    const results = await Promise.all(writers.map((w) => w.exited));
    expect(results).toEqual([{ code: 0, signal: null }, { code: 0, signal: null }]);
    expect(writers.map((w) => w.err())).toEqual(['', '']);
    expect(fs.readFileSync(counter, 'utf8')).toBe('80');
    // Every lock file was removed by its holder.
    expect(fs.readdirSync(locks)).toEqual([]);
  }, 60_000);

  it('two processes writing one document keep every version, each recorded over the one before it', async () => {
    const locks = path.join(dir, 'locks');
    const work = path.join(dir, 'project', '_bmad-output');
    const gitdir = path.join(dir, 'data', 'versions', 'p');
    fs.mkdirSync(work, { recursive: true });
    const writers = [child('document', locks, work, gitdir, 'pm', '10'), child('document', locks, work, gitdir, 'architect', '10')];
    const results = await Promise.all(writers.map((w) => w.exited));
    expect(writers.map((w) => w.err())).toEqual(['', '']);
    expect(results).toEqual([{ code: 0, signal: null }, { code: 0, signal: null }]);
    const { openVersionStore } = await import('../../content/versions');
    (globalThis as unknown as Record<symbol, Map<string, unknown>>)[Symbol.for('bmad-orchestrator.versions.stores')]?.clear();
    const store = await openVersionStore({ gitdir, workRoot: work });
    const versions = await store.list('prd.md');
    // 20 agent writes and nothing else: no write ever replaced content other than the last version
    // (that would have added an untracked version before it).
    expect(versions).toHaveLength(20);
    expect(versions.every((v) => v.kind !== 'untracked')).toBe(true);
    expect(versions.filter((v) => v.agentId === 'pm')).toHaveLength(10);
    expect(versions.filter((v) => v.agentId === 'architect')).toHaveLength(10);
    const newest = await store.read('prd.md', versions[0]!.version);
    expect(newest.equals(fs.readFileSync(path.join(work, 'prd.md')))).toBe(true);
  }, 60_000);

  it('a holder killed with SIGKILL does not keep the file locked', async () => {
    const locks = path.join(dir, 'locks');
    const file = path.join(dir, 'doc.md');
    const holder = child('hold', locks, file);
    for (let i = 0; i < 200 && !holder.out().includes('held'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(holder.out()).toBe('held\n');
    setFileLockFolder(locks);
    let entered = false;
    const waiting = withFileLock(file, async () => {
      entered = true;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(entered).toBe(false);
    holder.proc.kill('SIGKILL');
    await holder.exited;
    const killed = Date.now();
    await waiting;
    expect(entered).toBe(true);
    expect(Date.now() - killed).toBeLessThan(1000);
  }, 30_000);
});
