import { randomUUID } from 'node:crypto';
import { AppError, isAppError } from '../../core/errors';
import { log } from '../../core/log';
import { emitProjectEvent } from '../events';
import { forgeName, type PullRequest } from './forge';
import type { PullRequestStore, StoredPullRequest } from './pr-store';
import type { RemoteService } from './service';
import { repositoryPathOf } from '../../sandbox/git/remote-url';
import { readEvent, webhookKind, type ForgeEvent } from './webhooks';

/** A project as the forges' part needs it: its folder (never shown) and its install's document folders. */
export interface ForgeProject {
  id: string;
  root: string;
  install: { documentFolders: Record<string, string> };
}

/** One command an agent ran in a workspace, as its conversation stored it. */
export interface RanCommand {
  command: string;
  exitCode: number | null;
}

/** A workspace as this part reads it (lib/engine/workspaces' Workspace). */
export interface ForgeWorkspace {
  id: string;
  name: string;
  branch: string;
  base: string;
  baseCommit: string;
  status: 'open' | 'merged' | 'discarded' | 'closed';
}

type ProjectRef = { id: string; root: string };

/**
 * What the forges' part uses of workspaces and the sprint, handed in (lib/engine/runtime wires
 * them): remotes sit below both and import neither.
 */
export interface ForgeWorkspaces {
  find(project: ProjectRef, id: string): Promise<ForgeWorkspace>;
  /** Its commits beyond the base, newest first. */
  get(project: ProjectRef, id: string): Promise<{ commits: { sha: string; subject: string; author: string; date: string }[] }>;
  /** Its branch brought up to its clone (a refused sync is the caller's refusal). */
  syncOrRefuse(project: ProjectRef, ws: ForgeWorkspace): Promise<unknown>;
  store: {
    get(id: string): Promise<ForgeWorkspace | null>;
    update(id: string, patch: { status: ForgeWorkspace['status']; mergedCommit?: string; mergedInto?: string; mergedAt?: string; mergedBy?: string }, fromStatus?: ForgeWorkspace['status']): Promise<ForgeWorkspace | null>;
  };
}

/** The story a workspace was made for, as the board reads it. */
export interface ForgeStory {
  key: string;
  title: string | null;
  /** Relative to the project. */
  file: string | null;
  /** Its status in the sprint now. */
  status: string | null;
}

export interface ForgeServiceDeps {
  remotes: RemoteService;
  workspaces: ForgeWorkspaces;
  store: PullRequestStore;
  project(projectId: string): Promise<ForgeProject | null>;
  /** The story a workspace was made for (the story of the runs the board started in it), read from its base. */
  storyOf(project: ForgeProject, ws: ForgeWorkspace): Promise<ForgeStory | null>;
  /**
   * Moves a story in the sprint status of the workspace's base: the status change the board's
   * Merge makes (committed, and pushed to the remote's base or status branch).
   */
  moveStory(project: ForgeProject, ws: ForgeWorkspace, key: string, status: string, by: { name: string; email: string }): Promise<void>;
  /** The run_command calls of the workspace's conversations, oldest first. */
  commandsOf(projectId: string, workspaceId: string): Promise<RanCommand[]>;
  /** FORGE_POLL_SECONDS (0: no polling). */
  pollSeconds: number;
}

export type WebhookOutcome = { duplicate: true } | { duplicate: false; event: string; changed: boolean };

const POLL_LEASE = 'forge-poll';

/**
 * Pull requests once opened: their state and checks learned by webhook or by polling, and what the
 * board does with them. A merge upstream makes the workspace `merged` and its story `done`, a close
 * without one makes it `closed` and the story `review` again, with the same status change the
 * board's Merge makes (lib/engine/sprint's setStoryStatus: committed and pushed to the remote's
 * base, or its status branch). Every state change is conditional on the state it leaves, so a
 * delivery twice, a webhook and a poll, or two instances change the board once. Polling runs on one
 * instance at a time (a lease row), with conditional requests (ETag) where the forge has them.
 */
export class ForgeService {
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private readonly holder = randomUUID();

  constructor(readonly deps: ForgeServiceDeps) {}

  get store(): PullRequestStore {
    return this.deps.store;
  }

  /**
   * Takes what the forge says of a pull request: its url, head and draft flag always; its state
   * only when it moved from the one stored (then the workspace and the story follow). True when
   * the state changed here.
   */
  async applyState(row: StoredPullRequest, pr: Pick<PullRequest, 'state'> & Partial<PullRequest>, extra: { etag?: string } = {}): Promise<boolean> {
    const patch = {
      ...(pr.url ? { url: pr.url } : {}),
      ...(pr.headSha ? { headSha: pr.headSha } : {}),
      ...(pr.draft !== undefined ? { draft: pr.draft } : {}),
      ...(extra.etag ? { etag: extra.etag } : {}),
    };
    if (pr.state === row.state) {
      if (Object.keys(patch).length) await this.deps.store.update(row.workspaceId, patch);
      return false;
    }
    const forge = forgeName((await this.deps.remotes.get(row.projectId))?.forge ?? null) ?? 'the forge';
    const word = forge === 'GitLab' ? `Merge request !${row.number}` : `Pull request #${row.number}`;
    const note = pr.state === 'closed' ? `${word} was closed on ${forge} without a merge; the story is back in review.` : pr.state === 'merged' ? `${word} was merged on ${forge}.` : `${word} was reopened on ${forge}.`;
    const moved = await this.deps.store.update(row.workspaceId, { ...patch, state: pr.state, note }, row.state);
    // Another delivery, a poll or an instance took this change first.
    if (!moved) return false;
    log.info('forge.pull_request_state', { project: row.projectId, workspace: row.workspaceId, number: row.number, from: row.state, to: pr.state });
    emitProjectEvent(row.projectId, { type: 'workspace', workspaceId: row.workspaceId });
    await this.boardFollows(moved, pr, forge).catch((e: unknown) => log.warn('forge.board_follow_failed', { project: row.projectId, workspace: row.workspaceId, code: isAppError(e) ? e.code : 'unknown', message: String((e as Error)?.message ?? e).slice(0, 200) }));
    return true;
  }

  private async boardFollows(row: StoredPullRequest, pr: Partial<PullRequest>, forge: string): Promise<void> {
    const { workspaces } = this.deps;
    const ws = await workspaces.store.get(row.workspaceId);
    if (!ws) return;
    let changed = false;
    if (row.state === 'merged') {
      changed = !!(await workspaces.store.update(ws.id, { status: 'merged', mergedCommit: pr.mergeCommit ?? pr.headSha ?? row.headSha ?? ws.baseCommit, mergedInto: ws.base, mergedAt: new Date().toISOString(), mergedBy: forge }, ws.status === 'closed' ? 'closed' : 'open'));
    } else if (row.state === 'closed') {
      changed = !!(await workspaces.store.update(ws.id, { status: 'closed' }, 'open'));
    } else {
      changed = !!(await workspaces.store.update(ws.id, { status: 'open' }, 'closed'));
    }
    if (!changed || row.state === 'open') return;
    const project = await this.deps.project(row.projectId);
    const story = project ? await this.deps.storyOf(project, ws) : null;
    if (!story || !project) return;
    const actor = { name: `${forge} ${forge === 'GitLab' ? '!' : '#'}${row.number}`, email: 'bmad@localhost' };
    if (row.state === 'merged') {
      await this.deps.moveStory(project, ws, story.key, 'done', actor);
      return;
    }
    // Closed: back to review, unless a person already moved it back further (to do, or backlog).
    if (story.status === 'done' || story.status === 'in-progress' || story.status === 'review') await this.deps.moveStory(project, ws, story.key, 'review', actor);
  }

  /**
   * The protected base's status branch was pushed: one open pull request of it into the base is
   * kept (opened when there is none; the forge shows its new commits by itself).
   */
  async statusBranchPushed(projectId: string, branch: string, base: string): Promise<void> {
    const remote = await this.deps.remotes.get(projectId);
    if (!remote?.forge || remote.mode !== 'pull-request' || !remote.token) return;
    const client = this.deps.remotes.forge(remote);
    if (await client.findPullRequest(branch, base)) return;
    const pr = await client.openPullRequest({
      head: branch,
      base,
      title: 'Sprint status changes',
      body: `The board's status changes, kept on \`${branch}\` because \`${base}\` is protected. BMAD orchestrator keeps this pull request current; merge it to bring the statuses into \`${base}\`.`,
    });
    log.info('forge.status_pull_request', { project: projectId, number: pr.number });
  }

  /** Reads the checks of an open pull request's head again (failures logged; the last ones kept). */
  async refreshChecks(row: StoredPullRequest): Promise<StoredPullRequest | null> {
    // A head a forge gave goes into an API path: a commit id only (`../..` would walk the API).
    if (!row.headSha || !/^[0-9a-f]{7,64}$/i.test(row.headSha)) return row;
    const remote = await this.deps.remotes.get(row.projectId);
    if (!remote?.forge) return row;
    try {
      const checks = await this.deps.remotes.forge(remote).checks(row.headSha);
      return await this.deps.store.update(row.workspaceId, { checks });
    } catch (e) {
      log.warn('forge.checks_failed', { project: row.projectId, number: row.number, code: isAppError(e) ? e.code : 'unknown' });
      return row;
    }
  }

  /**
   * A delivery to POST /api/forge/:projectId/hook: verified against the raw body with the project's
   * webhook secret before anything is parsed (401 and nothing changes otherwise), then claimed by
   * its delivery id (the same delivery twice changes nothing twice), then acted on: a pull
   * request's delivery of this repository and branch has the pull request read from the forge.
   * `body` may be a reader, called only once the project is known to take deliveries.
   */
  async receive(projectId: string, headers: Headers, body: Uint8Array | (() => Promise<Uint8Array>)): Promise<WebhookOutcome> {
    const remote = await this.deps.remotes.get(projectId);
    if (!remote || !(await this.deps.project(projectId))) throw new AppError('E_PROJECT_NOT_FOUND', 'Project not found.');
    const refuse = (why: string) => {
      log.warn('forge.hook_refused', { project: projectId, why });
      return new AppError('E_UNAUTHENTICATED', `The delivery was refused: ${why}.`);
    };
    const secret = this.deps.remotes.webhookSecretOf(remote);
    if (!secret) throw refuse('the project has no webhook secret');
    const kind = webhookKind(headers);
    if (!kind || !remote.forge || kind !== remote.forge) throw refuse(`it is not a ${forgeName(remote.forge) ?? 'forge'} delivery`);
    const verifier = this.deps.remotes.forges.webhook?.[kind];
    if (!verifier) throw refuse(`it is not a ${forgeName(remote.forge) ?? 'forge'} delivery`);
    // GitLab's token is in a header: a wrong one is refused before the body is read.
    if (kind === 'gitlab' && !verifier.verify(headers, new Uint8Array(), secret)) throw refuse('its signature does not match the project\'s webhook secret');
    const raw = typeof body === 'function' ? await body() : body;
    if (!verifier.verify(headers, raw, secret)) throw refuse('its signature does not match the project\'s webhook secret');
    const delivery = verifier.deliveryId(headers);
    if (delivery && !(await this.deps.store.claimDelivery(projectId, delivery.slice(0, 200)))) {
      log.info('forge.hook_duplicate', { project: projectId, delivery: delivery.slice(0, 200) });
      return { duplicate: true };
    }
    try {
      let payload: unknown;
      try {
        payload = JSON.parse(Buffer.from(raw).toString('utf8'));
      } catch {
        throw new AppError('E_VALIDATION', 'The delivery is not JSON (set the webhook\'s content type to application/json).', { field: 'body' });
      }
      const event = readEvent(kind, headers, payload);
      let changed = false;
      if (event.type === 'pull-request' && Number.isInteger(event.number)) {
        const row = await this.deps.store.byNumber(projectId, event.number);
        const other = row ? this.notOurs(event, remote.url, row.branch) : null;
        if (other) log.warn('forge.hook_other_pull_request', { project: projectId, number: event.number, why: other });
        if (row && !other) {
          // The delivery says that #n changed; the forge's API says what it is now. A delivery id is
          // not signed (GitHub's, Gitea's) and GitLab's token signs nothing, so an old "closed"
          // delivery sent again under a new id must not close a pull request reopened since.
          const read = await this.deps.remotes.forge(remote).getPullRequest(row.number);
          if (read.changed) changed = await this.applyState(row, read.value);
          const now = await this.deps.store.get(row.workspaceId);
          if (now?.state === 'open') await this.refreshChecks(now);
        }
      } else if (event.type === 'checks') {
        for (const row of await this.deps.store.list(projectId)) if (row.state === 'open' && row.headSha === event.sha) await this.refreshChecks(row);
      }
      log.info('forge.hook', { project: projectId, forge: kind, event: event.type === 'ignored' ? event.event.slice(0, 60) : event.type, changed });
      return { duplicate: false, event: event.type, changed };
    } catch (e) {
      // Not acted on: the forge's retry of it is.
      if (delivery) await this.deps.store.releaseDelivery(projectId, delivery.slice(0, 200)).catch(() => undefined);
      throw e;
    }
  }

  /**
   * Why a signed delivery about pull request #n is not about this project's #n, or null when it
   * is: an organisation's or group's webhook shares one secret among repositories whose numbers
   * overlap, so the repository it names must be the remote's and its head the workspace's branch.
   * A delivery that names no repository is not acted on (every forge names it).
   */
  private notOurs(event: Extract<ForgeEvent, { type: 'pull-request' }>, remoteUrl: string, branch: string): string | null {
    let ours: string;
    try {
      ours = repositoryPathOf(this.deps.remotes.parse(remoteUrl));
    } catch {
      return 'the remote URL is no longer accepted';
    }
    if (!event.repository) return 'it names no repository';
    if (event.repository.toLowerCase() !== ours.toLowerCase()) return 'it is about another repository';
    if (event.headRef !== null && event.headRef !== branch) return 'its head is another branch';
    return null;
  }

  /** One poll of every open pull request (this instance holds the lease, or nothing is done). */
  async pollOnce(): Promise<{ polled: number; changed: number }> {
    const ms = Math.max(this.deps.pollSeconds, 1) * 1000;
    if (!(await this.deps.store.takeLease(POLL_LEASE, this.holder, ms * 2 + 5_000))) return { polled: 0, changed: 0 };
    let polled = 0;
    let changed = 0;
    for (const row of await this.deps.store.listOpen()) {
      const remote = await this.deps.remotes.get(row.projectId);
      if (!remote?.forge || remote.mode !== 'pull-request') continue;
      try {
        const got = await this.deps.remotes.forge(remote).getPullRequest(row.number, row.etag ? { etag: row.etag } : {});
        polled++;
        if (got.changed && (await this.applyState(row, got.value, got.etag ? { etag: got.etag } : {}))) changed++;
        const now = await this.deps.store.get(row.workspaceId);
        if (now?.state === 'open') await this.refreshChecks(now);
      } catch (e) {
        log.warn('forge.poll_failed', { project: row.projectId, number: row.number, code: isAppError(e) ? e.code : 'unknown', message: isAppError(e) ? e.message.slice(0, 200) : undefined });
      }
    }
    return { polled, changed };
  }

  /** Polls every FORGE_POLL_SECONDS until stop(); a no-op when it is 0. */
  start(): void {
    if (this.timer || this.deps.pollSeconds <= 0) return;
    const tick = () => {
      if (this.polling) return;
      this.polling = this.pollOnce()
        .then(() => undefined)
        .catch((e: unknown) => log.warn('forge.poll_failed', { code: isAppError(e) ? e.code : 'unknown' }))
        .finally(() => {
          this.polling = null;
        });
    };
    this.timer = setInterval(tick, this.deps.pollSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.polling;
  }
}
