import { DEFAULT_BUILD, NameTakenError, type BuildSettings, type NewWorkspace, type Workspace, type WorkspacePatch, type WorkspaceStatus, type WorkspaceStore } from './types';

const clone = <T>(v: T): T => structuredClone(v);

export class MemoryWorkspaceStore implements WorkspaceStore {
  private readonly builds = new Map<string, BuildSettings>();
  private readonly rows = new Map<string, Workspace>();

  async getBuild(projectId: string): Promise<BuildSettings | null> {
    const b = this.builds.get(projectId);
    return b ? clone(b) : null;
  }

  async putBuild(projectId: string, patch: Partial<BuildSettings>): Promise<BuildSettings> {
    const next = { ...(this.builds.get(projectId) ?? DEFAULT_BUILD), ...defined(patch) };
    this.builds.set(projectId, clone(next));
    return clone(next);
  }

  async insert(ws: NewWorkspace): Promise<Workspace> {
    for (const r of this.rows.values()) {
      if (r.projectId === ws.projectId && r.name === ws.name && r.status !== 'discarded') throw new NameTakenError(ws.name);
    }
    const now = new Date().toISOString();
    const row: Workspace = { ...ws, status: 'open', setup: null, createdAt: now, updatedAt: now };
    this.rows.set(ws.id, row);
    return clone(row);
  }

  async get(id: string): Promise<Workspace | null> {
    const r = this.rows.get(id);
    return r ? clone(r) : null;
  }

  async list(projectId: string, opts: { includeDiscarded?: boolean } = {}): Promise<Workspace[]> {
    return [...this.rows.values()]
      .filter((r) => r.projectId === projectId && (opts.includeDiscarded || r.status !== 'discarded'))
      .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1))
      .map(clone);
  }

  async update(id: string, patch: WorkspacePatch, fromStatus?: WorkspaceStatus): Promise<Workspace | null> {
    const r = this.rows.get(id);
    if (!r || (fromStatus && r.status !== fromStatus)) return null;
    const { syncRefused, ...rest } = patch;
    const next: Workspace = { ...r, ...defined(rest), updatedAt: new Date().toISOString() };
    if (syncRefused === null) delete next.syncRefused;
    else if (syncRefused !== undefined) next.syncRefused = syncRefused;
    if (next.syncDropped && !next.syncDropped.length) delete next.syncDropped;
    this.rows.set(id, next);
    return clone(next);
  }

  async remove(id: string): Promise<void> {
    this.rows.delete(id);
  }

  async close(): Promise<void> {}
}

function defined<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}
