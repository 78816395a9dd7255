import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { AppDatabase } from './database';
import { openSqlite } from './sqlite';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appdb-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const table = (db: AppDatabase) => sql`CREATE TABLE IF NOT EXISTS t (n INTEGER NOT NULL)`.execute(db.db);

describe('AppDatabase on SQLite', () => {
  it('gives every opener of one file in this process the same connection, open until the last lets go', async () => {
    const file = path.join(dir, 'x.db');
    const a = new AppDatabase({ file });
    const b = new AppDatabase({ file: path.join(dir, '.', 'x.db') });
    expect(a.raw).toBe(b.raw);
    await Promise.all([a.ready(), b.ready()]);
    await table(a);
    await a.close();
    await sql`INSERT INTO t (n) VALUES (1)`.execute(b.db);
    expect(b.raw!.open).toBe(true);
    const raw = b.raw!;
    await b.close();
    expect(raw.open).toBe(false);
    // A later opener gets a new connection.
    const c = new AppDatabase({ file });
    expect((await sql<{ n: number }>`SELECT n FROM t`.execute(c.db)).rows).toEqual([{ n: 1 }]);
    await c.close();
  });

  it('lets a write through another handle wait for a transaction that spans awaits, instead of failing', async () => {
    const file = path.join(dir, 'x.db');
    const a = new AppDatabase({ file, busyTimeoutMs: 200 });
    const b = new AppDatabase({ file, busyTimeoutMs: 200 });
    await table(a);
    const inTransaction = a.db.transaction().execute(async (tx) => {
      await sql`INSERT INTO t (n) VALUES (1)`.execute(tx);
      // A real pause: the other handle's write is issued while this transaction holds the lock.
      await new Promise((r) => setTimeout(r, 300));
      await sql`INSERT INTO t (n) VALUES (2)`.execute(tx);
    });
    await new Promise((r) => setTimeout(r, 50));
    const other = sql`INSERT INTO t (n) VALUES (3)`.execute(b.db);
    await Promise.all([inTransaction, other]);
    expect((await sql<{ n: number }>`SELECT n FROM t ORDER BY rowid`.execute(b.db)).rows.map((r) => r.n)).toEqual([1, 2, 3]);
    await a.close();
    await b.close();
  });

  it('runs the first history once, before the migrations, and migrates again when a later opener brings one', async () => {
    const file = path.join(dir, 'x.db');
    const first = new AppDatabase({ file });
    await first.ready();
    let ran = 0;
    const base = (raw: import('better-sqlite3').Database) => {
      ran++;
      raw.exec('CREATE TABLE IF NOT EXISTS history (x INTEGER)');
    };
    const second = new AppDatabase({ file, base });
    const third = new AppDatabase({ file, base });
    await Promise.all([second.ready(), third.ready()]);
    expect(ran).toBe(1);
    expect(first.raw!.prepare("SELECT name FROM sqlite_master WHERE name = 'history'").get()).toBeTruthy();
    expect((await second.health()).ok).toBe(true);
    await Promise.all([first.close(), second.close(), third.close()]);
  });
});

describe('the SQLite driver', () => {
  // Alone this takes under a second; the long timeout is for a loaded machine, while a quadratic
  // hand-over (every waiter woken on each release) would still take minutes and fail.
  it('hands the connection to waiting queries in the order they came, however many wait', async () => {
    const { db } = openSqlite(path.join(dir, 'q.db'));
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 20_000 }, (_, i) =>
        sql`SELECT ${i} AS i`.execute(db).then(() => {
          order.push(i);
        }),
      ),
    );
    expect(order).toEqual(Array.from({ length: 20_000 }, (_, i) => i));
    // A transaction holds the connection for its whole length: nothing else runs inside it.
    const seen: string[] = [];
    await Promise.all([
      db.transaction().execute(async (tx) => {
        seen.push('tx-begin');
        await sql`SELECT 1`.execute(tx);
        await new Promise((r) => setTimeout(r, 20));
        seen.push('tx-end');
      }),
      sql`SELECT 2`.execute(db).then(() => seen.push('outside')),
    ]);
    expect(seen).toEqual(['tx-begin', 'tx-end', 'outside']);
    await db.destroy();
  }, 180_000);
});
