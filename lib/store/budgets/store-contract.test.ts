import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { conversationDatabase } from '../conversations/database';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';
import { MemoryBudgetStore } from './memory-store';
import { SqlBudgetStore } from './sql-store';
import type { BudgetStore } from './types';

// The same budgets in memory, in DATA_DIR's SQLite file and on Postgres; `a` and `b` are two
// handles on one database, as two instances have.
const tmpDirs: string[] = [];
let pgDatabase: Promise<TestDatabase> | null = null;
afterAll(async () => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
  if (pgDatabase) await (await pgDatabase).drop();
});

async function sqlPair(target: { file: string } | { url: string }): Promise<{ a: BudgetStore; b: BudgetStore }> {
  const first = conversationDatabase(target).open();
  await first.ready();
  const second = conversationDatabase(target).open();
  await second.ready();
  await sql`DELETE FROM project_budgets`.execute(first.db);
  await sql`DELETE FROM server_budget`.execute(first.db);
  return { a: new SqlBudgetStore(first), b: new SqlBudgetStore(second) };
}

const factories: [string, () => Promise<{ a: BudgetStore; b: BudgetStore }>][] = [
  [
    'MemoryBudgetStore',
    async () => {
      const store = new MemoryBudgetStore();
      return { a: store, b: store };
    },
  ],
  [
    'SqlBudgetStore on SQLite',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'budgets-contract-'));
      tmpDirs.push(dir);
      return sqlPair({ file: path.join(dir, 'conversations.db') });
    },
  ],
  [
    'SqlBudgetStore on Postgres',
    async () => {
      pgDatabase ??= createTestDatabase('budgets_contract');
      return sqlPair({ url: (await pgDatabase).url });
    },
  ],
];

describe.each(factories)('%s', (_name, open) => {
  let a: BudgetStore;
  let b: BudgetStore;
  beforeEach(async () => {
    ({ a, b } = await open());
  });
  afterEach(async () => {
    await a.close();
    await b.close();
  });

  it('has no limits for a project never set', async () => {
    expect(await a.get('shop')).toEqual({ projectId: 'shop', monthlyTokens: null, monthlyUsd: null, perPerson: { monthlyTokens: null, monthlyUsd: null }, updatedAt: null, updatedBy: null });
  });

  it('keeps limits per person beside the project\'s, each field left out kept', async () => {
    expect(await a.set('shop', { monthlyTokens: 900, perPerson: { monthlyTokens: 300 } }, 'u1')).toMatchObject({ monthlyTokens: 900, perPerson: { monthlyTokens: 300, monthlyUsd: null } });
    expect(await b.set('shop', { perPerson: { monthlyUsd: 2.5 } }, 'u2')).toMatchObject({ monthlyTokens: 900, perPerson: { monthlyTokens: 300, monthlyUsd: 2.5 } });
    expect(await a.set('shop', { perPerson: { monthlyTokens: null } }, 'u1')).toMatchObject({ monthlyTokens: 900, perPerson: { monthlyTokens: null, monthlyUsd: 2.5 } });
    expect(await b.get('shop')).toMatchObject({ monthlyTokens: 900, perPerson: { monthlyTokens: null, monthlyUsd: 2.5 } });
  });

  it("keeps the server's limits in one row, none at first", async () => {
    expect(await a.getServer()).toEqual({ monthlyTokens: null, monthlyUsd: null, perPerson: { monthlyTokens: null, monthlyUsd: null }, updatedAt: null, updatedBy: null });
    expect(await a.setServer({ perPerson: { monthlyTokens: 5_000_000_000 } }, 'admin')).toMatchObject({ monthlyTokens: null, perPerson: { monthlyTokens: 5_000_000_000, monthlyUsd: null }, updatedBy: 'admin' });
    expect(await b.setServer({ monthlyUsd: 100 }, 'admin2')).toMatchObject({ monthlyUsd: 100, perPerson: { monthlyTokens: 5_000_000_000 } });
    expect(await b.getServer()).toMatchObject({ monthlyTokens: null, monthlyUsd: 100, perPerson: { monthlyTokens: 5_000_000_000, monthlyUsd: null }, updatedBy: 'admin2' });
    // The project's rows are apart.
    expect(await a.get('shop')).toMatchObject({ monthlyTokens: null, perPerson: { monthlyTokens: null } });
  });

  it('keeps the fields a change leaves out, removes a limit set to null, and reads the same from another handle', async () => {
    const set = await a.set('shop', { monthlyTokens: 5_000_000_000 }, 'u1');
    expect(set).toMatchObject({ projectId: 'shop', monthlyTokens: 5_000_000_000, monthlyUsd: null, updatedBy: 'u1' });
    expect(typeof set.updatedAt).toBe('string');
    expect(await b.set('shop', { monthlyUsd: 12.75 }, 'u2')).toMatchObject({ monthlyTokens: 5_000_000_000, monthlyUsd: 12.75, updatedBy: 'u2' });
    expect(await a.set('shop', { monthlyTokens: null }, 'u1')).toMatchObject({ monthlyTokens: null, monthlyUsd: 12.75 });
    expect(await b.get('shop')).toMatchObject({ monthlyTokens: null, monthlyUsd: 12.75, updatedBy: 'u1' });
    expect(await b.get('other')).toMatchObject({ monthlyTokens: null, monthlyUsd: null });
  });

  it('keeps both fields of two changes made at once', async () => {
    await Promise.all([a.set('shop', { monthlyTokens: 10 }, 'u1'), b.set('shop', { monthlyUsd: 1 }, 'u2')]);
    expect(await a.get('shop')).toMatchObject({ monthlyTokens: 10, monthlyUsd: 1 });
  });
});
