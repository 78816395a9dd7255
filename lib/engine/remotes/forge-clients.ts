import { enc, expect2xx, forgeHttp, type ForgeHttp } from './forge-http';
import { numeric, scalar, webLink, type CheckState, type ChecksSummary, type Conditional, type ForgeClient, type ForgeRegistry, type ForgeTarget, type PullRequest, type PullRequestInput } from './forge';
import { forgeWebhooks } from './webhooks';

/**
 * The forge clients behind `ForgeClient`: GitHub's REST API (v3; GitHub Enterprise at
 * `https://host/api/v3`), GitLab's v4 merge requests and pipelines, Gitea's (and Forgejo's) v1
 * pulls and commit statuses. Each speaks only the endpoints it needs, through forge-http.ts.
 */

type Json = Record<string, any>;

const obj = (v: unknown): Json => (v && typeof v === 'object' ? (v as Json) : {});

/** A check's page, when the forge gave one the board may link. */
const linkOf = (v: unknown): { url?: string } => {
  const url = webLink(v);
  return url ? { url } : {};
};

/**
 * A forge's list of checks, as many as a card shows: the server asks for a page of 100, and a
 * forge that answers a million would otherwise have them stored with the pull request and sent
 * with every board.
 */
const MAX_CHECKS = 100;
const listOf = (v: unknown): Json[] => (Array.isArray(v) ? v.slice(0, MAX_CHECKS).map(obj) : []);

/** A check's name as a card shows it: bounded, whatever the forge sent. */
const nameOf = (v: unknown, fallback: string) => (scalar(v) || fallback).slice(0, 200);

/** Every check together: any failure fails, any pending is pending, all success-or-neutral is success. */
export function combine(checks: ChecksSummary['checks']): CheckState | null {
  if (!checks.length) return null;
  if (checks.some((c) => c.state === 'failure')) return 'failure';
  if (checks.some((c) => c.state === 'pending')) return 'pending';
  if (checks.every((c) => c.state === 'neutral')) return 'neutral';
  return 'success';
}

/* ----------------------------------------------------------------------------------- GitHub */

function githubPull(p: Json): PullRequest {
  const merged = p.merged === true || !!p.merged_at;
  return {
    number: numeric(p.number),
    url: webLink(p.html_url) ?? '',
    state: merged ? 'merged' : p.state === 'closed' ? 'closed' : 'open',
    draft: p.draft === true,
    ...(scalar(p.head?.sha) ? { headSha: scalar(p.head.sha) } : {}),
    ...(merged && scalar(p.merge_commit_sha) ? { mergeCommit: scalar(p.merge_commit_sha) } : {}),
    ...(typeof p.title === 'string' ? { title: p.title } : {}),
  };
}

function githubRunState(r: Json): CheckState {
  if (r.status !== 'completed') return 'pending';
  if (r.conclusion === 'success') return 'success';
  if (r.conclusion === 'neutral' || r.conclusion === 'skipped') return 'neutral';
  return 'failure';
}

function githubStatusState(s: string): CheckState {
  return s === 'success' ? 'success' : s === 'pending' ? 'pending' : 'failure';
}

export class GitHubClient implements ForgeClient {
  readonly kind = 'github' as const;
  private readonly repo: string;
  private readonly owner: string;

  constructor(private readonly h: ForgeHttp) {
    const [owner = '', ...rest] = h.target.repository.split('/');
    this.owner = owner;
    this.repo = `/repos/${enc(owner)}/${enc(rest.join('/'))}`;
  }

  async openPullRequest(input: PullRequestInput): Promise<PullRequest> {
    const res = await expect2xx(this.h, { method: 'POST', path: `${this.repo}/pulls`, body: { title: input.title, head: input.head, base: input.base, body: input.body, draft: !!input.draft }, doing: 'opening a pull request' });
    return githubPull(obj(res.body));
  }

  async updatePullRequest(number: number, patch: Partial<Pick<PullRequestInput, 'title' | 'body' | 'draft'>>): Promise<PullRequest> {
    // A pull request's draft flag is changed only through GraphQL; the REST update takes title and body.
    const body: Json = {};
    if (patch.title !== undefined) body.title = patch.title;
    if (patch.body !== undefined) body.body = patch.body;
    const res = await expect2xx(this.h, { method: 'PATCH', path: `${this.repo}/pulls/${number}`, body, doing: `updating pull request #${number}` });
    return githubPull(obj(res.body));
  }

  async findPullRequest(head: string, base: string): Promise<PullRequest | null> {
    const q = `?state=open&head=${enc(`${this.owner}:${head}`)}&base=${enc(base)}&per_page=10`;
    const res = await expect2xx(this.h, { method: 'GET', path: `${this.repo}/pulls${q}`, doing: 'looking for an open pull request' });
    const list = Array.isArray(res.body) ? (res.body as unknown[]).map(obj) : [];
    const found = list.find((p) => p.head?.ref === head && p.base?.ref === base);
    return found ? githubPull(found) : null;
  }

  async getPullRequest(number: number, opts: { etag?: string } = {}): Promise<Conditional<PullRequest>> {
    const res = await expect2xx(this.h, { method: 'GET', path: `${this.repo}/pulls/${number}`, ...(opts.etag ? { etag: opts.etag } : {}), doing: `reading pull request #${number}` }, (s) => s === 200 || s === 304);
    if (res.status === 304) return { changed: false, ...(res.etag ? { etag: res.etag } : {}) };
    return { changed: true, value: githubPull(obj(res.body)), ...(res.etag ? { etag: res.etag } : {}) };
  }

  async checks(sha: string): Promise<ChecksSummary> {
    const [runs, status] = await Promise.all([
      expect2xx(this.h, { method: 'GET', path: `${this.repo}/commits/${enc(sha)}/check-runs?per_page=100`, doing: 'reading check runs' }),
      expect2xx(this.h, { method: 'GET', path: `${this.repo}/commits/${enc(sha)}/status?per_page=100`, doing: 'reading the combined status' }),
    ]);
    const checks: ChecksSummary['checks'] = [];
    for (const r of listOf(obj(runs.body).check_runs)) checks.push({ name: nameOf(r.name, 'check'), state: githubRunState(r), ...linkOf(r.html_url) });
    for (const s of listOf(obj(status.body).statuses)) checks.push({ name: nameOf(s.context, 'status'), state: githubStatusState(scalar(s.state)), ...linkOf(s.target_url) });
    return { state: combine(checks), checks: checks.slice(0, MAX_CHECKS) };
  }
}

/* ----------------------------------------------------------------------------------- GitLab */

function gitlabMr(m: Json): PullRequest {
  return {
    number: numeric(m.iid),
    url: webLink(m.web_url) ?? '',
    state: m.state === 'merged' ? 'merged' : m.state === 'closed' || m.state === 'locked' ? 'closed' : 'open',
    draft: m.draft === true || m.work_in_progress === true,
    ...(scalar(m.sha) ? { headSha: scalar(m.sha) } : {}),
    ...(m.state === 'merged' && scalar(m.merge_commit_sha || m.squash_commit_sha) ? { mergeCommit: scalar(m.merge_commit_sha || m.squash_commit_sha) } : {}),
    ...(typeof m.title === 'string' ? { title: m.title } : {}),
  };
}

function gitlabPipelineState(s: string): CheckState {
  if (s === 'success') return 'success';
  if (s === 'failed') return 'failure';
  if (s === 'canceled' || s === 'skipped' || s === 'manual') return 'neutral';
  return 'pending';
}

const draftTitle = (title: string, draft: boolean | undefined, prefix: string) => (draft ? `${prefix} ${title}` : title);

export class GitLabClient implements ForgeClient {
  readonly kind = 'gitlab' as const;
  private readonly project: string;

  constructor(private readonly h: ForgeHttp) {
    this.project = `/projects/${enc(h.target.repository)}`;
  }

  async openPullRequest(input: PullRequestInput): Promise<PullRequest> {
    const res = await expect2xx(this.h, {
      method: 'POST',
      path: `${this.project}/merge_requests`,
      body: { source_branch: input.head, target_branch: input.base, title: draftTitle(input.title, input.draft, 'Draft:'), description: input.body },
      doing: 'opening a merge request',
    });
    return gitlabMr(obj(res.body));
  }

  async updatePullRequest(number: number, patch: Partial<Pick<PullRequestInput, 'title' | 'body' | 'draft'>>): Promise<PullRequest> {
    const body: Json = {};
    if (patch.title !== undefined) body.title = draftTitle(patch.title, patch.draft, 'Draft:');
    if (patch.body !== undefined) body.description = patch.body;
    const res = await expect2xx(this.h, { method: 'PUT', path: `${this.project}/merge_requests/${number}`, body, doing: `updating merge request !${number}` });
    return gitlabMr(obj(res.body));
  }

  async findPullRequest(head: string, base: string): Promise<PullRequest | null> {
    const q = `?state=opened&source_branch=${enc(head)}&target_branch=${enc(base)}`;
    const res = await expect2xx(this.h, { method: 'GET', path: `${this.project}/merge_requests${q}`, doing: 'looking for an open merge request' });
    const list = Array.isArray(res.body) ? (res.body as unknown[]).map(obj) : [];
    const found = list.find((m) => m.source_branch === head && m.target_branch === base);
    return found ? gitlabMr(found) : null;
  }

  async getPullRequest(number: number, opts: { etag?: string } = {}): Promise<Conditional<PullRequest>> {
    const res = await expect2xx(this.h, { method: 'GET', path: `${this.project}/merge_requests/${number}`, ...(opts.etag ? { etag: opts.etag } : {}), doing: `reading merge request !${number}` }, (s) => s === 200 || s === 304);
    if (res.status === 304) return { changed: false, ...(res.etag ? { etag: res.etag } : {}) };
    return { changed: true, value: gitlabMr(obj(res.body)), ...(res.etag ? { etag: res.etag } : {}) };
  }

  async checks(sha: string): Promise<ChecksSummary> {
    const res = await expect2xx(this.h, { method: 'GET', path: `${this.project}/pipelines?sha=${enc(sha)}&per_page=20`, doing: 'reading pipelines' });
    const list = Array.isArray(res.body) ? (res.body as unknown[]).map(obj) : [];
    // The newest pipeline of the commit is its verdict; older ones were superseded.
    const newest = [...list.slice(0, MAX_CHECKS)].map(obj).sort((a, b) => (numeric(b.id) || 0) - (numeric(a.id) || 0))[0];
    const checks: ChecksSummary['checks'] = newest ? [{ name: nameOf(`pipeline #${scalar(newest.id)}`, 'pipeline'), state: gitlabPipelineState(scalar(newest.status)), ...linkOf(newest.web_url) }] : [];
    return { state: combine(checks), checks };
  }
}

/* ------------------------------------------------------------------------------ Gitea/Forgejo */

function giteaPull(p: Json): PullRequest {
  const merged = p.merged === true;
  return {
    number: numeric(p.number),
    url: webLink(p.html_url) ?? '',
    state: merged ? 'merged' : p.state === 'closed' ? 'closed' : 'open',
    // Gitea marks work in progress by the title's prefix (its `draft` field is recent).
    draft: p.draft === true || /^\s*(WIP:|\[WIP\])/i.test(scalar(p.title)),
    ...(scalar(p.head?.sha) ? { headSha: scalar(p.head.sha) } : {}),
    ...(merged && scalar(p.merge_commit_sha) ? { mergeCommit: scalar(p.merge_commit_sha) } : {}),
    ...(typeof p.title === 'string' ? { title: p.title } : {}),
  };
}

function giteaStatusState(s: string): CheckState {
  if (s === 'success') return 'success';
  if (s === 'pending') return 'pending';
  if (s === 'warning') return 'neutral';
  return 'failure';
}

export class GiteaClient implements ForgeClient {
  readonly kind = 'gitea' as const;
  private readonly repo: string;

  constructor(private readonly h: ForgeHttp) {
    const [owner = '', ...rest] = h.target.repository.split('/');
    this.repo = `/repos/${enc(owner)}/${enc(rest.join('/'))}`;
  }

  async openPullRequest(input: PullRequestInput): Promise<PullRequest> {
    const res = await expect2xx(this.h, { method: 'POST', path: `${this.repo}/pulls`, body: { head: input.head, base: input.base, title: draftTitle(input.title, input.draft, 'WIP:'), body: input.body }, doing: 'opening a pull request' });
    return giteaPull(obj(res.body));
  }

  async updatePullRequest(number: number, patch: Partial<Pick<PullRequestInput, 'title' | 'body' | 'draft'>>): Promise<PullRequest> {
    const body: Json = {};
    if (patch.title !== undefined) body.title = draftTitle(patch.title, patch.draft, 'WIP:');
    if (patch.body !== undefined) body.body = patch.body;
    const res = await expect2xx(this.h, { method: 'PATCH', path: `${this.repo}/pulls/${number}`, body, doing: `updating pull request #${number}` });
    return giteaPull(obj(res.body));
  }

  async findPullRequest(head: string, base: string): Promise<PullRequest | null> {
    for (let page = 1; page <= 5; page++) {
      const res = await expect2xx(this.h, { method: 'GET', path: `${this.repo}/pulls?state=open&limit=50&page=${page}`, doing: 'looking for an open pull request' });
      const list = Array.isArray(res.body) ? (res.body as unknown[]).map(obj) : [];
      const found = list.find((p) => p.head?.ref === head && p.base?.ref === base);
      if (found) return giteaPull(found);
      if (list.length < 50) break;
    }
    return null;
  }

  async getPullRequest(number: number, opts: { etag?: string } = {}): Promise<Conditional<PullRequest>> {
    const res = await expect2xx(this.h, { method: 'GET', path: `${this.repo}/pulls/${number}`, ...(opts.etag ? { etag: opts.etag } : {}), doing: `reading pull request #${number}` }, (s) => s === 200 || s === 304);
    if (res.status === 304) return { changed: false, ...(res.etag ? { etag: res.etag } : {}) };
    return { changed: true, value: giteaPull(obj(res.body)), ...(res.etag ? { etag: res.etag } : {}) };
  }

  async checks(sha: string): Promise<ChecksSummary> {
    const res = await expect2xx(this.h, { method: 'GET', path: `${this.repo}/commits/${enc(sha)}/status`, doing: 'reading the commit status' });
    const checks: ChecksSummary['checks'] = [];
    for (const s of listOf(obj(res.body).statuses)) checks.push({ name: nameOf(s.context, 'status'), state: giteaStatusState(scalar(s.status ?? s.state)), ...linkOf(s.target_url) });
    return { state: combine(checks), checks };
  }
}

/** The forge clients and webhook verifiers this server has, their API hosts checked by GIT_REMOTE_HOSTS' rule. */
export function forgeRegistry(allowHosts: readonly string[]): ForgeRegistry {
  return {
    client: {
      github: (t: ForgeTarget) => new GitHubClient(forgeHttp(t, allowHosts)),
      gitlab: (t: ForgeTarget) => new GitLabClient(forgeHttp(t, allowHosts)),
      gitea: (t: ForgeTarget) => new GiteaClient(forgeHttp(t, allowHosts)),
    },
    webhook: forgeWebhooks,
  };
}
