import type { AppDatabase } from '../db/database';
import type { SqlStoreDatabase } from '../db/store-database';
import { noBudget, noServerBudget, type BudgetPatch, type BudgetStore, type ProjectBudget, type ServerBudget } from './types';

interface BudgetRow {
  project_id: string;
  monthly_tokens: number | string | null;
  monthly_usd: number | string | null;
  person_monthly_tokens?: number | string | null;
  person_monthly_usd?: number | string | null;
  updated_by: string | null;
  updated_at: string;
}

const num = (v: number | string | null | undefined) => (v === null || v === undefined ? null : Number(v));

function limitsOf(r: Omit<BudgetRow, 'project_id'>) {
  return {
    monthlyTokens: num(r.monthly_tokens),
    monthlyUsd: num(r.monthly_usd),
    perPerson: { monthlyTokens: num(r.person_monthly_tokens), monthlyUsd: num(r.person_monthly_usd) },
    updatedAt: r.updated_at,
    updatedBy: r.updated_by,
  };
}

function toBudget(r: BudgetRow): ProjectBudget {
  return { projectId: r.project_id, ...limitsOf(r) };
}

/** A patch's columns (only what it sets), and the full row a first insert writes. */
function columnsOf(patch: BudgetPatch): { update: Record<string, unknown>; insert: Record<string, unknown> } {
  const update: Record<string, unknown> = {};
  if (patch.monthlyTokens !== undefined) update.monthly_tokens = patch.monthlyTokens;
  if (patch.monthlyUsd !== undefined) update.monthly_usd = patch.monthlyUsd;
  if (patch.perPerson?.monthlyTokens !== undefined) update.person_monthly_tokens = patch.perPerson.monthlyTokens;
  if (patch.perPerson?.monthlyUsd !== undefined) update.person_monthly_usd = patch.perPerson.monthlyUsd;
  const insert = {
    monthly_tokens: patch.monthlyTokens ?? null,
    monthly_usd: patch.monthlyUsd ?? null,
    person_monthly_tokens: patch.perPerson?.monthlyTokens ?? null,
    person_monthly_usd: patch.perPerson?.monthlyUsd ?? null,
  };
  return { update, insert };
}

/** The one row of the server's limits. */
const SERVER_ROW = 'server';

/** Projects' budgets in the stores' database (SQLite file or Postgres). */
export class SqlBudgetStore implements BudgetStore {
  private closed = false;

  /** The store owns `database` and closes it. */
  constructor(private readonly database: AppDatabase) {}

  /** A store on its own handle of the stores' database (a pool of `poolSize` on Postgres). */
  static open(database: SqlStoreDatabase, poolSize?: number): SqlBudgetStore {
    return new SqlBudgetStore(database.kind === 'postgres' ? database.open({ poolSize }) : database.open());
  }

  private async db() {
    await this.database.ready();
    return this.database.db;
  }

  async get(projectId: string): Promise<ProjectBudget> {
    const row = await (await this.db()).selectFrom('project_budgets').selectAll().where('project_id', '=', projectId).executeTakeFirst();
    return row ? toBudget(row as BudgetRow) : noBudget(projectId);
  }

  async set(projectId: string, patch: BudgetPatch, by: string): Promise<ProjectBudget> {
    const now = new Date().toISOString();
    const { update, insert } = columnsOf(patch);
    // One statement: of two owners setting different fields at once, both fields are kept.
    const row = await (await this.db())
      .insertInto('project_budgets')
      .values({ project_id: projectId, ...insert, updated_by: by, updated_at: now })
      .onConflict((oc) => oc.column('project_id').doUpdateSet({ ...update, updated_by: by, updated_at: now }))
      .returningAll()
      .executeTakeFirstOrThrow();
    return toBudget(row as BudgetRow);
  }

  async getServer(): Promise<ServerBudget> {
    const row = await (await this.db()).selectFrom('server_budget').selectAll().where('id', '=', SERVER_ROW).executeTakeFirst();
    return row ? limitsOf(row as unknown as BudgetRow) : noServerBudget();
  }

  async setServer(patch: BudgetPatch, by: string): Promise<ServerBudget> {
    const now = new Date().toISOString();
    const { update, insert } = columnsOf(patch);
    const row = await (await this.db())
      .insertInto('server_budget')
      .values({ id: SERVER_ROW, ...insert, updated_by: by, updated_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ ...update, updated_by: by, updated_at: now }))
      .returningAll()
      .executeTakeFirstOrThrow();
    return limitsOf(row as unknown as BudgetRow);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.database.close();
  }
}
