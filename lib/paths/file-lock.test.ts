import { KeyedLock, withFileLock } from './file-lock';

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
