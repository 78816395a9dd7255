import type { ClonePatch, CloneState, CloneStatus, RemotePatch, RemoteStore, StoredRemote } from './types';

const copy = <T>(v: T): T => structuredClone(v);

function defined<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export class MemoryRemoteStore implements RemoteStore {
  private readonly remotes = new Map<string, StoredRemote>();
  private readonly clones = new Map<string, CloneState>();

  async get(projectId: string): Promise<StoredRemote | null> {
    const r = this.remotes.get(projectId);
    return r ? copy(r) : null;
  }

  async put(projectId: string, patch: RemotePatch, by: string | null): Promise<StoredRemote> {
    const old = this.remotes.get(projectId);
    if (!old && !patch.url) throw new Error('A new remote needs a url.');
    const base: StoredRemote = old ?? { projectId, url: patch.url!, forge: null, apiUrl: null, mode: 'pull-request', username: null, token: null, webhookSecret: null, statusBranch: null, lastFetch: null, updatedBy: null, updatedAt: '' };
    const next: StoredRemote = { ...base, ...defined(patch), projectId, updatedBy: by, updatedAt: new Date().toISOString() };
    this.remotes.set(projectId, copy(next));
    return copy(next);
  }

  async remove(projectId: string): Promise<void> {
    this.remotes.delete(projectId);
  }

  async list(): Promise<StoredRemote[]> {
    return [...this.remotes.values()].map(copy);
  }

  async getClone(projectId: string): Promise<CloneState | null> {
    const c = this.clones.get(projectId);
    return c ? copy(c) : null;
  }

  async claimClone(row: Pick<CloneState, 'projectId' | 'url' | 'branch' | 'createdBy'>, staleBefore: string): Promise<boolean> {
    const old = this.clones.get(row.projectId);
    if (old && !(old.status === 'failed' || (old.status === 'running' && old.heartbeatAt < staleBefore))) return false;
    const now = new Date().toISOString();
    this.clones.set(row.projectId, { ...row, status: 'running', phase: 'connecting', percent: null, message: null, installed: null, heartbeatAt: now, createdAt: now, updatedAt: now });
    return true;
  }

  async updateClone(projectId: string, patch: ClonePatch, fromStatus?: CloneStatus): Promise<CloneState | null> {
    const old = this.clones.get(projectId);
    if (!old || (fromStatus && old.status !== fromStatus)) return null;
    const next = { ...old, ...defined(patch), updatedAt: new Date().toISOString() };
    this.clones.set(projectId, next);
    return copy(next);
  }

  async removeClone(projectId: string): Promise<void> {
    this.clones.delete(projectId);
  }

  async close(): Promise<void> {}
}
