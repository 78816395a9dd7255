import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AppError, isAppError } from '../../core/errors';
import { GitError } from '../../sandbox/git/runner';
import { resolveCommit } from '../../sandbox/git/repo';
import { entryAt, gitAt, locateSprint, statusTextAt, type SprintLocation, type SprintProject } from './board';
import { classifyKey, parseStatusDocument, readEntries, statusesFor } from './parse';
import { setStoryStatus, type SprintActor, type StatusChange } from './status';

/**
 * A workspace's edits to the sprint status are status changes of its stories, never text to merge:
 * what its branch set differently from where it began is read as `key: from → to`, applied to the
 * base branch one by one (setStoryStatus), and the branch's file is then replaced by the base's own
 * in the commit that gets merged, so the merge never sees two edits of one file.
 */

export interface WorkspaceStatusChanges {
  /** The workspace's file differs from the one it began with. */
  touched: boolean;
  /** Statuses the workspace set, relative to the merge base, in file order. */
  changes: { key: string; from: string | null; to: string }[];
  /** What was not taken, and why (a key the base never had, a status the key cannot have, an unreadable file). */
  ignored: { key: string | null; reason: string }[];
}

async function mergeBase(loc: SprintLocation, a: string, b: string): Promise<string | null> {
  const r = await gitAt(loc.top, ['merge-base', a, b]);
  return r.code === 0 ? r.stdout.trim() || null : null;
}

async function statusesAt(loc: SprintLocation, commit: string): Promise<Map<string, string | null> | null> {
  const found = await statusTextAt(loc.top, commit, loc.fileInRepo);
  if (!found) return null;
  return new Map(readEntries(parseStatusDocument(found.text)).map((e) => [e.key, e.status]));
}

/**
 * Which statuses the workspace branch `branch` (a branch of the project repository, e.g.
 * `bmad/1-2-login`) changed in its sprint status since it left the base branch.
 */
export async function workspaceStatusChanges(project: SprintProject, branch: string): Promise<WorkspaceStatusChanges> {
  const loc = await locateSprint(project);
  const head = await resolveCommit(loc.top, `refs/heads/${branch}`);
  const baseTip = await resolveCommit(loc.top, loc.ref);
  if (!head || !baseTip) throw new AppError('E_CONFLICT', 'The workspace branch or its base no longer exists.');
  const mb = await mergeBase(loc, baseTip, head);
  const out: WorkspaceStatusChanges = { touched: false, changes: [], ignored: [] };
  if (!mb) return out;
  const [was, now] = await Promise.all([entryAt(loc.top, mb, loc.fileInRepo), entryAt(loc.top, head, loc.fileInRepo)]);
  out.touched = was?.blob !== now?.blob;
  if (!out.touched || !now) return out;
  let before: Map<string, string | null>;
  let after: Map<string, string | null>;
  try {
    before = (await statusesAt(loc, mb)) ?? new Map();
    after = (await statusesAt(loc, head)) ?? new Map();
  } catch (e) {
    if (!isAppError(e)) throw e;
    out.ignored.push({ key: null, reason: e.message });
    return out;
  }
  for (const [key, to] of after) {
    if (!before.has(key)) {
      out.ignored.push({ key, reason: "the base branch's sprint status has no such key" });
      continue;
    }
    const from = before.get(key) ?? null;
    if (to === from) continue;
    const kind = classifyKey(key)?.kind;
    if (to === null || !kind || !statusesFor(kind).includes(to)) {
      out.ignored.push({ key, reason: `"${String(to).slice(0, 40)}" is not a status this key can have` });
      continue;
    }
    out.changes.push({ key, from, to });
  }
  return out;
}

/** Applies a workspace's status changes to the base branch, one commit each, by `by` (the run or the person merging). */
export async function applyWorkspaceStatusChanges(project: SprintProject, branch: string, by: SprintActor): Promise<{ applied: StatusChange[]; ignored: WorkspaceStatusChanges['ignored'] }> {
  const found = await workspaceStatusChanges(project, branch);
  const applied: StatusChange[] = [];
  for (const c of found.changes) applied.push(await setStoryStatus(project, c.key, c.to, by));
  return { applied, ignored: found.ignored };
}

/**
 * The commit to merge in place of `head` (a workspace branch's commit): `head` itself when its
 * sprint status needs nothing, else a new commit on top of it whose sprint status is the base
 * branch's current one (removed when the base has none). No ref is moved: the merge takes this
 * commit as its second parent, and the workspace branch is still contained in the result. A file
 * the workspace made where neither the base nor the merge base has one is its own and is kept.
 */
export async function sprintNeutralHead(project: SprintProject, head: string, by: SprintActor): Promise<string> {
  const loc = await locateSprint(project);
  const baseTip = await resolveCommit(loc.top, loc.ref);
  if (!baseTip) throw new AppError('E_CONFLICT', `The base branch "${loc.branch}" has no commit.`);
  const mb = await mergeBase(loc, baseTip, head);
  const [inBase, inHead, inMb] = await Promise.all([entryAt(loc.top, baseTip, loc.fileInRepo), entryAt(loc.top, head, loc.fileInRepo), mb ? entryAt(loc.top, mb, loc.fileInRepo) : null]);
  if (!inBase && !inMb) return head;
  if (inHead?.blob === inBase?.blob && inHead?.mode === inBase?.mode) return head;
  // Untouched by the workspace: the merge takes the base's side by itself.
  if (inMb && inHead?.blob === inMb.blob && inHead.mode === inMb.mode) return head;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-sprint-'));
  let tree: string;
  try {
    const env = { GIT_INDEX_FILE: path.join(dir, 'index') };
    const run = async (args: string[]) => {
      const r = await gitAt(loc.top, args, { env });
      if (r.code !== 0) throw new GitError(args[0]!, r);
      return r.stdout;
    };
    await run(['read-tree', head]);
    if (inBase) await run(['update-index', '--add', '--cacheinfo', `${inBase.mode},${inBase.blob},${loc.fileInRepo}`]);
    else await run(['update-index', '--force-remove', '--', loc.fileInRepo]);
    tree = (await run(['write-tree'])).trim();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const clean = (s: string, d: string) => s.replace(/[<>\r\n\0]/g, '').trim().slice(0, 200) || d;
  const name = clean(by.name, 'BMAD');
  const email = clean(by.email ?? '', 'bmad@localhost');
  const message = `Sprint status taken from ${loc.branch}: the workspace's status changes are applied there one by one\n`;
  const r = await gitAt(loc.top, ['commit-tree', tree, '-p', head, '-F', '-'], {
    input: message,
    env: { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email },
  });
  if (r.code !== 0) throw new GitError('commit-tree', r);
  return r.stdout.trim();
}
