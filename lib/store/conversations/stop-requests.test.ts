import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteConversationStore } from './sqlite-store';

// A Stop asked through another process's handle on the same SQLite file (the contract suite
// covers one handle): the running turn's watch sees it on its next poll.
let dir: string;
const open: SqliteConversationStore[] = [];
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conv-stop-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  fs.rmSync(dir, { recursive: true, force: true });
});
const store = () => {
  const s = new SqliteConversationStore(path.join(dir, 'conversations.db'));
  open.push(s);
  return s;
};

it('reaches the turn held by another handle within a second, and only that turn', async () => {
  const running = store();
  const other = store();
  const c = await running.create({ agentId: 'pm', bundleName: 'bmm' });
  const lease = (await running.beginTurn(c.id))!;
  const heard: number[] = [];
  const asked = Date.now();
  running.watchTurn(lease, () => heard.push(Date.now() - asked));
  expect(await other.requestStop(c.id)).toBe(true);
  for (let i = 0; i < 60 && !heard.length; i++) await new Promise((r) => setTimeout(r, 25));
  expect(heard).toHaveLength(1);
  expect(heard[0]!).toBeLessThan(1000);
  await running.endTurn(lease, 'stopped');
  expect(await other.requestStop(c.id)).toBe(false);
});

it('answers false for a turn whose holder is gone', async () => {
  const a = store();
  const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
  await a.beginTurn(c.id);
  // As a process killed mid-turn leaves it: the lock row names a holder that is no longer alive.
  (a as unknown as { dialect: { locks: { holder: { release(): void } } } }).dialect.locks.holder.release();
  expect(await store().requestStop(c.id)).toBe(false);
});
