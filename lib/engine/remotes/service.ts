import fs from 'node:fs';
import path from 'node:path';
import { AppError, isAppError } from '../../core/errors';
import { log } from '../../core/log';
import { withFileLock } from '../../core/paths/file-lock';
import { isCurrent, open, seal, sealProblem, type KeyRing } from '../../store/secrets';
import { git, type GitPerson } from '../../sandbox/git/runner';
import { findRepositoryTop, resolveCommit } from '../../sandbox/git/repo';
import { checkRemoteHost, parseRemoteUrl, repositoryPathOf, type RemoteUrl } from '../../sandbox/git/remote-url';
import { parsePushPorcelain, pushOutcome, remoteFailure, remoteGit, type GitProgress, type PushOutcome, type RemoteCredential, type RemoteResult } from '../../sandbox/git/remote';
import { defaultApiUrl } from './forge-http';
import { baseState, fastForward, startCommit, trackingRef, type BaseState, type FastForward } from './base';
import { forgeName, guessForge, tokenUser, type ForgeClient, type ForgeRegistry, type RemoteHooks } from './forge';
import { FORGES, REMOTE_MODES, STATUS_BRANCH, type ForgeKind, type LastFetch, type RemoteMode, type RemotePatch, type RemoteStore, type StoredRemote } from './types';

/** A project as this service needs it: its id and folder (absolute; never shown). */
export interface RemoteProject {
  id: string;
  root: string;
}

export interface RemoteServiceOptions {
  store: RemoteStore;
  keys: KeyRing;
  /** GIT_REMOTE_HOSTS. */
  allowHosts: readonly string[];
  /** DATA_DIR/ssh: the key and known hosts of ssh remotes. */
  sshDir?: string | null;
  forges?: ForgeRegistry;
  hooks?: RemoteHooks;
}

/** What may be changed of a remote (PUT …/remote): a field left out keeps its value, null removes it. */
export interface RemoteInput {
  /** null removes the remote altogether. */
  url?: string | null;
  forge?: string | null;
  apiUrl?: string | null;
  token?: string | null;
  webhookSecret?: string | null;
  mode?: string | null;
  username?: string | null;
}

/** A remote as anyone who sees the project reads it: never a secret, only whether one is set. */
export interface RemoteInfo {
  url: string;
  forge: ForgeKind | null;
  apiUrl: string | null;
  mode: RemoteMode;
  username: string | null;
  tokenSet: boolean;
  webhookSecretSet: boolean;
  lastFetch: LastFetch | null;
  /** Where status changes go (STATUS_BRANCH) when the base refused them as protected. */
  statusBranch: string | null;
}

export interface FetchOutcome {
  branch: string;
  /** The remote's head of the branch (null: it has no such branch). */
  remoteHead: string | null;
  /** What became of the local base. */
  local: FastForward | 'missing-on-remote';
  state: BaseState;
}

/** What a status change is pushed with (lib/engine/sprint's SprintRemote, implemented here). */
export interface SprintRemoteOf {
  fetch(branch: string): Promise<string | null>;
  trackingRef(branch: string): string;
  push(branch: string, commit: string): Promise<'ok' | 'moved' | 'protected'>;
  statusBranch: string | null;
  useStatusBranch(base: string): Promise<string>;
  pushedToStatusBranch(base: string): Promise<void>;
}

const SECRET_MAX = 4096;
const BRANCH = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock(?:\/|$))[A-Za-z0-9._/-]{1,200}(?<![/.])$/;

const bad = (field: string, message: string) => new AppError('E_VALIDATION', `${field} ${message}`, { field });

function checkBranch(branch: string): string {
  if (!BRANCH.test(branch)) throw bad('branch', 'is not a branch name');
  return branch;
}

function checkSecret(field: string, v: unknown): string {
  if (typeof v !== 'string' || !v) throw bad(field, 'must be a non-empty text');
  if (v.length > SECRET_MAX) throw bad(field, `is longer than ${SECRET_MAX} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(v)) throw bad(field, 'holds spaces or control characters');
  return v;
}

/**
 * Projects' remote repositories: their settings (secrets sealed at rest, write-only), fetching the
 * base before work, pushing the server's own changes (status changes, push-mode merges, a
 * workspace's own branch) and nothing else. Every call to the remote goes through
 * lib/sandbox/git/remote.ts: the URL checked again, the token per call, never forced, one call at a
 * time per project repository (a file lock every instance sharing DATA_DIR sees).
 */
export class RemoteService {
  constructor(private readonly opts: RemoteServiceOptions) {}

  get store(): RemoteStore {
    return this.opts.store;
  }

  get allowHosts(): readonly string[] {
    return this.opts.allowHosts;
  }

  /**
   * A stored token goes only where it went before: a change of the remote's host or of the API's
   * host that keeps it must give it again. Otherwise whoever may change the settings but was not
   * given the token (an owner, when an admin set it) could point the remote at a server of theirs
   * and have the next fetch or publish hand the token over.
   */
  private keepTokenOnlyForItsHosts(old: StoredRemote, patch: RemotePatch): void {
    const hostOf = (url: string | null | undefined, pathOptional: boolean): string | null => {
      if (!url) return null;
      try {
        return parseRemoteUrl(url, this.opts.allowHosts, { pathOptional }).hostPort;
      } catch {
        return null;
      }
    };
    // Where the forge's API is: its apiUrl, else the forge's public one for the remote's host.
    const apiHostOf = (url: string, apiUrl: string | null, forge: ForgeKind | null): string | null => {
      if (apiUrl) return hostOf(apiUrl, true);
      if (!forge) return null;
      try {
        return hostOf(defaultApiUrl(forge, parseRemoteUrl(url, this.opts.allowHosts).host), true);
      } catch {
        return null;
      }
    };
    const before = new Set([hostOf(old.url, false), apiHostOf(old.url, old.apiUrl, old.forge)].filter((h): h is string => h !== null));
    const url = patch.url ?? old.url;
    const after = [hostOf(url, false), apiHostOf(url, patch.apiUrl !== undefined ? patch.apiUrl : old.apiUrl, patch.forge !== undefined ? patch.forge : old.forge)];
    const moved = after.find((h) => h !== null && !before.has(h));
    if (moved) throw new AppError('E_VALIDATION', `token was set for ${[...before].join(' and ') || 'another host'}; give it again (token) to send it to ${moved}, or remove it (token: null).`, { field: 'token' });
  }

  /** Why a token cannot be stored here (no SECRETS_KEY, or a malformed one); null when it can. */
  secretsProblem(): string | null {
    return sealProblem(this.opts.keys);
  }

  async get(projectId: string): Promise<StoredRemote | null> {
    return this.opts.store.get(projectId);
  }

  info(r: StoredRemote): RemoteInfo {
    return {
      url: r.url,
      forge: r.forge,
      apiUrl: r.apiUrl,
      mode: r.mode,
      username: r.username,
      tokenSet: !!r.token,
      webhookSecretSet: !!r.webhookSecret,
      lastFetch: r.lastFetch,
      statusBranch: r.statusBranch,
    };
  }

  /** The URL as the rule reads it (its host not resolved). */
  parse(url: string): RemoteUrl {
    return parseRemoteUrl(url, this.opts.allowHosts);
  }

  /**
   * Checks a new or changed remote and stores it: the URL by the rule (its host resolved and
   * checked), the forge (guessed from the host when the URL changes and none is given), the API
   * URL by the same rule, secrets sealed. Nothing is stored when anything is refused.
   */
  async put(projectId: string, input: RemoteInput, by: string | null): Promise<StoredRemote | null> {
    const old = await this.opts.store.get(projectId);
    if (input.url === null) {
      await this.opts.store.remove(projectId);
      return null;
    }
    if (!old && input.url === undefined) throw bad('url', 'is required for a new remote');
    const patch: RemotePatch = {};
    let remote: RemoteUrl | null = null;
    if (input.url !== undefined) {
      remote = this.parse(input.url);
      await checkRemoteHost(remote, this.opts.allowHosts);
      patch.url = remote.url;
      if (!old || old.url !== remote.url) {
        patch.statusBranch = null;
        patch.lastFetch = null;
        if (input.forge === undefined) patch.forge = guessForge(remote.host);
      }
    }
    if (input.forge !== undefined) {
      if (input.forge === null) patch.forge = null;
      else {
        const f = String(input.forge).toLowerCase() === 'forgejo' ? 'gitea' : String(input.forge).toLowerCase();
        if (!(FORGES as readonly string[]).includes(f)) throw bad('forge', `must be one of ${FORGES.join(', ')} (Forgejo speaks Gitea's API: gitea), or null`);
        patch.forge = f as ForgeKind;
      }
    }
    if (input.apiUrl !== undefined) {
      if (input.apiUrl === null) patch.apiUrl = null;
      else {
        const api = parseRemoteUrl(input.apiUrl, this.opts.allowHosts, { pathOptional: true });
        if (api.scheme === 'ssh') throw bad('apiUrl', 'must be an https:// URL');
        await checkRemoteHost(api, this.opts.allowHosts).catch((e: unknown) => {
          if (isAppError(e) && e.code === 'E_REMOTE_URL') throw new AppError('E_REMOTE_URL', e.message.replace('The remote URL', 'The API URL'), { field: 'apiUrl' });
          throw e;
        });
        patch.apiUrl = input.apiUrl.trim().replace(/\/+$/, '');
      }
    }
    if (input.mode !== undefined) {
      const mode = input.mode ?? 'pull-request';
      if (!(REMOTE_MODES as readonly string[]).includes(mode)) throw bad('mode', `must be one of ${REMOTE_MODES.join(', ')}`);
      patch.mode = mode as RemoteMode;
    }
    if (input.username !== undefined) {
      if (input.username !== null && (typeof input.username !== 'string' || !/^[A-Za-z0-9._@+-]{1,100}$/.test(input.username))) throw bad('username', 'must be a plain user name (letters, digits, . _ @ + -) or null');
      patch.username = input.username;
    }
    if (old?.token && input.token === undefined) this.keepTokenOnlyForItsHosts(old, patch);
    for (const field of ['token', 'webhookSecret'] as const) {
      const v = input[field];
      if (v === undefined) continue;
      patch[field] = v === null ? null : seal(this.opts.keys, `remote:${projectId}:${field}`, checkSecret(field, v));
    }
    return this.opts.store.put(projectId, patch, by);
  }

  /** Seals again, with the current key, every secret sealed with a previous one (a rotation); how many. */
  async rewrapSecrets(): Promise<number> {
    if (!this.opts.keys.current) return 0;
    let n = 0;
    for (const r of await this.opts.store.list()) {
      const patch: RemotePatch = {};
      for (const field of ['token', 'webhookSecret'] as const) {
        const sealed = r[field];
        if (!sealed || isCurrent(this.opts.keys, sealed)) continue;
        try {
          patch[field] = seal(this.opts.keys, `remote:${r.projectId}:${field}`, open(this.opts.keys, `remote:${r.projectId}:${field}`, sealed));
        } catch (e) {
          log.warn('remote.rewrap_failed', { project: r.projectId, field, code: isAppError(e) ? e.code : 'unknown' });
        }
      }
      if (Object.keys(patch).length) {
        await this.opts.store.put(r.projectId, patch, r.updatedBy);
        n++;
      }
    }
    if (n) log.info('remote.secrets_rewrapped', { projects: n });
    return n;
  }

  /** The credential a call to the remote sends: the token opened for this call, with the user name the forge expects. */
  credentialOf(r: Pick<StoredRemote, 'projectId' | 'token' | 'username' | 'forge'>): RemoteCredential | null {
    if (!r.token) return null;
    return { username: r.username ?? tokenUser(r.forge), password: open(this.opts.keys, `remote:${r.projectId}:token`, r.token) };
  }

  /** The webhook secret, opened (for the forges' part to verify a delivery); null when none is set. */
  webhookSecretOf(r: Pick<StoredRemote, 'projectId' | 'webhookSecret'>): string | null {
    return r.webhookSecret ? open(this.opts.keys, `remote:${r.projectId}:webhookSecret`, r.webhookSecret) : null;
  }

  /** A forge client for the project's remote (the forges' part registers them); E_CONFLICT when there is none for its forge. */
  forge(r: StoredRemote): ForgeClient {
    if (!r.forge) throw new AppError('E_CONFLICT', 'The project\'s remote names no forge (GitHub, GitLab, Gitea); set forge in its remote settings.');
    const make = this.opts.forges?.client?.[r.forge];
    if (!make) throw new AppError('E_CONFLICT', `This server has no ${forgeName(r.forge)} client.`);
    const remote = this.parse(r.url);
    return make({ kind: r.forge, apiUrl: r.apiUrl, repository: repositoryPathOf(remote), host: remote.host, token: r.token ? open(this.opts.keys, `remote:${r.projectId}:token`, r.token) : null });
  }

  get forges(): ForgeRegistry {
    return this.opts.forges ?? {};
  }

  private top(project: RemoteProject): string {
    const top = findRepositoryTop(project.root);
    if (!top) throw new AppError('E_NOT_A_REPOSITORY', 'The project folder is not in a git repository.');
    return top;
  }

  /** One call to the remote at a time per project repository, on every instance sharing DATA_DIR (its lock folder). */
  private exclusive<T>(top: string, fn: () => Promise<T>): Promise<T> {
    let real = top;
    try {
      real = fs.realpathSync(top);
    } catch {
      // Gone: the call fails on its own.
    }
    return withFileLock(path.join(real, '.git', 'bmad-remote'), fn);
  }

  private async call(r: StoredRemote, top: string, args: string[], tail: string[], opts: { timeoutMs?: number; onProgress?: (p: GitProgress) => void } = {}): Promise<RemoteResult> {
    return remoteGit(args, tail, {
      cwd: top,
      remote: this.parse(r.url),
      allowHosts: this.opts.allowHosts,
      credential: this.credentialOf(r),
      sshDir: this.opts.sshDir ?? null,
      ...opts,
    });
  }

  private failure(r: StoredRemote, result: RemoteResult, doing: string): AppError {
    return remoteFailure(result, this.parse(r.url), doing, forgeName(r.forge));
  }

  /** Fetches one branch into its tracking ref: its head, or null when the remote has no such branch. Call inside `exclusive`. */
  private async fetchBranch(r: StoredRemote, top: string, branch: string): Promise<string | null> {
    checkBranch(branch);
    const result = await this.call(r, top, ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--no-recurse-submodules', '--no-auto-gc'], [`+refs/heads/${branch}:${trackingRef(branch)}`], { timeoutMs: 600_000 });
    if (result.code === 0) return resolveCommit(top, trackingRef(branch));
    if (/couldn't find remote ref/i.test(result.stderr)) {
      // The remote has no such branch (any more): nothing to mirror.
      await git(['update-ref', '-d', trackingRef(branch)], { cwd: top });
      return null;
    }
    throw this.failure(r, result, `fetching ${branch}`);
  }

  private async recordFetch(r: StoredRemote, fetch: LastFetch): Promise<void> {
    await this.opts.store.put(r.projectId, { lastFetch: fetch }, r.updatedBy).catch(() => undefined);
  }

  private async requireRemote(projectId: string): Promise<StoredRemote> {
    const r = await this.opts.store.get(projectId);
    if (!r) throw new AppError('E_CONFLICT', 'The project has no remote; set one with PUT /api/projects/:id/remote.');
    return r;
  }

  /**
   * Fetches the base branch from the remote and brings the local base along when that loses
   * nothing (see base.ts). The outcome, good or bad, is the remote's `lastFetch`.
   */
  async fetch(project: RemoteProject, branch: string): Promise<FetchOutcome> {
    const r = await this.requireRemote(project.id);
    const top = this.top(project);
    return this.exclusive(top, async () => {
      try {
        const head = await this.fetchBranch(r, top, branch);
        const local = head ? await fastForward(top, branch, head) : 'missing-on-remote';
        await this.recordFetch(r, { at: new Date().toISOString(), ok: true, branch, head });
        return { branch, remoteHead: head, local, state: await baseState(top, branch) };
      } catch (e) {
        await this.recordFetch(r, { at: new Date().toISOString(), ok: false, branch, code: isAppError(e) ? e.code : 'E_INTERNAL', message: isAppError(e) ? e.message.slice(0, 500) : 'The fetch failed.' });
        throw e;
      }
    });
  }

  /** A fetch unless the last good one of this branch is younger than `maxAgeMs`; null without a remote. Failures are the caller's to weigh. */
  async fetchIfStale(project: RemoteProject, branch: string, maxAgeMs: number): Promise<FetchOutcome | null> {
    const r = await this.opts.store.get(project.id);
    if (!r) return null;
    const last = r.lastFetch;
    if (last?.ok && last.branch === branch && Date.now() - Date.parse(last.at) < maxAgeMs) return null;
    return this.fetch(project, branch);
  }

  /** The local base against the remote's, from refs (no network); null without a remote. */
  async state(project: RemoteProject, branch: string): Promise<BaseState | null> {
    if (!(await this.opts.store.get(project.id))) return null;
    const top = findRepositoryTop(project.root);
    return top ? baseState(top, branch) : null;
  }

  /**
   * Where a new workspace of `branch` starts, fetched first (a teammate's push a minute ago is in
   * it): undefined without a remote (the local base, as without one). A remote that fails is the
   * error it is (unreachable, refused token...): work does not start on a base that may be stale.
   */
  async startCommit(project: RemoteProject, branch: string, person: GitPerson): Promise<string | undefined> {
    const r = await this.opts.store.get(project.id);
    if (!r) return undefined;
    const outcome = await this.fetch(project, branch);
    if (!outcome.remoteHead) throw new AppError('E_REMOTE_NOT_FOUND', `The remote has no branch "${branch}"; push it there first, or set another base branch.`);
    return (await startCommit(this.top(project), branch, person)) ?? undefined;
  }

  /** Pushes `commit` to the remote's `branch`, never forced (inside `exclusive`); on success the tracking ref follows. */
  private async pushCommit(r: StoredRemote, top: string, branch: string, commit: string, lease?: string | null): Promise<PushOutcome> {
    checkBranch(branch);
    const args = ['push', '--porcelain', '--no-verify', '--no-follow-tags', '--no-recurse-submodules'];
    if (lease !== undefined) args.push(`--force-with-lease=refs/heads/${branch}:${lease ?? ''}`);
    const result = await this.call(r, top, args, [`${commit}:refs/heads/${branch}`], { timeoutMs: 600_000 });
    const refs = parsePushPorcelain(result.stdout);
    const outcome = pushOutcome(refs[0], result.messages);
    if (result.code !== 0 && !refs.length) throw this.failure(r, result, `pushing ${branch}`);
    if (outcome === 'rejected') throw new AppError('E_REMOTE_REJECTED', `The remote refused the push to ${branch}: ${refs[0]?.reason ?? 'no reason given'}. ${result.messages.split('\n').filter((l) => l.startsWith('remote:')).slice(-2).join(' ')}`.trim());
    if (outcome === 'ok') await git(['update-ref', '-m', 'bmad: pushed', trackingRef(branch), commit], { cwd: top });
    return outcome;
  }

  /**
   * What lib/engine/sprint pushes status changes with, for a project with a remote (null without
   * one): fetch a branch, push a commit onto it (fast-forward only), and the protected base's
   * fallback to STATUS_BRANCH, remembered in the remote's settings.
   */
  async sprintRemote(project: RemoteProject): Promise<SprintRemoteOf | null> {
    const r = await this.opts.store.get(project.id);
    if (!r) return null;
    const top = this.top(project);
    const hooks = this.opts.hooks;
    const store = this.opts.store;
    const self = this;
    return {
      statusBranch: r.statusBranch,
      trackingRef,
      fetch: (branch) => self.exclusive(top, () => self.fetchBranch(r, top, branch)),
      async push(branch, commit) {
        const outcome = await self.exclusive(top, () => self.pushCommit(r, top, branch, commit));
        return outcome === 'rejected' ? 'moved' : outcome;
      },
      async useStatusBranch(base) {
        await store.put(project.id, { statusBranch: STATUS_BRANCH }, r.updatedBy);
        log.info('remote.status_branch', { project: project.id, base, branch: STATUS_BRANCH });
        return STATUS_BRANCH;
      },
      async pushedToStatusBranch(base) {
        await hooks?.statusBranchPushed?.(project.id, STATUS_BRANCH, base).catch((e: unknown) => log.warn('remote.status_branch_hook_failed', { project: project.id, message: String((e as Error)?.message ?? e).slice(0, 200) }));
      },
    };
  }

  /**
   * For a merge in push mode (null otherwise): before it, the base fetched and fast-forwarded (a
   * base that diverged from the remote's, or a checkout that keeps it behind, refuses the merge);
   * `publish` then pushes the merge's result before the local base is moved to it: `retry` when
   * the remote moved meanwhile (fetched again: the merge is made again on the new head), an error
   * when the remote refuses otherwise. Never forced.
   */
  async pushModeMerge(project: RemoteProject, branch: string): Promise<{ publish: (next: string, old: string) => Promise<'ok' | 'retry'> } | null> {
    const r = await this.opts.store.get(project.id);
    if (!r || r.mode !== 'push') return null;
    const top = this.top(project);
    const catchUp = async () => {
      const outcome = await this.fetch(project, branch);
      if (!outcome.remoteHead) return;
      if (outcome.local === 'diverged') {
        throw new AppError('E_REMOTE_DIVERGED', `The server's ${branch} and the remote's have diverged (${outcome.state.ahead} and ${outcome.state.behind} commits apart); bring them together in the project folder (merge the remote's ${branch} and push) before merging here.`);
      }
      if (outcome.local === 'blocked') throw new AppError('E_BASE_DIRTY', `The project folder's changes keep its ${branch} from taking the remote's new commits; commit or discard them first.`);
    };
    await catchUp();
    return {
      publish: async (next) => {
        const outcome = await this.exclusive(top, () => this.pushCommit(r, top, branch, next));
        if (outcome === 'ok') {
          log.info('remote.pushed', { project: project.id, branch });
          return 'ok';
        }
        if (outcome === 'protected') throw new AppError('E_REMOTE_REJECTED', `The remote refused the push to ${branch} as a protected branch: merge through pull requests (mode pull-request), or allow the push there.`);
        await catchUp();
        return 'retry';
      },
    };
  }

  /**
   * Pushes a workspace's own branch `bmad/<name>` to the same name on the remote, and nothing else:
   * an explicit refspec, `--force-with-lease` with the remote's old value as the caller last saw
   * it (null: the branch must not exist there yet), never a tag. The pushed commit.
   */
  async pushWorkspaceBranch(project: RemoteProject, branch: string, expectedOld: string | null): Promise<string> {
    if (!/^bmad\/[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/.test(branch) || branch.includes('..') || branch.endsWith('.lock') || branch === STATUS_BRANCH) {
      throw new AppError('E_VALIDATION', 'Only a workspace\'s own bmad/<name> branch is pushed.', { field: 'branch' });
    }
    if (expectedOld !== null && !/^[0-9a-f]{40,64}$/.test(expectedOld)) throw new AppError('E_VALIDATION', 'The expected old value must be a commit id or null.', { field: 'expectedOld' });
    const r = await this.requireRemote(project.id);
    const top = this.top(project);
    const head = await resolveCommit(top, `refs/heads/${branch}`);
    if (!head) throw new AppError('E_CONFLICT', `The branch "${branch}" does not exist in the project repository.`);
    return this.exclusive(top, async () => {
      const outcome = await this.pushCommit(r, top, branch, head, expectedOld);
      if (outcome === 'ok') return head;
      if (outcome === 'moved') throw new AppError('E_REMOTE_REJECTED', `The remote's ${branch} changed since it was last pushed from here; nothing was overwritten.`);
      throw new AppError('E_REMOTE_REJECTED', `The remote refused the push to ${branch} as protected.`);
    });
  }
}
