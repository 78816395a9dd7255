import type { CloneView, ProjectCloneView, ProjectDetail, RemoteBaseView, RemoteFetchView, RemoteView } from '@/types/api';
import { request } from './api';

export type { CloneView, ProjectCloneView, RemoteBaseView, RemoteFetchView, RemoteView };

const enc = encodeURIComponent;

/** What a clone from a Git URL is asked with (POST /api/projects with `git`). */
export interface CloneInput {
  id?: string;
  git: { url: string; branch?: string; token?: string; username?: string; forge?: string | null; mode?: 'pull-request' | 'push' };
}

/** What a remote's settings change holds: a field left out keeps its value, null removes it. */
export interface RemotePatch {
  url?: string | null;
  forge?: string | null;
  apiUrl?: string | null;
  mode?: 'pull-request' | 'push';
  username?: string | null;
  token?: string | null;
  webhookSecret?: string | null;
}

export const remotesApi = {
  /** Starts a clone: 202 with `clone.status: running` (the server clones after it answers). */
  clone: (input: CloneInput, signal?: AbortSignal) => request<ProjectCloneView>('/api/projects', { method: 'POST', body: JSON.stringify(input), signal }),
  /** A project's detail, or only its clone while it is not there yet. */
  projectOrClone: (id: string, signal?: AbortSignal) => request<ProjectDetail | ProjectCloneView>(`/api/projects/${enc(id)}`, { signal }),
  get: (projectId: string, signal?: AbortSignal) => request<RemoteView | null>(`/api/projects/${enc(projectId)}/remote`, { signal }),
  put: (projectId: string, patch: RemotePatch) => request<RemoteView | null>(`/api/projects/${enc(projectId)}/remote`, { method: 'PUT', body: JSON.stringify(patch) }),
  fetch: (projectId: string) => request<RemoteFetchView>(`/api/projects/${enc(projectId)}/remote/fetch`, { method: 'POST' }),
};

/** Whether a GET /api/projects/:id answer is the clone of a project not there yet. */
export function isCloneOnly(v: ProjectDetail | ProjectCloneView): v is ProjectCloneView {
  return !('agents' in v);
}

const PHASES: Record<string, string> = {
  connecting: 'Connecting',
  'enumerating objects': 'The server lists the objects',
  'counting objects': 'The server counts the objects',
  'compressing objects': 'The server compresses the objects',
  'receiving objects': 'Receiving objects',
  'resolving deltas': 'Resolving deltas',
  'checking out': 'Checking out the files',
  done: 'Done',
};

/** A clone's progress in words: `Receiving objects: 45%`. */
export function cloneProgressText(clone: Pick<CloneView, 'phase' | 'percent'>): string {
  const phase = clone.phase ? (PHASES[clone.phase] ?? clone.phase[0]!.toUpperCase() + clone.phase.slice(1)) : 'Starting';
  return clone.percent !== null && clone.percent !== undefined ? `${phase}: ${clone.percent}%` : `${phase}…`;
}

/** Where the server's base stands against the remote's, in words. */
export function baseStateText(base: RemoteBaseView | null): string {
  if (!base || base.state === 'unknown') return 'not fetched yet';
  const n = (k: number | null, word: string) => `${k} commit${k === 1 ? '' : 's'} ${word}`;
  switch (base.state) {
    case 'up-to-date':
      return `up to date with the remote’s ${base.branch}`;
    case 'behind':
      return `${n(base.behind, 'behind')} the remote’s ${base.branch}`;
    case 'ahead':
      return `${n(base.ahead, 'ahead of')} the remote’s ${base.branch} (not pushed)`;
    case 'diverged':
      return `diverged from the remote’s ${base.branch}: ${n(base.ahead, 'ahead')}, ${n(base.behind, 'behind')}`;
  }
}

export const FORGE_NAMES: Record<string, string> = { github: 'GitHub', gitlab: 'GitLab', gitea: 'Gitea / Forgejo' };
