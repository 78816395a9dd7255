import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { githubOperation, githubRequestProblem } from './github-openapi';

/**
 * Small stateful forges on 127.0.0.1 for the tests: GitHub (REST v3 under `/api/v3`, as GitHub
 * Enterprise serves it), GitLab (v4 merge requests and pipelines under `/api/v4`) and Gitea (v1
 * pulls and commit statuses under `/api/v1`). Each keeps pull requests whose branches are those of
 * a real bare repository (test/git-server.ts): the head's commit is read from it, and a merge
 * upstream is a real merge commit on the base there. Each checks who asks (the token in the
 * Authorization header the forge documents) and what is asked: GitHub's requests against GitHub's
 * published OpenAPI description (test/github-openapi.ts), GitLab's and Gitea's against the
 * endpoints their documentation names. A request they do not allow is answered 400/404 and kept in
 * `problems`, which the tests expect empty. They send webhooks signed as each forge signs them.
 */
export type FakeKind = 'github' | 'gitlab' | 'gitea';

export interface FakePull {
  number: number;
  head: string;
  base: string;
  title: string;
  body: string;
  state: 'open' | 'closed';
  merged: boolean;
  draft: boolean;
  mergeSha: string | null;
  updatedAt: string;
}

export interface FakeCheck {
  name: string;
  /** GitHub: a check run's status/conclusion; GitLab: a pipeline status; Gitea: a commit status. */
  state: string;
}

export interface FakeForge {
  kind: FakeKind;
  port: number;
  hostPort: string;
  /** The API root a remote's `apiUrl` names. */
  apiUrl: string;
  pulls: FakePull[];
  /** Every request: method, path (with query) and the operation, for GitHub. */
  requests: { method: string; path: string; operation?: string | null; status: number; ifNoneMatch?: string }[];
  /** Requests the forge's description or documentation does not allow, and why. */
  problems: string[];
  /** Authorization headers seen (to show the token is sent there and only there). */
  authorizations: string[];
  /** Checks per commit. */
  checks: Map<string, FakeCheck[]>;
  /** Merges the pull request upstream: a real merge commit on the base in the bare repository. */
  merge(number: number): string;
  close(number: number): void;
  /** A webhook of the pull request's current state, signed with `secret` (or forged with another). */
  /** `repository` and `head` stand in for another repository's pull request or another branch (what an org-wide hook sends). */
  pullRequestHook(number: number, secret: string, opts?: { deliveryId?: string; repository?: string; head?: string }): { headers: Record<string, string>; body: string };
  checksHook(sha: string, secret: string): { headers: Record<string, string>; body: string };
  stop(): Promise<void>;
}

const sh = (cwd: string, args: string[], env: Record<string, string> = {}) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...env } }).trim();

export async function startFakeForge(opts: { kind: FakeKind; token: string; repository: string; bare: string }): Promise<FakeForge> {
  const { kind, token } = opts;
  const prefix = kind === 'github' ? '/api/v3' : kind === 'gitlab' ? '/api/v4' : '/api/v1';
  const pulls: FakePull[] = [];
  const requests: FakeForge['requests'] = [];
  const problems: string[] = [];
  const authorizations: string[] = [];
  const checks = new Map<string, FakeCheck[]>();
  let port = 0;
  const [owner, name] = opts.repository.split('/') as [string, string];
  const web = () => `http://127.0.0.1:${port}/${opts.repository}`;
  const headOf = (branch: string) => {
    try {
      return sh(opts.bare, ['rev-parse', '--verify', `refs/heads/${branch}^{commit}`]);
    } catch {
      return null;
    }
  };

  function githubJson(p: FakePull) {
    return {
      number: p.number,
      html_url: `${web()}/pull/${p.number}`,
      state: p.state,
      title: p.title,
      body: p.body,
      draft: p.draft,
      merged: p.merged,
      merged_at: p.merged ? p.updatedAt : null,
      merge_commit_sha: p.mergeSha,
      updated_at: p.updatedAt,
      head: { ref: p.head, sha: headOf(p.head) ?? p.mergeSha, label: `${owner}:${p.head}` },
      base: { ref: p.base, label: `${owner}:${p.base}` },
    };
  }
  function gitlabJson(p: FakePull) {
    return {
      iid: p.number,
      id: 1000 + p.number,
      web_url: `${web()}/-/merge_requests/${p.number}`,
      state: p.merged ? 'merged' : p.state === 'closed' ? 'closed' : 'opened',
      title: p.title,
      description: p.body,
      draft: p.title.startsWith('Draft:'),
      source_branch: p.head,
      target_branch: p.base,
      sha: headOf(p.head) ?? p.mergeSha,
      merge_commit_sha: p.mergeSha,
      updated_at: p.updatedAt,
    };
  }
  function giteaJson(p: FakePull) {
    return {
      number: p.number,
      html_url: `${web()}/pulls/${p.number}`,
      state: p.state,
      title: p.title,
      body: p.body,
      merged: p.merged,
      merge_commit_sha: p.mergeSha,
      updated_at: p.updatedAt,
      head: { ref: p.head, sha: headOf(p.head) ?? p.mergeSha },
      base: { ref: p.base },
    };
  }
  const toJson = (p: FakePull) => (kind === 'github' ? githubJson(p) : kind === 'gitlab' ? gitlabJson(p) : giteaJson(p));

  function authorized(header: string | undefined): boolean {
    if (header) authorizations.push(header);
    if (kind === 'gitea') return header === `token ${token}`;
    return header === `Bearer ${token}`;
  }

  type Answer = { status: number; body?: unknown; etag?: string };

  function conditional(value: unknown, ifNoneMatch: string | undefined): Answer {
    const etag = `"${crypto.createHash('sha1').update(JSON.stringify(value)).digest('hex')}"`;
    if (ifNoneMatch === etag) return { status: 304, etag };
    return { status: 200, body: value, etag };
  }

  function openPull(input: { head: string; base: string; title: string; body: string; draft: boolean }): Answer {
    if (!headOf(input.head)) return { status: 422, body: { message: 'Validation Failed', errors: [{ message: `head ${input.head} does not exist` }] } };
    if (pulls.some((p) => p.head === input.head && p.base === input.base && p.state === 'open')) return { status: kind === 'gitlab' ? 409 : 422, body: { message: 'A pull request already exists' } };
    const p: FakePull = { number: pulls.length + 1, ...input, state: 'open', merged: false, mergeSha: null, updatedAt: new Date().toISOString() };
    pulls.push(p);
    return { status: 201, body: toJson(p) };
  }

  function route(method: string, rest: string, query: URLSearchParams, body: any, ifNoneMatch: string | undefined): Answer {
    const find = (n: string) => pulls.find((p) => p.number === Number(n));
    if (kind === 'github') {
      const base = `/repos/${owner}/${name}`;
      if (!rest.startsWith(`${base}/`)) return { status: 404, body: { message: 'Not Found' } };
      const r = rest.slice(base.length);
      let m: RegExpExecArray | null;
      if (r === '/pulls' && method === 'POST') return openPull({ head: body.head, base: body.base, title: body.title, body: body.body ?? '', draft: !!body.draft });
      if (r === '/pulls' && method === 'GET') {
        const head = query.get('head');
        const list = pulls.filter((p) => (query.get('state') ?? 'open') === 'all' || p.state === (query.get('state') ?? 'open')).filter((p) => !head || `${owner}:${p.head}` === head).filter((p) => !query.get('base') || p.base === query.get('base'));
        return { status: 200, body: list.map(toJson) };
      }
      if ((m = /^\/pulls\/(\d+)$/.exec(r))) {
        const p = find(m[1]!);
        if (!p) return { status: 404, body: { message: 'Not Found' } };
        if (method === 'PATCH') {
          if (body.title !== undefined) p.title = body.title;
          if (body.body !== undefined) p.body = body.body;
          p.updatedAt = new Date().toISOString();
        }
        return method === 'GET' ? conditional(toJson(p), ifNoneMatch) : { status: 200, body: toJson(p) };
      }
      if ((m = /^\/commits\/([^/]+)\/check-runs$/.exec(r))) {
        const runs = (checks.get(m[1]!) ?? []).map((c, i) => ({ id: i + 1, name: c.name, status: c.state === 'pending' ? 'in_progress' : 'completed', conclusion: c.state === 'pending' ? null : c.state, html_url: `${web()}/runs/${i + 1}` }));
        return { status: 200, body: { total_count: runs.length, check_runs: runs } };
      }
      if ((m = /^\/commits\/([^/]+)\/status$/.exec(r))) return { status: 200, body: { state: 'pending', sha: m[1], total_count: 0, statuses: [] } };
      return { status: 404, body: { message: 'Not Found' } };
    }
    if (kind === 'gitlab') {
      const base = `/projects/${encodeURIComponent(opts.repository)}`;
      if (!rest.startsWith(`${base}/`)) return { status: 404, body: { message: '404 Project Not Found' } };
      const r = rest.slice(base.length);
      let m: RegExpExecArray | null;
      if (r === '/merge_requests' && method === 'POST') {
        for (const f of ['source_branch', 'target_branch', 'title']) if (typeof body[f] !== 'string') return { status: 400, body: { message: `${f} is missing` } };
        return openPull({ head: body.source_branch, base: body.target_branch, title: body.title, body: body.description ?? '', draft: String(body.title).startsWith('Draft:') });
      }
      if (r === '/merge_requests' && method === 'GET') {
        const state = query.get('state');
        const list = pulls.filter((p) => !state || gitlabJson(p).state === state).filter((p) => !query.get('source_branch') || p.head === query.get('source_branch')).filter((p) => !query.get('target_branch') || p.base === query.get('target_branch'));
        return { status: 200, body: list.map(toJson) };
      }
      if ((m = /^\/merge_requests\/(\d+)$/.exec(r))) {
        const p = find(m[1]!);
        if (!p) return { status: 404, body: { message: '404 Not found' } };
        if (method === 'PUT') {
          if (body.title !== undefined) p.title = body.title;
          if (body.description !== undefined) p.body = body.description;
          p.updatedAt = new Date().toISOString();
        }
        return method === 'GET' ? conditional(toJson(p), ifNoneMatch) : { status: 200, body: toJson(p) };
      }
      if (r === '/pipelines' && method === 'GET') {
        const sha = query.get('sha') ?? '';
        return { status: 200, body: (checks.get(sha) ?? []).map((c, i) => ({ id: i + 1, sha, status: c.state, web_url: `${web()}/-/pipelines/${i + 1}` })) };
      }
      return { status: 404, body: { message: '404 Not Found' } };
    }
    const base = `/repos/${owner}/${name}`;
    if (!rest.startsWith(`${base}/`)) return { status: 404, body: { message: 'Not Found' } };
    const r = rest.slice(base.length);
    let m: RegExpExecArray | null;
    if (r === '/pulls' && method === 'POST') return openPull({ head: body.head, base: body.base, title: body.title, body: body.body ?? '', draft: String(body.title).startsWith('WIP:') });
    if (r === '/pulls' && method === 'GET') {
      const state = query.get('state') ?? 'open';
      const page = Number(query.get('page') ?? 1);
      const limit = Number(query.get('limit') ?? 30);
      const list = pulls.filter((p) => state === 'all' || p.state === state).slice((page - 1) * limit, page * limit);
      return { status: 200, body: list.map(toJson) };
    }
    if ((m = /^\/pulls\/(\d+)$/.exec(r))) {
      const p = find(m[1]!);
      if (!p) return { status: 404, body: { message: 'Not Found' } };
      if (method === 'PATCH') {
        if (body.title !== undefined) p.title = body.title;
        if (body.body !== undefined) p.body = body.body;
        p.updatedAt = new Date().toISOString();
      }
      return method === 'GET' ? conditional(toJson(p), ifNoneMatch) : { status: 200, body: toJson(p) };
    }
    if ((m = /^\/commits\/([^/]+)\/status$/.exec(r))) {
      const statuses = (checks.get(m[1]!) ?? []).map((c, i) => ({ id: i + 1, context: c.name, status: c.state, target_url: `${web()}/actions/runs/${i + 1}` }));
      return { status: 200, body: { state: statuses.length ? statuses[0]!.status : 'pending', sha: m[1], total_count: statuses.length, statuses } };
    }
    return { status: 404, body: { message: 'Not Found' } };
  }

  /** The endpoints GitLab's and Gitea's documentation name, and the body fields they take. */
  const DOCUMENTED: Record<'gitlab' | 'gitea', { method: string; re: RegExp; query: string[]; body?: string[] }[]> = {
    gitlab: [
      { method: 'POST', re: /^\/projects\/[^/]+\/merge_requests$/, query: [], body: ['source_branch', 'target_branch', 'title', 'description', 'assignee_id', 'labels', 'remove_source_branch', 'squash', 'target_project_id'] },
      { method: 'PUT', re: /^\/projects\/[^/]+\/merge_requests\/\d+$/, query: [], body: ['title', 'description', 'target_branch', 'state_event', 'labels', 'discussion_locked'] },
      { method: 'GET', re: /^\/projects\/[^/]+\/merge_requests$/, query: ['state', 'source_branch', 'target_branch', 'per_page', 'page', 'order_by', 'sort'] },
      { method: 'GET', re: /^\/projects\/[^/]+\/merge_requests\/\d+$/, query: [] },
      { method: 'GET', re: /^\/projects\/[^/]+\/pipelines$/, query: ['sha', 'ref', 'status', 'per_page', 'page', 'order_by', 'sort'] },
    ],
    gitea: [
      { method: 'POST', re: /^\/repos\/[^/]+\/[^/]+\/pulls$/, query: [], body: ['head', 'base', 'title', 'body', 'assignee', 'assignees', 'labels', 'milestone', 'due_date', 'reviewers', 'team_reviewers'] },
      { method: 'PATCH', re: /^\/repos\/[^/]+\/[^/]+\/pulls\/\d+$/, query: [], body: ['title', 'body', 'base', 'state', 'assignee', 'assignees', 'labels', 'milestone', 'due_date', 'allow_maintainer_edit', 'unset_due_date'] },
      { method: 'GET', re: /^\/repos\/[^/]+\/[^/]+\/pulls$/, query: ['state', 'sort', 'milestone', 'labels', 'page', 'limit', 'poster'] },
      { method: 'GET', re: /^\/repos\/[^/]+\/[^/]+\/pulls\/\d+$/, query: [] },
      { method: 'GET', re: /^\/repos\/[^/]+\/[^/]+\/commits\/[^/]+\/status$/, query: ['page', 'limit'] },
    ],
  };

  function problemOf(method: string, rest: string, query: URLSearchParams, body: unknown): string | null {
    if (kind === 'github') return githubRequestProblem(method, rest, query, body);
    const ep = DOCUMENTED[kind].find((e) => e.method === method && e.re.test(rest));
    if (!ep) return `${method} ${rest}: not an endpoint ${kind === 'gitlab' ? "GitLab's" : "Gitea's"} documentation names`;
    for (const k of query.keys()) if (!ep.query.includes(k)) return `${method} ${rest}: query parameter "${k}" is not documented`;
    if (body !== undefined) {
      if (!ep.body) return `${method} ${rest}: takes no body`;
      for (const k of Object.keys(body as object)) if (!ep.body.includes(k)) return `${method} ${rest}: body field "${k}" is not documented`;
    } else if (ep.body && method !== 'GET') return `${method} ${rest}: a body is required`;
    return null;
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      // GitLab's project id is the path with its slash escaped: keep the raw path.
      const raw = (req.url ?? '/').split('?')[0]!;
      const send = (a: Answer) => {
        requests.push({ method: req.method ?? '', path: req.url ?? '', ...(kind === 'github' ? { operation: githubOperation(req.method ?? '', raw.slice(prefix.length)) } : {}), status: a.status, ...(req.headers['if-none-match'] ? { ifNoneMatch: String(req.headers['if-none-match']) } : {}) });
        res.writeHead(a.status, { 'content-type': 'application/json', ...(a.etag ? { etag: a.etag } : {}) });
        res.end(a.status === 304 || a.body === undefined ? '' : JSON.stringify(a.body));
      };
      if (!raw.startsWith(`${prefix}/`)) return send({ status: 404, body: { message: 'Not Found' } });
      const rest = raw.slice(prefix.length);
      if (!authorized(req.headers.authorization)) return send({ status: 401, body: { message: 'Bad credentials' } });
      let body: unknown;
      const text = Buffer.concat(chunks).toString('utf8');
      if (text) {
        try {
          body = JSON.parse(text);
        } catch {
          problems.push(`${req.method} ${rest}: the body is not JSON`);
          return send({ status: 400, body: { message: 'Problems parsing JSON' } });
        }
      }
      const problem = problemOf(req.method ?? '', kind === 'gitlab' ? rest : decodeURIComponent(rest), url.searchParams, body);
      if (problem) {
        problems.push(problem);
        return send({ status: 400, body: { message: problem } });
      }
      send(route(req.method ?? '', rest, url.searchParams, body ?? {}, req.headers['if-none-match'] as string | undefined));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;

  function hookOf(event: string, payload: unknown, secret: string, deliveryId: string = crypto.randomUUID()): { headers: Record<string, string>; body: string } {
    const body = JSON.stringify(payload);
    const hmac = crypto.createHmac('sha256', secret).update(body).digest('hex');
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (kind === 'github') Object.assign(headers, { 'x-github-event': event, 'x-github-delivery': deliveryId, 'x-hub-signature-256': `sha256=${hmac}` });
    else if (kind === 'gitlab') Object.assign(headers, { 'x-gitlab-event': event, 'x-gitlab-event-uuid': deliveryId, 'x-gitlab-token': secret });
    else Object.assign(headers, { 'x-gitea-event': event, 'x-gitea-delivery': deliveryId, 'x-gitea-signature': hmac, 'x-github-event': event });
    return { headers, body };
  }

  return {
    kind,
    port,
    hostPort: `127.0.0.1:${port}`,
    apiUrl: `http://127.0.0.1:${port}${prefix}`,
    pulls,
    requests,
    problems,
    authorizations,
    checks,
    merge(number) {
      const p = pulls.find((x) => x.number === number)!;
      const env = { GIT_AUTHOR_NAME: 'Reviewer', GIT_AUTHOR_EMAIL: 'reviewer@example.com', GIT_COMMITTER_NAME: 'Reviewer', GIT_COMMITTER_EMAIL: 'reviewer@example.com' };
      const base = sh(opts.bare, ['rev-parse', `refs/heads/${p.base}`]);
      const head = sh(opts.bare, ['rev-parse', `refs/heads/${p.head}`]);
      const tree = sh(opts.bare, ['merge-tree', '--write-tree', base, head]).split('\n')[0]!;
      const commit = sh(opts.bare, ['commit-tree', tree, '-p', base, '-p', head, '-m', `Merge pull request #${number} from ${p.head}`], env);
      sh(opts.bare, ['update-ref', `refs/heads/${p.base}`, commit, base]);
      Object.assign(p, { state: 'closed', merged: true, mergeSha: commit, updatedAt: new Date().toISOString() });
      return commit;
    },
    close(number) {
      Object.assign(pulls.find((x) => x.number === number)!, { state: 'closed', updatedAt: new Date().toISOString() });
    },
    pullRequestHook(number, secret, o = {}) {
      const found = pulls.find((x) => x.number === number)!;
      const p = o.head ? { ...found, head: o.head } : found;
      const repository = o.repository ?? opts.repository;
      if (kind === 'gitlab') return hookOf('Merge Request Hook', { object_kind: 'merge_request', project: { path_with_namespace: repository }, object_attributes: { ...gitlabJson(p), url: gitlabJson(p).web_url, last_commit: { id: gitlabJson(p).sha } } }, secret, o.deliveryId);
      return hookOf('pull_request', { action: p.state === 'closed' ? 'closed' : 'synchronize', number, pull_request: toJson(p), repository: { full_name: repository } }, secret, o.deliveryId);
    },
    checksHook(sha, secret) {
      if (kind === 'github') return hookOf('check_run', { action: 'completed', check_run: { head_sha: sha } }, secret);
      if (kind === 'gitlab') return hookOf('Pipeline Hook', { object_kind: 'pipeline', object_attributes: { sha } }, secret);
      return hookOf('status', { sha }, secret);
    },
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}
