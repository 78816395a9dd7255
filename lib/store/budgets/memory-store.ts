import { noBudget, noServerBudget, patched, type BudgetPatch, type BudgetStore, type ProjectBudget, type ServerBudget } from './types';

const copy = <T>(v: T): T => structuredClone(v);

export class MemoryBudgetStore implements BudgetStore {
  private readonly budgets = new Map<string, ProjectBudget>();
  private server: ServerBudget = noServerBudget();

  async get(projectId: string): Promise<ProjectBudget> {
    return copy(this.budgets.get(projectId) ?? noBudget(projectId));
  }

  async set(projectId: string, patch: BudgetPatch, by: string): Promise<ProjectBudget> {
    const now = this.budgets.get(projectId) ?? noBudget(projectId);
    const next: ProjectBudget = { projectId, ...patched(now, patch), updatedAt: new Date().toISOString(), updatedBy: by };
    this.budgets.set(projectId, next);
    return copy(next);
  }

  async getServer(): Promise<ServerBudget> {
    return copy(this.server);
  }

  async setServer(patch: BudgetPatch, by: string): Promise<ServerBudget> {
    this.server = { ...patched(this.server, patch), updatedAt: new Date().toISOString(), updatedBy: by };
    return copy(this.server);
  }

  async close(): Promise<void> {}
}
