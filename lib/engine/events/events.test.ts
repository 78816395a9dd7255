import { conversationDatabase } from '../../store/conversations/database';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';
import { emitProjectEvent, PgEventRelay, setEventRelay, subscribeProjectEvents, type ProjectEvent } from './index';

let pg: TestDatabase;
const relays: PgEventRelay[] = [];

beforeAll(async () => {
  pg = await createTestDatabase('events');
});
afterAll(async () => {
  await setEventRelay(null);
  for (const r of relays) await r.close();
  await pg?.drop();
});

function relay(): PgEventRelay {
  const r = new PgEventRelay(conversationDatabase({ url: pg.url }).open({ poolSize: 2 }));
  relays.push(r);
  return r;
}

async function eventually(ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

describe('project events', () => {
  it('reach the project\'s subscribers only, until they unsubscribe', () => {
    const heard: ProjectEvent[] = [];
    const other: ProjectEvent[] = [];
    const off = subscribeProjectEvents('p1', (e) => heard.push(e));
    subscribeProjectEvents('p2', (e) => other.push(e));
    emitProjectEvent('p1', { type: 'story', storyKey: '1-1-login' });
    expect(heard).toEqual([{ type: 'story', storyKey: '1-1-login', at: expect.any(String) }]);
    expect(other).toEqual([]);
    off();
    emitProjectEvent('p1', { type: 'run', runId: 'run_1' });
    expect(heard).toHaveLength(1);
  });

  it('cross instances on Postgres by NOTIFY: another instance\'s event is heard, this one\'s own is not heard twice', async () => {
    const here = relay();
    const there = relay();
    await setEventRelay(here);
    const heard: ProjectEvent[] = [];
    const off = subscribeProjectEvents('shop', (e) => heard.push(e));
    expect(await here.whenListening()).toBe(true);
    // The other instance: its own LISTEN, its own origin.
    const thereHeard: ProjectEvent[] = [];
    there.listen((p, e, origin) => origin !== 'another-instance' && p === 'shop' && thereHeard.push(e));
    expect(await there.whenListening()).toBe(true);

    there.publish('shop', { type: 'workspace', workspaceId: 'ws_1', at: '2026-11-28T10:00:00.000Z' }, 'another-instance');
    await eventually(() => heard.length === 1);
    expect(heard).toEqual([{ type: 'workspace', workspaceId: 'ws_1', at: '2026-11-28T10:00:00.000Z' }]);

    emitProjectEvent('shop', { type: 'story', storyKey: '1-2-logout' });
    // The other instance hears it through Postgres...
    await eventually(() => thereHeard.length === 1);
    expect(thereHeard).toEqual([{ type: 'story', storyKey: '1-2-logout', at: expect.any(String) }]);
    // ...and here it was heard once, at once, not again when the notification came back.
    await new Promise((r) => setTimeout(r, 300));
    expect(heard.map((e) => e.type)).toEqual(['workspace', 'story']);
    // A payload that is not an event is dropped.
    there.publish('shop', { type: 'nonsense', at: 'x' } as unknown as ProjectEvent, 'another-instance');
    there.publish('shop', { type: 'run', runId: 'run_9', at: '2026-11-28T10:00:01.000Z' }, 'another-instance');
    await eventually(() => heard.length === 3);
    expect(heard.map((e) => e.type)).toEqual(['workspace', 'story', 'run']);
    off();
  }, 30_000);
});
