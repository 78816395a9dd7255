import type { AppDatabase } from '../db/database';
import type { SqlStoreDatabase } from '../db/store-database';
import { noBudget, type BudgetPatch, type BudgetStore, type ProjectBudget } from './types';

interface BudgetRow {
  project_id: string;
  monthly_tokens: number | string | null;
  monthly_usd: number | string | null;
  updated_by: string | null;
  updated_at: string;
}

function toBudget(r: BudgetRow): ProjectBudget {
  return {
    projectId: r.project_id,
    monthlyTokens: r.monthly_tokens === null ? null : Number(r.monthly_tokens),
    monthlyUsd: r.monthly_usd === null ? null : Number(r.monthly_usd),
    updatedAt: r.updated_at,
    updatedBy: r.updated_by,
  };
}

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
    // One statement: of two owners setting different fields at once, both fields are kept.
    const insert = {
      project_id: projectId,
      monthly_tokens: patch.monthlyTokens ?? null,
      monthly_usd: patch.monthlyUsd ?? null,
      updated_by: by,
      updated_at: now,
    };
    const update: Record<string, unknown> = { updated_by: by, updated_at: now };
    if (patch.monthlyTokens !== undefined) update.monthly_tokens = patch.monthlyTokens;
    if (patch.monthlyUsd !== undefined) update.monthly_usd = patch.monthlyUsd;
    const row = await (await this.db())
      .insertInto('project_budgets')
      .values(insert)
      .onConflict((oc) => oc.column('project_id').doUpdateSet(update))
      .returningAll()
      .executeTakeFirstOrThrow();
    return toBudget(row as BudgetRow);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.database.close();
  }
}
