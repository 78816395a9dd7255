import type { Caller } from '../core/access';
import { AppError, isAppError } from '../core/errors';
import { log } from '../core/log';
import type { Project } from '../content/projects';
import { currentBranch, findRepositoryTop } from '../sandbox/git';
import { getRuntime } from '../engine/runtime';
import { beginClone, cloneView, type BaseState, type CloneState, type FetchOutcome, type RemoteInput, type StoredRemote } from '../engine/remotes';
import { sprintProjectOf, type SprintProject } from '../engine/sprint';
import type { CloneView, ProjectCloneView, RemoteBaseView, RemoteFetchView, RemoteView } from '../../types/api';
import { committerOf, projectOf, projectNotFound, requireAdmin, type BodyOf } from './access';

const ref = (p: Project) => ({ id: p.id, root: p.root });

function baseView(b: BaseState): RemoteBaseView {
  return { branch: b.branch, local: b.local, remote: b.remote, ahead: b.ahead, behind: b.behind, state: b.state };
}

/** The base branch a project's work starts from: the build settings', else the checked-out one. */
async function baseBranchOf(project: Project): Promise<string | null> {
  const build = await getRuntime().workspaces.getBuild(project.id);
  if (build.baseBranch) return build.baseBranch;
  const top = findRepositoryTop(project.root);
  return top ? currentBranch(top) : null;
}

async function remoteView(project: Project, r: StoredRemote): Promise<RemoteView> {
  const rt = getRuntime();
  const info = rt.remotes.info(r);
  const branch = await baseBranchOf(project).catch(() => null);
  const state = branch ? await rt.remotes.state(ref(project), branch).catch(() => null) : null;
  return { ...info, lastFetch: info.lastFetch ? { ...info.lastFetch } : null, base: state ? baseView(state) : null };
}

/** The project's remote as whoever sees the project reads it (never a secret); null when it has none. */
export async function getRemote(caller: Caller, projectId: string): Promise<RemoteView | null> {
  const project = await projectOf(caller, projectId, 'read');
  const r = await getRuntime().remotes.get(project.id);
  return r ? remoteView(project, r) : null;
}

/** The remote part of a project's detail (errors cost the detail nothing). */
export async function remoteOfProject(project: Project): Promise<RemoteView | null> {
  try {
    const r = await getRuntime().remotes.get(project.id);
    return r ? await remoteView(project, r) : null;
  } catch {
    return null;
  }
}

/**
 * Sets or changes the project's remote (owners and admins): fields left out keep their values,
 * null removes one (`url: null` the whole remote). Secrets are sealed before they are stored and
 * never answered.
 */
export async function putRemote(caller: Caller, projectId: string, body: BodyOf<RemoteInput>): Promise<RemoteView | null> {
  const project = await projectOf(caller, projectId, 'own');
  const input = await body();
  const r = await getRuntime().remotes.put(project.id, input, caller.kind === 'local' ? null : caller.id);
  log.info('remote.settings', { project: project.id, removed: r === null, token: input.token === undefined ? 'kept' : input.token === null ? 'removed' : 'set' });
  return r ? remoteView(project, r) : null;
}

/** Fetches the base from the remote now (owners and editors); the base fast-forwarded when that loses nothing. */
export async function fetchRemote(caller: Caller, projectId: string): Promise<RemoteFetchView> {
  const project = await projectOf(caller, projectId, 'write');
  const branch = await baseBranchOf(project);
  if (!branch) throw new AppError('E_CONFLICT', 'The project folder has no branch checked out; set a base branch in the build settings.');
  const out: FetchOutcome = await getRuntime().remotes.fetch(ref(project), branch);
  return { branch: out.branch, remoteHead: out.remoteHead, local: out.local, base: baseView(out.state) };
}

/** The sprint of a project as its board and status changes need it: the base of its build settings, and its remote when it has one. */
export async function sprintOfProject(project: Project, baseBranch?: string | null): Promise<SprintProject> {
  const rt = getRuntime();
  const base = baseBranch !== undefined ? baseBranch : (await rt.workspaces.getBuild(project.id)).baseBranch;
  const remote = await rt.remotes.sprintRemote(ref(project)).catch((e: unknown) => {
    if (isAppError(e) && e.code === 'E_NOT_A_REPOSITORY') return null;
    throw e;
  });
  return sprintProjectOf(project, base, remote);
}

/** Before the board is read: the base fetched when the last fetch is older than this (a failed fetch leaves the board as last fetched). */
const BOARD_FETCH_MS = 15_000;

export async function freshenForBoard(project: Project): Promise<void> {
  const branch = await baseBranchOf(project).catch(() => null);
  if (!branch) return;
  await getRuntime()
    .remotes.fetchIfStale(ref(project), branch, BOARD_FETCH_MS)
    .catch((e: unknown) => log.warn('remote.board_fetch_failed', { project: project.id, code: isAppError(e) ? e.code : 'unknown' }));
}

/** Where a new workspace of the project starts: the remote's base, fetched first (undefined without a remote). */
export function workspaceStart(project: Project, caller: Caller): (base: string) => Promise<string | undefined> {
  return (base) => getRuntime().remotes.startCommit(ref(project), base, committerOf(caller));
}

function cloneViewOf(state: CloneState): CloneView {
  const s = cloneView(state);
  return { status: s.status, url: s.url, branch: s.branch, phase: s.phase, percent: s.percent, message: s.message, installed: s.installed, startedAt: s.createdAt, updatedAt: s.updatedAt };
}

/** A project's clone as its detail shows it; undefined when it was not cloned here. */
export async function cloneOfProject(projectId: string): Promise<CloneView | undefined> {
  const state = await getRuntime().remotes.store.getClone(projectId).catch(() => null);
  return state ? cloneViewOf(state) : undefined;
}

/**
 * GET /api/projects/:id of a project not in the catalog yet: its clone (running, failed, or ready
 * without a BMAD install), for whoever started it and admins; a 404 for anyone else.
 */
export async function cloneOnly(caller: Caller, projectId: string): Promise<ProjectCloneView> {
  const state = await getRuntime().remotes.store.getClone(projectId).catch(() => null);
  if (!state || !(caller.role === 'admin' || (caller.kind !== 'local' && state.createdBy === caller.id))) throw projectNotFound(projectId);
  return { id: projectId, clone: cloneViewOf(state) };
}

export interface NewClone {
  id?: string;
  name?: string;
  git: { url: string; branch?: string; forge?: string | null; apiUrl?: string | null; token?: string | null; username?: string | null; mode?: string | null };
}

/** `https://host/team/my-app.git` → `my-app`: a project id from the repository's name. */
function idFromUrl(url: string): string {
  const last = url.replace(/[?#].*$/, '').replace(/\/+$/, '').split(/[/:]/).pop() ?? '';
  return last.replace(/\.git$/, '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64);
}

/**
 * Starts making a project from a Git URL (admins): what the request got wrong, and what the remote
 * refuses (the token, the repository, the branch, the host), is the answer before anything is made;
 * then the clone runs after the answer (`clone.status: running`) and its creator becomes the
 * project's owner once it is there.
 */
export async function cloneProject(caller: Caller, body: BodyOf<NewClone>): Promise<ProjectCloneView> {
  requireAdmin(caller);
  const input = await body();
  const rt = getRuntime();
  const id = input.id ?? input.name ?? idFromUrl(input.git.url);
  const started = await beginClone(rt.remotes, rt.projects.projectsRoot, {
    id,
    ...(input.git.branch ? { branch: input.git.branch } : {}),
    remote: {
      url: input.git.url,
      ...(input.git.forge !== undefined ? { forge: input.git.forge } : {}),
      ...(input.git.apiUrl !== undefined ? { apiUrl: input.git.apiUrl } : {}),
      ...(input.git.token ? { token: input.git.token } : {}),
      ...(input.git.username ? { username: input.git.username } : {}),
      ...(input.git.mode ? { mode: input.git.mode } : {}),
    },
    by: caller.kind === 'local' ? null : caller.id,
  });
  log.info('remote.clone_started', { project: id, by: caller.kind === 'local' ? 'local' : caller.id });
  // The clone outlives the request; closing the runtime waits for it.
  rt.work.track(
    started.run(async () => {
      if (rt.accounts && caller.kind !== 'local') await rt.accounts.setMember(id, caller.id, 'owner');
    }),
  );
  return { id, clone: cloneViewOf(started.state) };
}
