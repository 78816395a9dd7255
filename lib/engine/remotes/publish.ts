/**
 * Publishing a workspace as a pull request (GitLab: merge request), for a person's request
 * (lib/services' publish) and for the autopilot acting as a person with no HTTP caller:
 *
 *   publishWorkspace(deps, { projectId, workspaceId, by: { id, name }, draft? }) → PublishOutcome
 *
 * `deps` is anything with `forges: ForgeService` (the runtime is one). Access is the caller's to
 * decide (lib/services checks owners and editors first); this does the work: the workspace's branch
 * brought up to its clone, pushed to the remote as `bmad/<name>` and nothing else (a later publish
 * with `--force-with-lease` naming what was pushed before: a branch someone else moved is never
 * overwritten), then one pull request into the base, titled after the story (or the workspace),
 * its body naming the story file, the commits and the tests the agent ran with their exit codes;
 * publishing again updates the same pull request. The outcome has the shape of types/api's
 * PublishView.
 */
import path from 'node:path';
import { AppError } from '../../core/errors';
import { log } from '../../core/log';
import { withFileLock } from '../../core/paths/file-lock';
import { findRepositoryTop, resolveCommit } from '../../sandbox/git/repo';
import { trackingRef } from './base';
import type { ChecksSummary, PullRequest } from './forge';
import type { StoredPullRequest } from './pr-store';
import type { ForgeService, RanCommand } from './pull-requests';

type CommitInfo = { sha: string; subject: string; author: string };

export interface PublishRequest {
  projectId: string;
  workspaceId: string;
  /** Who publishes (logged; the push and the pull request are the token's). */
  by: { id: string; name: string };
  draft?: boolean;
}

export interface PullRequestOutcome {
  number: number;
  url: string;
  state: 'open' | 'closed' | 'merged';
  draft?: boolean;
  checks?: ChecksSummary | null;
  updatedAt?: string;
  note?: string | null;
}

export interface PublishOutcome {
  branch: string;
  pullRequest: PullRequestOutcome;
}

export function pullRequestOutcome(row: StoredPullRequest): PullRequestOutcome {
  return { number: row.number, url: row.url, state: row.state, draft: row.draft, checks: row.checks, updatedAt: row.updatedAt, ...(row.note ? { note: row.note } : {}) };
}

/** A command that runs tests, type checks or linters, by its words (what a reviewer wants to see of a run). */
const TEST_WORDS = /(^|[^A-Za-z0-9])(tests?|specs?|check|jest|vitest|mocha|tape|tap|ava|pytest|go test|cargo test|rspec|phpunit|tsc|tsd|eslint|ruff|mypy|ctest)([^A-Za-z0-9]|$)/i;

const code = (s: string) => `\`${s.replace(/`/g, "'").replace(/\|/g, '\\|').replace(/\s+/g, ' ').slice(0, 200)}\``;

/** `text` with each of the server's `folders` (absolute) as `.`; longest first, so a folder inside another goes whole. */
export function hideFolders(text: string, folders: readonly string[]): string {
  let out = text;
  for (const folder of [...new Set(folders.map((f) => f.replace(/\/+$/, '')))].filter((f) => f.length > 1).sort((a, b) => b.length - a.length)) out = out.split(folder).join('.');
  return out;
}

/**
 * The pull request's text. `hide` are the server's own folders (the project's, its repository's):
 * a commit subject or a command an agent wrote may name them, and the forge's readers must not
 * learn where the server keeps projects; each becomes `.`.
 */
export function pullRequestBody(input: { storyKey: string | null; storyFile: string | null; workspace: { name: string; branch: string; base: string }; commits: CommitInfo[]; commands: RanCommand[]; hide?: string[] }): string {
  const lines: string[] = [];
  if (input.storyKey) lines.push(`Story \`${input.storyKey}\`: ${input.storyFile ? `\`${input.storyFile}\`` : 'no story file found'}.`);
  else lines.push(`Workspace \`${input.workspace.name}\`.`);
  lines.push('', `### Commits (${input.commits.length})`, '');
  for (const c of input.commits.slice(0, 50)) lines.push(`- ${c.sha.slice(0, 12)} ${c.subject.replace(/\s+/g, ' ').slice(0, 200)} (${c.author.slice(0, 80)})`);
  if (input.commits.length > 50) lines.push(`- … and ${input.commits.length - 50} more`);
  if (!input.commits.length) lines.push('None beyond the base.');
  const tests = input.commands.filter((c) => TEST_WORDS.test(c.command));
  lines.push('', '### Tests the agent ran', '');
  if (!tests.length) lines.push('No test command was recorded in the workspace\'s conversations.');
  else {
    lines.push('| command | exit code |', '|---|---|');
    // The last 30: the final runs are the ones that count.
    for (const t of tests.slice(-30)) lines.push(`| ${code(t.command)} | ${t.exitCode === null ? 'none (stopped or timed out)' : t.exitCode} |`);
  }
  lines.push('', `Published by BMAD orchestrator from \`${input.workspace.branch}\` into \`${input.workspace.base}\`.`);
  // GitHub's limit is 65,536 characters; GitLab's and Gitea's are larger.
  return hideFolders(lines.join('\n'), input.hide ?? []).slice(0, 60_000);
}

export async function publishWorkspace(deps: { forges: ForgeService }, req: PublishRequest): Promise<PublishOutcome> {
  const f = deps.forges.deps;
  const project = await f.project(req.projectId);
  if (!project) throw new AppError('E_PROJECT_NOT_FOUND', 'Project not found.');
  const pref = { id: project.id, root: project.root };
  const ws = await f.workspaces.find(pref, req.workspaceId);
  if (ws.status !== 'open') throw new AppError('E_CONFLICT', `The workspace is ${ws.status}; only an open workspace is published.`);
  const remote = await f.remotes.get(project.id);
  if (!remote) throw new AppError('E_CONFLICT', 'The project has no remote; set one with PUT /api/projects/:id/remote.');
  if (remote.mode !== 'pull-request') throw new AppError('E_CONFLICT', 'The project\'s remote is in push mode: Merge merges and pushes on the server. Set mode pull-request to publish pull requests.');
  const client = f.remotes.forge(remote);
  const top = findRepositoryTop(project.root);
  if (!top) throw new AppError('E_NOT_A_REPOSITORY', 'The project folder is not in a git repository.');

  // One publish of a workspace at a time, on every instance sharing DATA_DIR.
  return withFileLock(path.join(project.root, '.publish', ws.id), async () => {
    await f.workspaces.syncOrRefuse(pref, ws);
    const head = await resolveCommit(top, `refs/heads/${ws.branch}`);
    if (!head) throw new AppError('E_CONFLICT', `The workspace's branch ${ws.branch} is gone.`);
    const existing = await f.store.get(ws.id);
    // What the remote's branch is as last pushed from here (null: it must not exist there yet).
    const expected = existing?.pushedHead ?? (await resolveCommit(top, trackingRef(ws.branch)));
    if (expected !== head) await f.remotes.pushWorkspaceBranch(pref, ws.branch, expected ?? null);

    const story = await f.storyOf(project, ws).catch(() => null);
    const storyKey = story?.key ?? null;
    const storyTitle = story?.title ?? null;
    const storyFile = story?.file ?? null;
    const detail = await f.workspaces.get(pref, ws.id);
    const commands = await f.commandsOf(project.id, ws.id).catch(() => []);
    const hide = [project.root, top];
    const title = hideFolders((storyKey ? `${storyKey}: ${storyTitle ?? storyKey}` : ws.name).replace(/\s+/g, ' ').slice(0, 250), hide);
    const body = pullRequestBody({ storyKey, storyFile, workspace: ws, commits: detail.commits, commands, hide });

    let pr: PullRequest;
    // A draft stays one unless the request says otherwise (GitLab and Gitea keep it in the title).
    if (existing && existing.state === 'open') pr = await client.updatePullRequest(existing.number, { title, body, draft: req.draft ?? existing.draft });
    else if (existing && existing.state === 'merged') throw new AppError('E_CONFLICT', `Pull request #${existing.number} of this workspace is merged already.`);
    else {
      const found = await client.findPullRequest(ws.branch, ws.base);
      pr = found ? await client.updatePullRequest(found.number, { title, body, draft: req.draft ?? !!found.draft }) : await client.openPullRequest({ head: ws.branch, base: ws.base, title, body, draft: !!req.draft });
    }
    // A forge's answer is not trusted for its shape: a number that is not one would be stored and polled forever.
    if (!Number.isSafeInteger(pr.number) || pr.number <= 0) throw new AppError('E_REMOTE_UNREACHABLE', `The forge answered without a pull request number while publishing ${ws.branch}; nothing was recorded.`);
    const row = await f.store.put({
      workspaceId: ws.id,
      projectId: project.id,
      branch: ws.branch,
      base: ws.base,
      number: pr.number,
      url: pr.url,
      state: pr.state,
      draft: pr.draft ?? req.draft ?? existing?.draft ?? false,
      headSha: pr.headSha ?? head,
      etag: null,
      checks: existing?.number === pr.number ? existing.checks : null,
      note: null,
      pushedHead: head,
    });
    log.info('forge.published', { project: project.id, workspace: ws.id, number: pr.number, updated: !!existing || undefined, by: req.by.id });
    const fresh = (await deps.forges.refreshChecks(row)) ?? row;
    return { branch: ws.branch, pullRequest: pullRequestOutcome(fresh) };
  });
}

