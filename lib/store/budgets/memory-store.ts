import { noBudget, type BudgetPatch, type BudgetStore, type ProjectBudget } from './types';

export class MemoryBudgetStore implements BudgetStore {
  private readonly budgets = new Map<string, ProjectBudget>();

  async get(projectId: string): Promise<ProjectBudget> {
    return { ...(this.budgets.get(projectId) ?? noBudget(projectId)) };
  }

  async set(projectId: string, patch: BudgetPatch, by: string): Promise<ProjectBudget> {
    const now = this.budgets.get(projectId) ?? noBudget(projectId);
    const next: ProjectBudget = {
      projectId,
      monthlyTokens: patch.monthlyTokens !== undefined ? patch.monthlyTokens : now.monthlyTokens,
      monthlyUsd: patch.monthlyUsd !== undefined ? patch.monthlyUsd : now.monthlyUsd,
      updatedAt: new Date().toISOString(),
      updatedBy: by,
    };
    this.budgets.set(projectId, next);
    return { ...next };
  }

  async close(): Promise<void> {}
}
