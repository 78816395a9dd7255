import { execFile, execFileSync } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_COMMAND_SETTINGS } from '../../core/config';
import { fileLockFolder, setFileLockFolder } from '../../core/paths';
import { forgetStatus, runCommand, withWorkspaceLock, type CommandHost, type CommandRequest, type CommandResult } from '.';
import { forgetCheckout } from './snapshot';

/**
 * The git status a command leaves, kept as the next command's "before": what a command reports
 * as changed must be what a fresh status before it would have given, whatever touched the
 * checkout in between (a file tool here or in another instance, a commit, a setup).
 */
const HOST_READY = existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/git');
const sandboxed = HOST_READY || process.env.CI ? describe : describe.skip;
jest.setTimeout(60_000);

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const host: CommandHost = { bwrap: '/usr/bin/bwrap', python: '/usr/bin/python3', disableUserns: true };
const settings = { ...DEFAULT_COMMAND_SETTINGS, timeoutMs: 20_000 };
let base: string;
let checkout: string;
let previousLocks: string;

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Seed', '-c', 'user.email=seed@example.com', ...args], { cwd: dir, env: { PATH: '/usr/bin:/bin', HOME: base, GIT_CONFIG_NOSYSTEM: '1' } as unknown as NodeJS.ProcessEnv }).toString();
}

async function seeded(name: string): Promise<string> {
  const dir = path.join(base, name);
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, 'README.md'), '# one\n');
  await fs.writeFile(path.join(dir, 'keep.txt'), 'keep\n');
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-qm', 'seed');
  return dir;
}

const identity = { name: 'Ada Lovelace', email: 'ada@example.com' };
const run = (command: string, over: Partial<CommandRequest> = {}, dir = checkout) => runCommand({ checkout: dir, cwd: dir, command, gitIdentity: identity, ...over }, settings, host);
const changed = (r: CommandResult) => r.changes?.files ?? null;

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-snap-')));
  previousLocks = fileLockFolder();
  setFileLockFolder(path.join(base, 'locks'));
  checkout = await seeded('ws');
});
afterEach(async () => {
  setFileLockFolder(previousLocks);
  await fs.rm(base, { recursive: true, force: true });
});

sandboxed('the status a command leaves, as the next one\'s before', () => {
  it('reports each command\'s changes as a fresh status before it would', async () => {
    const twin = await seeded('twin');
    const steps = [
      'echo more >> README.md && echo new > new.txt',
      'true',
      'git add new.txt',
      'rm keep.txt && mkdir -p sub/deep && echo x > sub/deep/f.txt',
      'git add -A && git commit -qm step',
      'echo again >> README.md && chmod +x README.md',
      'git checkout -- README.md && git rm -q --cached sub/deep/f.txt',
      'true',
    ];
    for (const step of steps) {
      const kept = await run(step);
      // The twin forgets before each command: its "before" is always read afresh.
      await forgetStatus(twin);
      const fresh = await run(step, {}, twin);
      expect(kept.exitCode).toBe(0);
      expect(changed(kept)).toEqual(changed(fresh));
    }
    expect(changed(await run('true'))).toEqual([]);
  });

  it('sees a file tool\'s write between two commands: the write is not the command\'s, undoing it is', async () => {
    await run('echo one > a.txt');
    // What a file tool does: under the workspace's lock, on the host.
    await withWorkspaceLock(checkout, () => fs.writeFile(path.join(checkout, 'README.md'), '# changed by a file tool\n'));
    await withWorkspaceLock(checkout, () => fs.writeFile(path.join(checkout, 'tool.txt'), 'x\n'));
    expect(changed(await run('true'))).toEqual([]);
    await withWorkspaceLock(checkout, () => fs.writeFile(path.join(checkout, 'README.md'), '# changed again\n'));
    expect(changed(await run('git checkout -- README.md'))).toEqual([{ path: 'README.md', status: 'clean' }]);
  });

  it('is kept across a holder of the lock that only reads, and used: no status is read before the next command', async () => {
    await run('echo one > a.txt');
    await withWorkspaceLock(checkout, () => fs.readFile(path.join(checkout, 'a.txt'), 'utf8'), undefined, { readsOnly: true });
    // Written past the lock, as nothing of the server does: only a status read afresh would know it.
    await fs.writeFile(path.join(checkout, 'past-the-lock.txt'), 'x\n');
    expect(changed(await run('true'))).toEqual([{ path: 'past-the-lock.txt', status: '??' }]);
  });

  it('sees a write by another instance\'s file tool, which shares only the lock folder', async () => {
    await run('echo one > a.txt');
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', path.join(__dirname, '__fixtures__', 'workspace-writer.ts'), fileLockFolder(), checkout, 'README.md', '# from elsewhere\n'], { cwd: REPO_ROOT }, (e, stdout, stderr) =>
        e ? reject(new Error(`${e.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    expect(out).toBe('done\n');
    expect(changed(await run('git checkout -- README.md'))).toEqual([{ path: 'README.md', status: 'clean' }]);
  });

  it('sees a commit made outside any command and without a word (a sync, another instance) through .git\'s stamp', async () => {
    await run('echo new > new.txt && echo more >> README.md');
    git(checkout, 'add', '-A');
    git(checkout, 'commit', '-qm', 'from the host');
    expect(changed(await run('true'))).toEqual([]);
  });

  it('forgets it when the host says so (a turn\'s commit) and after a setup line', async () => {
    await run('echo one > a.txt');
    await fs.writeFile(path.join(checkout, 'README.md'), '# host\n');
    await forgetStatus(checkout);
    expect(changed(await run('git checkout -- README.md'))).toEqual([{ path: 'README.md', status: 'clean' }]);
    await run('setup_marker=1; echo built > built.txt', { setup: true });
    expect(changed(await run('rm built.txt'))).toEqual([{ path: 'built.txt', status: 'clean' }]);
  });

  it('reads the status afresh after a command cut off at its time limit', async () => {
    await run('true');
    const cut = await run('echo late > late.txt; sleep 30', { timeoutMs: 1_000 });
    expect(cut.stopped).toBe('time_limit');
    expect(changed(await run('rm late.txt'))).toEqual([{ path: 'late.txt', status: 'clean' }]);
  });

  it('leaves nothing in the lock folder once the checkout is gone', async () => {
    await withWorkspaceLock(checkout, async () => undefined);
    const tokens = async () => (await fs.readdir(fileLockFolder())).filter((n) => n.endsWith('.touched'));
    expect(await tokens()).toHaveLength(1);
    await forgetCheckout(checkout);
    expect(await tokens()).toEqual([]);
  });
});
