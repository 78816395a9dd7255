import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AppError, isAppError } from '../../core/errors';
import { log } from '../../core/log';
import { isValidProjectId, readProject } from '../../content/projects';
import { gitOk } from '../../sandbox/git/runner';
import { checkRemoteHost } from '../../sandbox/git/remote-url';
import { remoteFailure, remoteGit } from '../../sandbox/git/remote';
import { forgeName, guessForge } from './forge';
import { trackingRef } from './base';
import type { RemoteInput, RemoteService } from './service';
import { CLONE_STALE_MS, type CloneState } from './types';

/**
 * A project made from a Git URL. Everything a request can get wrong is answered before anything is
 * made (the id, the URL by the rule, a token with no SECRETS_KEY to seal it, the token the remote
 * refuses, a repository or branch that does not exist, a host that cannot be reached: `ls-remote`
 * asks the remote first); then the id is claimed (a database row every instance sees, and the
 * project's folder made empty and exclusive) and the clone runs after the answer. It fills a
 * folder of its own beside the projects (`.bmad-clones/`, which the catalog never lists), reporting
 * git's phases and percentages to the row about once a second, and is renamed onto the project's
 * folder only once complete: a failed clone leaves no half folder, no remote settings and no project.
 */
export interface CloneRequest {
  id: string;
  branch?: string | null;
  remote: RemoteInput & { url: string };
  /** Who clones: their id for the row, their name for logs. */
  by: string | null;
}

export interface StartedClone {
  state: CloneState;
  /** Runs the clone to its end (ready or failed); never throws. `onReady` runs before the row says ready. */
  run(onReady?: (state: CloneState) => Promise<void>): Promise<CloneState>;
}

const STAGING = '.bmad-clones';
const PROGRESS_EVERY_MS = 1000;
const HEARTBEAT_MS = 5000;
const CLONE_TIMEOUT_MS = 3_600_000;

function removeTree(dir: string): Promise<void> {
  return new Promise((resolve) => execFile('/bin/rm', ['-rf', '--', dir], { env: {} as NodeJS.ProcessEnv, timeout: 600_000 }, () => resolve()));
}

/** The running clone of `id` as anyone sees it: one whose heartbeat stopped reads as failed (its process is gone). */
export function cloneView(state: CloneState, now = Date.now()): CloneState {
  if (state.status === 'running' && now - Date.parse(state.heartbeatAt) > CLONE_STALE_MS) {
    return { ...state, status: 'failed', message: 'The clone was interrupted (its server stopped); start it again.' };
  }
  return state;
}

export async function beginClone(remotes: RemoteService, projectsRoot: string, req: CloneRequest): Promise<StartedClone> {
  const { id } = req;
  if (!isValidProjectId(id)) throw new AppError('E_VALIDATION', 'Invalid id: use letters, digits, ".", "_" or "-" (at most 64, starting with a letter or digit).', { field: 'id' });
  if (req.remote.token) {
    const problem = remotes.secretsProblem();
    if (problem) throw new AppError('E_SECRETS_NOT_CONFIGURED', problem);
  }
  const remote = remotes.parse(req.remote.url);
  await checkRemoteHost(remote, remotes.allowHosts);
  const target = path.join(projectsRoot, id);
  if (fs.existsSync(target)) {
    const row = await remotes.store.getClone(id);
    // The empty folder of an interrupted clone is taken over below; anything else is a project.
    if (!row || cloneView(row).status !== 'failed' || fs.readdirSync(target).length) throw new AppError('E_PROJECT_EXISTS', `A project named "${id}" already exists.`);
  }
  const forge = req.remote.forge === undefined ? guessForge(remote.host) : req.remote.forge;
  const credential = req.remote.token ? { username: req.remote.username ?? (forge === 'gitlab' ? 'oauth2' : 'x-access-token'), password: req.remote.token } : null;

  // The remote first: a refused token, a missing repository or branch, an unreachable host are the answer, with nothing made.
  const probeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-clone-probe-'));
  let branch: string;
  try {
    const wanted = req.branch ? [`refs/heads/${req.branch}`] : [];
    const probe = await remoteGit(['ls-remote', '--symref'], ['HEAD', ...wanted], { cwd: probeDir, remote, allowHosts: remotes.allowHosts, credential, timeoutMs: 60_000 });
    if (probe.code !== 0) throw remoteFailure(probe, remote, 'reading the repository', forgeName(forge as never));
    if (req.branch) {
      if (!probe.stdout.split('\n').some((l) => l.endsWith(`\trefs/heads/${req.branch}`))) throw new AppError('E_REMOTE_NOT_FOUND', `The repository has no branch "${req.branch}".`, { field: 'branch' });
      branch = req.branch;
    } else {
      const head = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(probe.stdout)?.[1];
      if (!head) throw new AppError('E_REMOTE_NOT_FOUND', 'The repository is empty (it has no default branch); push a first commit, or name a branch.', { field: 'branch' });
      branch = head;
    }
  } finally {
    fs.rmSync(probeDir, { recursive: true, force: true });
  }

  const staleBefore = new Date(Date.now() - CLONE_STALE_MS).toISOString();
  if (!(await remotes.store.claimClone({ projectId: id, url: remote.url, branch, createdBy: req.by }, staleBefore))) {
    throw new AppError('E_PROJECT_EXISTS', `A project named "${id}" already exists (or is being cloned).`);
  }
  const release = async () => {
    await remotes.store.removeClone(id);
  };
  await fs.promises.mkdir(projectsRoot, { recursive: true });
  try {
    await fs.promises.mkdir(target);
  } catch (e) {
    const empty = (e as NodeJS.ErrnoException).code === 'EEXIST' && fs.readdirSync(target).length === 0;
    if (!empty) {
      await release();
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new AppError('E_PROJECT_EXISTS', `A project named "${id}" already exists.`);
      throw e;
    }
  }
  try {
    await remotes.put(id, { ...req.remote, url: remote.url, ...(req.remote.forge === undefined ? {} : { forge: req.remote.forge }) }, req.by);
  } catch (e) {
    await release();
    await fs.promises.rmdir(target).catch(() => undefined);
    throw e;
  }
  const state = (await remotes.store.getClone(id))!;
  return { state, run: (onReady) => runClone(remotes, projectsRoot, id, branch, onReady) };
}

async function runClone(remotes: RemoteService, projectsRoot: string, id: string, branch: string, onReady?: (state: CloneState) => Promise<void>): Promise<CloneState> {
  const target = path.join(projectsRoot, id);
  // What an interrupted clone of this id left behind (its server stopped mid-way) goes first.
  for (const left of await fs.promises.readdir(path.join(projectsRoot, STAGING)).catch(() => [] as string[])) {
    if (left.startsWith(`${id}-`) && /^[0-9a-f]{12}$/.test(left.slice(id.length + 1))) await removeTree(path.join(projectsRoot, STAGING, left));
  }
  const staging = path.join(projectsRoot, STAGING, `${id}-${randomBytes(6).toString('hex')}`);
  const store = remotes.store;
  let writing: Promise<unknown> = Promise.resolve();
  let lastWrite = 0;
  let latest: { phase: string; percent: number | null } | null = null;
  const write = (force = false) => {
    if (!latest || (!force && Date.now() - lastWrite < PROGRESS_EVERY_MS)) return;
    const p = latest;
    lastWrite = Date.now();
    writing = writing.then(() => store.updateClone(id, { phase: p.phase, percent: p.percent, heartbeatAt: new Date().toISOString() }, 'running')).catch(() => undefined);
  };
  const phase = (name: string, percent: number | null = null) => {
    latest = { phase: name, percent };
    write();
  };
  let renamed = false;
  const heartbeat = setInterval(() => {
    writing = writing.then(() => store.updateClone(id, { heartbeatAt: new Date().toISOString() }, 'running')).catch(() => undefined);
  }, HEARTBEAT_MS);
  try {
    const stored = await remotes.get(id);
    if (!stored) throw new AppError('E_CONFLICT', 'The remote settings of the clone are gone.');
    await fs.promises.mkdir(staging, { recursive: true });
    await gitOk(['init', '-q', '--template=', '-b', branch], { cwd: staging });
    phase('connecting');
    const fetched = await remoteGit(['fetch', '--progress', '--no-tags', '--no-write-fetch-head', '--no-recurse-submodules', '--no-auto-gc'], [`+refs/heads/${branch}:${trackingRef(branch)}`], {
      cwd: staging,
      remote: remotes.parse(stored.url),
      allowHosts: remotes.allowHosts,
      credential: remotes.credentialOf(stored),
      timeoutMs: CLONE_TIMEOUT_MS,
      onProgress: (p) => phase(p.phase, p.percent),
    });
    if (fetched.code !== 0) throw remoteFailure(fetched, remotes.parse(stored.url), 'cloning', forgeName(stored.forge));
    phase('checking out');
    write(true);
    await gitOk(['update-ref', `refs/heads/${branch}`, trackingRef(branch)], { cwd: staging });
    await gitOk(['read-tree', '-u', '--reset', 'HEAD'], { cwd: staging, timeoutMs: 600_000 });
    // Onto the claimed, empty folder: the project appears whole or not at all.
    await fs.promises.rename(staging, target);
    renamed = true;
    const installed = !!(await readProject(target, id).catch(() => null));
    await writing;
    clearInterval(heartbeat);
    const ready = { ...(await store.getClone(id))!, status: 'ready' as const, phase: 'done', percent: 100, installed };
    // The project is there from now on, whatever a step after the clone says.
    if (onReady) await onReady(ready).catch((e: unknown) => log.warn('remote.clone_ready_hook_failed', { project: id, message: String((e as Error)?.message ?? e).slice(0, 200) }));
    const done = (await store.updateClone(id, { status: 'ready', phase: 'done', percent: 100, installed, heartbeatAt: new Date().toISOString() }, 'running')) ?? ready;
    log.info('remote.cloned', { project: id, installed });
    return done;
  } catch (e) {
    clearInterval(heartbeat);
    await writing;
    await removeTree(staging);
    if (renamed) {
      // Only the row could not say ready: the project is whole on disk.
      log.error('remote.clone_state_lost', { project: id });
      return (await store.updateClone(id, { status: 'ready', phase: 'done', percent: 100 }).catch(() => null)) ?? (await store.getClone(id))!;
    }
    // The claimed folder is still the empty one claimed (rmdir removes nothing else).
    await fs.promises.rmdir(target).catch(() => undefined);
    await remotes.store.remove(id).catch(() => undefined);
    const message = isAppError(e) ? e.message : 'The clone failed.';
    if (!isAppError(e)) log.error('remote.clone_crashed', { project: id, error: (e as Error)?.name ?? 'unknown' });
    log.warn('remote.clone_failed', { project: id, code: isAppError(e) ? e.code : 'E_INTERNAL' });
    return (await store.updateClone(id, { status: 'failed', message: message.slice(0, 1000), phase: null, percent: null }).catch(() => null)) ?? { ...(await store.getClone(id))!, status: 'failed', message };
  }
}
