import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DATABASE_FILE, openDatabase, storeDatabase } from './store-database';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'store-db-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('openDatabase', () => {
  it('is the SQLite file in the data folder by default, the folder created and the file left to the first store', () => {
    const dataDir = path.join(dir, 'nested', 'data');
    const database = openDatabase({ store: 'sqlite', dataDir });
    expect(database).toMatchObject({ kind: 'sqlite', file: path.join(dataDir, DATABASE_FILE) });
    expect(fs.existsSync(dataDir)).toBe(true);
    expect(fs.existsSync(path.join(dataDir, DATABASE_FILE))).toBe(false);
  });

  it('is Postgres only with a URL, and memory without touching the disk', () => {
    expect(openDatabase({ store: 'postgres', dataDir: path.join(dir, 'pg'), databaseUrl: 'postgres://db/x' })).toMatchObject({ kind: 'postgres', url: 'postgres://db/x' });
    expect(openDatabase({ store: 'postgres', dataDir: path.join(dir, 'fallback') }).kind).toBe('sqlite');
    expect(openDatabase({ store: 'memory', dataDir: path.join(dir, 'unused') })).toEqual({ kind: 'memory' });
    expect(fs.existsSync(path.join(dir, 'unused'))).toBe(false);
  });
});

describe('storeDatabase', () => {
  it('gives every store a handle of its own on the file\'s one connection, its first history run once', async () => {
    let ran = 0;
    const history = (raw: import('better-sqlite3').Database) => {
      ran++;
      raw.exec('CREATE TABLE IF NOT EXISTS first_history (x INTEGER)');
    };
    const database = storeDatabase({ file: path.join(dir, 'x.db') }, history);
    const a = database.open();
    const b = database.open();
    await Promise.all([a.ready(), b.ready()]);
    expect(ran).toBe(1);
    expect(a.raw).toBe(b.raw);
    expect(b.raw!.prepare("SELECT name FROM sqlite_master WHERE name = 'first_history'").get()).toBeTruthy();
    await a.close();
    // The connection stays while a handle does.
    expect((await b.health()).ok).toBe(true);
    await b.close();
    expect((await b.health()).ok).toBe(false);
  });
});
