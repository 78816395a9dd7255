import crypto from 'node:crypto';
import { numeric, webLink, type PullRequestState, type WebhookVerifier } from './forge';
import type { ForgeKind } from './types';

/**
 * Forges' webhooks: each delivery verified against the raw body with the project's webhook secret
 * before a byte of it is parsed (GitHub's `X-Hub-Signature-256`, an HMAC-SHA256 prefixed
 * `sha256=`; Gitea's and Forgejo's `X-Gitea-Signature` / `X-Forgejo-Signature`, the bare hex HMAC;
 * GitLab's `X-Gitlab-Token`, the secret itself), compared in constant time; then read into the one
 * thing the server acts on: a pull request's state, or a commit whose checks changed.
 */

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  // Equal lengths first (timingSafeEqual needs them), then a comparison that takes the same time whatever differs.
  if (x.length !== y.length) {
    crypto.timingSafeEqual(x, x);
    return false;
  }
  return crypto.timingSafeEqual(x, y);
}

const hmac = (secret: string, body: Uint8Array) => crypto.createHmac('sha256', secret).update(body).digest('hex');

const github: WebhookVerifier = {
  kind: 'github',
  verify(headers, body, secret) {
    const sig = headers.get('x-hub-signature-256');
    if (!sig || !/^sha256=[0-9a-f]{64}$/i.test(sig)) return false;
    return safeEqual(sig.slice(7).toLowerCase(), hmac(secret, body));
  },
  deliveryId: (headers) => headers.get('x-github-delivery'),
};

const gitlab: WebhookVerifier = {
  kind: 'gitlab',
  verify(headers, _body, secret) {
    const token = headers.get('x-gitlab-token');
    if (!token) return false;
    // Both sides hashed first: equal lengths, and the secret's length not told by the timing.
    return safeEqual(crypto.createHash('sha256').update(token).digest('hex'), crypto.createHash('sha256').update(secret).digest('hex'));
  },
  deliveryId: (headers) => headers.get('x-gitlab-event-uuid') ?? headers.get('idempotency-key') ?? headers.get('x-gitlab-webhook-uuid'),
};

const gitea: WebhookVerifier = {
  kind: 'gitea',
  verify(headers, body, secret) {
    const sig = headers.get('x-gitea-signature') ?? headers.get('x-forgejo-signature');
    if (!sig || !/^[0-9a-f]{64}$/i.test(sig)) return false;
    return safeEqual(sig.toLowerCase(), hmac(secret, body));
  },
  deliveryId: (headers) => headers.get('x-gitea-delivery') ?? headers.get('x-forgejo-delivery'),
};

export const forgeWebhooks: Record<ForgeKind, WebhookVerifier> = { github, gitlab, gitea };

/** Which forge sent a delivery, by the headers each one always sends. */
export function webhookKind(headers: Headers): ForgeKind | null {
  // Gitea also sends X-GitHub-Event for compatibility: its own header decides first.
  if (headers.has('x-gitea-event') || headers.has('x-forgejo-event')) return 'gitea';
  if (headers.has('x-gitlab-event')) return 'gitlab';
  if (headers.has('x-github-event')) return 'github';
  return null;
}

/** What a delivery says, once verified. */
export type ForgeEvent =
  | {
      type: 'pull-request';
      number: number;
      state: PullRequestState;
      headSha: string | null;
      url: string | null;
      draft: boolean | null;
      mergeCommit: string | null;
      /** The repository the delivery is about (`owner/name`; GitLab: the project's full path), when it says. */
      repository: string | null;
      /** The pull request's head branch, when it says. */
      headRef: string | null;
    }
  | { type: 'checks'; sha: string }
  | { type: 'ignored'; event: string };

type Json = Record<string, any>;
const obj = (v: unknown): Json => (v && typeof v === 'object' ? (v as Json) : {});
const text = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);
/** A commit id, or nothing: it is put into API paths later. */
const commitId = (v: unknown): string | null => (typeof v === 'string' && /^[0-9a-f]{7,64}$/i.test(v) ? v : null);

/** A verified delivery read: only what the server acts on; anything else is `ignored`. */
export function readEvent(kind: ForgeKind, headers: Headers, payload: unknown): ForgeEvent {
  const p = obj(payload);
  if (kind === 'github') {
    const event = headers.get('x-github-event') ?? '';
    if (event === 'pull_request') {
      const pr = obj(p.pull_request);
      const merged = pr.merged === true || !!pr.merged_at;
      return { type: 'pull-request', number: numeric(pr.number ?? p.number), state: merged ? 'merged' : pr.state === 'closed' ? 'closed' : 'open', headSha: commitId(pr.head?.sha), url: webLink(pr.html_url), draft: typeof pr.draft === 'boolean' ? pr.draft : null, mergeCommit: merged ? commitId(pr.merge_commit_sha) : null, repository: text(obj(p.repository).full_name), headRef: text(pr.head?.ref) };
    }
    if (event === 'check_run' && commitId(p.check_run?.head_sha)) return { type: 'checks', sha: p.check_run.head_sha };
    if (event === 'check_suite' && commitId(p.check_suite?.head_sha)) return { type: 'checks', sha: p.check_suite.head_sha };
    if (event === 'status' && commitId(p.sha)) return { type: 'checks', sha: p.sha };
    return { type: 'ignored', event };
  }
  if (kind === 'gitlab') {
    const event = headers.get('x-gitlab-event') ?? '';
    const a = obj(p.object_attributes);
    if (event === 'Merge Request Hook' || p.object_kind === 'merge_request') {
      const state = a.state === 'merged' ? 'merged' : a.state === 'closed' || a.state === 'locked' ? 'closed' : 'open';
      return { type: 'pull-request', number: numeric(a.iid), state, headSha: commitId(a.last_commit?.id), url: webLink(a.url), draft: typeof a.draft === 'boolean' ? a.draft : null, mergeCommit: state === 'merged' ? commitId(a.merge_commit_sha) : null, repository: text(obj(p.project).path_with_namespace), headRef: text(a.source_branch) };
    }
    if ((event === 'Pipeline Hook' || p.object_kind === 'pipeline') && commitId(a.sha)) return { type: 'checks', sha: a.sha };
    return { type: 'ignored', event };
  }
  const event = headers.get('x-gitea-event') ?? headers.get('x-forgejo-event') ?? '';
  if (event === 'pull_request') {
    const pr = obj(p.pull_request);
    return { type: 'pull-request', number: numeric(pr.number ?? p.number), state: pr.merged === true ? 'merged' : pr.state === 'closed' ? 'closed' : 'open', headSha: commitId(pr.head?.sha), url: webLink(pr.html_url), draft: typeof pr.draft === 'boolean' ? pr.draft : null, mergeCommit: pr.merged === true ? commitId(pr.merge_commit_sha) : null, repository: text(obj(p.repository).full_name), headRef: text(pr.head?.ref) };
  }
  if (event === 'status' && commitId(p.sha)) return { type: 'checks', sha: p.sha };
  return { type: 'ignored', event };
}
