import type { ForgeKind } from './types';

/**
 * The seam for forges' APIs (GitHub, GitLab, Gitea/Forgejo): pull requests, their state and
 * checks, webhooks. Git itself (clone, fetch, push) is this module's own and needs no forge; a
 * forge client is made per call from the project's remote, its token opened for that call only.
 * Clients register by kind (`RemoteServiceOptions.forges`); a project whose forge has none
 * registered answers E_CONFLICT naming it.
 */
export interface ForgeTarget {
  kind: ForgeKind;
  /** The API's root: the remote's `apiUrl`, else the forge's public one (`https://api.github.com`...). */
  apiUrl: string | null;
  /** The repository on the forge: `owner/name` (GitLab: the project's full path). */
  repository: string;
  /** The remote's host (for messages). */
  host: string;
  /** The token, opened for this call only; never logged, never in an error. */
  token: string | null;
}

export type PullRequestState = 'open' | 'closed' | 'merged';

export interface PullRequest {
  number: number;
  url: string;
  state: PullRequestState;
  draft?: boolean;
  /** The head branch's commit the forge knows. */
  headSha?: string;
  /** Once merged: the commit the merge made (or the head it fast-forwarded to). */
  mergeCommit?: string;
  title?: string;
}

export interface PullRequestInput {
  /** `bmad/<name>` (or STATUS_BRANCH), already pushed. */
  head: string;
  base: string;
  title: string;
  body: string;
  draft?: boolean;
}

export type CheckState = 'pending' | 'success' | 'failure' | 'neutral';

export interface ChecksSummary {
  /** Every check together; null when the commit has none. */
  state: CheckState | null;
  checks: { name: string; state: CheckState; url?: string }[];
}

/** A read that may come back unchanged (conditional requests: ETag / If-None-Match where the API has them). */
export type Conditional<T> = { changed: true; value: T; etag?: string } | { changed: false; etag?: string };

export interface ForgeClient {
  readonly kind: ForgeKind;
  openPullRequest(input: PullRequestInput): Promise<PullRequest>;
  updatePullRequest(number: number, patch: Partial<Pick<PullRequestInput, 'title' | 'body' | 'draft'>>): Promise<PullRequest>;
  /** The open pull request from `head` into `base`, if there is one. */
  findPullRequest(head: string, base: string): Promise<PullRequest | null>;
  getPullRequest(number: number, opts?: { etag?: string }): Promise<Conditional<PullRequest>>;
  checks(sha: string): Promise<ChecksSummary>;
}

/** A forge's webhook: verified with the project's webhook secret against the raw body, before anything is read from it. */
export interface WebhookVerifier {
  readonly kind: ForgeKind;
  /** True only for a delivery signed (or tokened) with `secret`; compares in constant time. */
  verify(headers: Headers, rawBody: Uint8Array, secret: string): boolean;
  /** The delivery's id, so the same delivery twice changes nothing twice. */
  deliveryId(headers: Headers): string | null;
}

export interface ForgeRegistry {
  client?: Partial<Record<ForgeKind, (target: ForgeTarget) => ForgeClient>>;
  webhook?: Partial<Record<ForgeKind, WebhookVerifier>>;
}

/** Hooks the forges' part plugs into: what happens once the server pushed, so it can keep pull requests current. */
export interface RemoteHooks {
  /**
   * The base refused status changes as protected, and they were pushed to `branch`
   * (STATUS_BRANCH) instead: the forges' part keeps one open pull request of it into `base`.
   */
  statusBranchPushed?(projectId: string, branch: string, base: string): Promise<void>;
}

/** The forge a host is known to run; null for any other host (set `forge` for a self-hosted one). */
export function guessForge(host: string): ForgeKind | null {
  const h = host.toLowerCase();
  if (h === 'github.com' || h === 'www.github.com') return 'github';
  if (h === 'gitlab.com' || h === 'www.gitlab.com') return 'gitlab';
  if (h === 'codeberg.org' || h === 'gitea.com') return 'gitea';
  return null;
}

/** How people call a forge in messages. */
export function forgeName(kind: ForgeKind | null): string | null {
  return kind === 'github' ? 'GitHub' : kind === 'gitlab' ? 'GitLab' : kind === 'gitea' ? 'Gitea' : null;
}

/** The user name sent with a token when the remote names none: what each forge expects beside a token. */
export function tokenUser(kind: ForgeKind | null): string {
  return kind === 'gitlab' ? 'oauth2' : 'x-access-token';
}

/**
 * A link a forge gave (a pull request's or a check's page) as the board may show it: an absolute
 * http(s) URL of at most 2,000 characters, else null. A hostile or broken forge (or a signed
 * delivery made by anyone holding the secret) could otherwise put `javascript:` or `data:` on a
 * card that people click.
 */
export function webLink(v: unknown): string | null {
  if (typeof v !== 'string' || !v || v.length > 2000) return null;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
  // Credentials in a link are never a forge's page; they would be shown to every viewer.
  if (u.username || u.password) return null;
  return u.href;
}

/**
 * A field of a forge's JSON as text: strings and numbers as they are, anything else empty.
 * `String()` of an object whose `toString` the JSON set to a number throws, and would make a
 * forge's odd answer a 500.
 */
export function scalar(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

/** A field of a forge's JSON as a number (NaN unless it is one, or a string of one). */
export function numeric(v: unknown): number {
  return typeof v === 'number' ? v : typeof v === 'string' && v.trim() ? Number(v) : Number.NaN;
}
