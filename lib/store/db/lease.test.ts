import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { encodeHolder, isHolderAlive, processStartTime, registerHolder } from './lease';

const hasProc = processStartTime(process.pid) !== null;

let child: ChildProcess;
beforeEach(async () => {
  child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
});
afterEach(async () => {
  if (child.exitCode === null && child.signalCode === null) await kill(child);
});

function kill(c: ChildProcess): Promise<void> {
  // 'exit' comes after the process was reaped, so its pid names no process any more.
  const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
  c.kill('SIGKILL');
  return exited;
}

const tagOf = (pid: number, started: string | null, extra: { host?: string; nonce?: string } = {}) =>
  encodeHolder({ host: extra.host ?? os.hostname(), pid, nonce: extra.nonce ?? 'n', started });

describe('isHolderAlive', () => {
  it('counts a holder of this process only while it is registered', () => {
    const holder = registerHolder();
    expect(isHolderAlive(holder.tag)).toBe(true);
    expect(isHolderAlive(tagOf(process.pid, processStartTime(process.pid)))).toBe(false);
    holder.release();
    expect(isHolderAlive(holder.tag)).toBe(false);
  });

  it('counts another running process as alive, and as dead once it exited', async () => {
    const pid = child.pid!;
    const tag = tagOf(pid, processStartTime(pid));
    expect(isHolderAlive(tag)).toBe(true);
    expect(isHolderAlive(tagOf(pid, null))).toBe(true);
    await kill(child);
    expect(isHolderAlive(tag)).toBe(false);
    expect(isHolderAlive(tagOf(pid, null))).toBe(false);
  });

  (hasProc ? it : it.skip)('treats a pid that another process took over as dead', () => {
    const pid = child.pid!;
    const started = processStartTime(pid)!;
    expect(started).toMatch(/^\d+$/);
    expect(isHolderAlive(tagOf(pid, `${Number(started) + 1}`))).toBe(false);
  });

  it('treats holders on another host and malformed tags as dead', () => {
    expect(isHolderAlive(tagOf(child.pid!, processStartTime(child.pid!), { host: 'a-host-that-is-gone' }))).toBe(false);
    for (const bad of [null, '', 'not json', '[]', JSON.stringify([os.hostname(), child.pid, 'n']), JSON.stringify([os.hostname(), String(child.pid), 'n', null])]) {
      expect(isHolderAlive(bad)).toBe(false);
    }
  });
});
