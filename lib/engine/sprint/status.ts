import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { emitProjectEvent } from '../events';
import { AppError } from '../../core/errors';
import { GitError } from '../../sandbox/git/runner';
import { atTop, currentBranch, resolveCommit } from '../../sandbox/git/repo';
import { withFileLock } from '../../core/paths/file-lock';
import { fastForward, isAncestor } from '../../sandbox/git/fast-forward';
import { entryAt, gitAt, hasLocalChanges, locateSprint, statusTextAt, type SprintLocation, type SprintProject, type SprintRemote } from './board';
import { classifyKey, parseStatusDocument, readEntries, setStatusInText, statusesFor } from './parse';

/** Who changes a status: a person, or a run on a person's behalf. */
export interface SprintActor {
  name: string;
  email?: string;
  /** The run that made the change, named in the commit message. */
  run?: string;
}

export interface StatusChange {
  key: string;
  from: string | null;
  to: string;
  /** The base branch's commit holding the change (the old one when nothing changed). */
  commit: string;
  /** False when the story already had that status (no commit made). */
  changed: boolean;
  /** The project folder had the base branch checked out and its file now shows the change. */
  checkoutUpdated: boolean;
}

/** Times the compare-and-swap is tried again when the branch moved under it. */
const ATTEMPTS = 8;

function identityEnv(by: SprintActor): Record<string, string> {
  const clean = (s: string, fallback: string) => s.replace(/[<>\r\n\0]/g, '').trim().slice(0, 200) || fallback;
  const name = clean(by.name, 'BMAD');
  const email = clean(by.email ?? '', 'bmad@localhost');
  return { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email };
}

function oneLine(s: string): string {
  return s.replace(/[\r\n\0]+/g, ' ').trim().slice(0, 200);
}

/** `Sprint: 1-2-login → review (by Ada)`, `(by run run_1 for Ada)`. */
export function commitMessage(key: string, to: string, by: SprintActor): string {
  const who = by.run ? `run ${oneLine(by.run)}${by.name ? ` for ${oneLine(by.name)}` : ''}` : oneLine(by.name) || 'BMAD';
  return `Sprint: ${oneLine(key)} → ${to} (by ${who})`;
}

/** Checks the key and status before anything is read: 400 for a status the key cannot have. */
export function validateChange(key: unknown, status: unknown): { key: string; status: string } {
  if (typeof key !== 'string' || !key || key.length > 300) throw new AppError('E_STORY_NOT_FOUND', 'Story not found.');
  const kind = classifyKey(key);
  if (!kind) throw new AppError('E_STORY_NOT_FOUND', 'Story not found.');
  const allowed = statusesFor(kind.kind);
  if (typeof status !== 'string' || !allowed.includes(status)) {
    throw new AppError('E_VALIDATION', `status must be one of ${allowed.join(', ')}`, { field: 'status' });
  }
  return { key, status };
}

/** The lock of one sprint status file: the same key in every process of this host and every instance sharing the lock folder. */
function lockKey(loc: SprintLocation): string {
  return path.join(fs.realpathSync(loc.top), '.git', 'bmad-sprint', `${loc.branch}\0${loc.fileInRepo}`);
}

/**
 * Sets one story's status in the base branch's sprint status and commits it there, one commit by
 * `by`, without any working tree: the new file is written as a blob, put in a throwaway index over
 * the branch's tree, and the commit set with the branch's old value as compare-and-swap (tried
 * again when another writer moved the branch). Every byte but that one value stays as it was.
 * When the project folder has the base branch checked out, its index and file move along; a
 * project folder whose sprint status has uncommitted changes is refused (E_BASE_DIRTY) before
 * anything is committed, rather than have the commit overwrite them or leave the folder behind.
 */
export async function setStoryStatus(project: SprintProject, key: unknown, status: unknown, by: SprintActor): Promise<StatusChange> {
  const change = validateChange(key, status);
  const loc = await locateSprint(project);
  const made = await withFileLock(lockKey(loc), async () => {
    if (project.remote) return setOnRemote(loc, project.remote, change.key, change.status, by);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const done = await setOnce(loc, change.key, change.status, by);
      if (done) return done;
    }
    throw new AppError('E_CONFLICT', 'The base branch kept moving while the sprint status was changed; try again.');
  });
  if (made.changed && project.projectId) emitProjectEvent(project.projectId, { type: 'story', storyKey: made.key });
  return made;
}

async function checkedOutClean(loc: SprintLocation): Promise<boolean> {
  if ((await currentBranch(loc.top)) !== loc.branch) return false;
  if (await hasLocalChanges(loc)) throw new AppError('E_BASE_DIRTY', 'The project folder has uncommitted changes to the sprint status; commit or discard them first.');
  return true;
}

/** One attempt; null when the branch moved before the compare-and-swap. */
async function setOnce(loc: SprintLocation, key: string, status: string, by: SprintActor): Promise<StatusChange | null> {
  const old = await resolveCommit(loc.top, loc.ref);
  if (!old) throw new AppError('E_CONFLICT', `The base branch "${loc.branch}" has no commit.`);
  const current = await statusTextAt(loc.top, old, loc.fileInRepo);
  if (!current) throw new AppError('E_STORY_NOT_FOUND', 'Story not found: the base branch has no sprint status.');
  const edited = setStatusInText(current.text, key, status);
  if (!edited) throw new AppError('E_STORY_NOT_FOUND', 'Story not found.');
  if (edited.text === current.text) return { key, from: edited.from, to: status, commit: old, changed: false, checkoutUpdated: false };
  const checkedOut = await checkedOutClean(loc);
  const message = commitMessage(key, status, by);
  const next = await commitFile(loc, old, edited.text, current.mode, [old], message, by);
  const set = await gitAt(loc.top, ['update-ref', '-m', message.slice(0, 200), loc.ref, next, old]);
  if (set.code !== 0) return null;
  let checkoutUpdated = false;
  if (checkedOut) {
    // Index and file go from the old commit to the new one; this path is the only one that
    // differs, and it was checked clean. Should it have changed since, the branch goes back.
    // The index's stat data is brought up to date first: a file rewritten with its own content is not a change.
    // Another git holding the index (a merge moving this checkout) is waited for, briefly.
    let rt = { code: 1, stderr: '' } as { code: number; stderr: string };
    for (let i = 0; i < 20; i++) {
      await gitAt(loc.top, [...atTop(loc.top), 'update-index', '-q', '--refresh'], { env: { GIT_OPTIONAL_LOCKS: '1' } });
      rt = await gitAt(loc.top, [...atTop(loc.top), 'read-tree', '-m', '-u', old, next], { env: { GIT_OPTIONAL_LOCKS: '1' } });
      if (rt.code === 0 || !rt.stderr.includes('index.lock')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (rt.code !== 0) {
      await gitAt(loc.top, ['update-ref', '-m', 'bmad: sprint status change undone', loc.ref, old, next]);
      throw new AppError('E_BASE_DIRTY', 'The project folder has changes to the sprint status that the change would overwrite.');
    }
    checkoutUpdated = true;
  }
  return { key, from: edited.from, to: status, commit: next, changed: true, checkoutUpdated };
}

/** A commit of `treeFrom`'s tree with the sprint status file replaced by `text`, on `parents`; no ref moved, no working tree. */
async function commitFile(loc: SprintLocation, treeFrom: string, text: string, mode: string, parents: string[], message: string, by: SprintActor): Promise<string> {
  const blob = (await gitOkAt(loc.top, ['hash-object', '-w', '--no-filters', '--stdin'], { input: text })).trim();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-sprint-'));
  let tree: string;
  try {
    const env = { GIT_INDEX_FILE: path.join(dir, 'index') };
    await gitOkAt(loc.top, ['read-tree', treeFrom], { env });
    await gitOkAt(loc.top, ['update-index', '--add', '--cacheinfo', `${mode},${blob},${loc.fileInRepo}`], { env });
    tree = (await gitOkAt(loc.top, ['write-tree'], { env })).trim();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return (await gitOkAt(loc.top, ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-F', '-'], { env: identityEnv(by), input: `${message}\n` })).trim();
}

async function gitOkAt(top: string, args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<string> {
  const r = await gitAt(top, args, opts);
  if (r.code !== 0) throw new GitError(args[0] ?? 'git', r);
  return r.stdout;
}

/** Times a status change is pushed again when the remote moved under it, before giving up with E_REMOTE_REJECTED. */
const REMOTE_ATTEMPTS = 8;

/** Where a status change on a remote starts: the commit(s) it goes on, the tree it keeps, the status text it edits. */
interface RemoteStart {
  parents: string[];
  treeFrom: string;
  text: string;
  mode: string;
}

async function statusesOf(text: string): Promise<Map<string, string | null>> {
  return new Map(readEntries(parseStatusDocument(text)).map((e) => [e.key, e.status]));
}

/**
 * The remote's head of `target`, fetched now. The base: its head. The status branch: its head
 * when it holds the base's; the base's head when it does not exist yet; and when the base moved on
 * since, a merge of both whose status file is the base's with the status branch's own changes
 * applied again, key by key (the branch stays one pull request away from the base).
 */
async function remoteStart(loc: SprintLocation, remote: SprintRemote, target: string): Promise<RemoteStart> {
  const base = await remote.fetch(loc.branch);
  if (!base) throw new AppError('E_REMOTE_NOT_FOUND', `The remote has no branch "${loc.branch}".`);
  const at = async (commit: string) => {
    const found = await statusTextAt(loc.top, commit, loc.fileInRepo);
    if (!found) throw new AppError('E_STORY_NOT_FOUND', `Story not found: the remote's ${loc.branch} has no sprint status.`);
    return found;
  };
  const baseFile = await at(base);
  if (target === loc.branch) return { parents: [base], treeFrom: base, text: baseFile.text, mode: baseFile.mode };
  const head = await remote.fetch(target);
  if (!head) return { parents: [base], treeFrom: base, text: baseFile.text, mode: baseFile.mode };
  if (await isAncestor(loc.top, base, head)) {
    const own = await at(head);
    return { parents: [head], treeFrom: head, text: own.text, mode: own.mode };
  }
  const mb = (await gitAt(loc.top, ['merge-base', head, base])).stdout.trim();
  const [was, now] = await Promise.all([mb ? statusTextAt(loc.top, mb, loc.fileInRepo) : null, statusTextAt(loc.top, head, loc.fileInRepo)]);
  let text = baseFile.text;
  if (now) {
    const before = was ? await statusesOf(was.text) : new Map<string, string | null>();
    for (const [key, to] of await statusesOf(now.text)) {
      if (to === null || before.get(key) === to) continue;
      text = setStatusInText(text, key, to)?.text ?? text;
    }
  }
  return { parents: [head, base], treeFrom: base, text, mode: baseFile.mode };
}

/**
 * A status change on a project with a remote: made on the remote's head of the base (fetched
 * now), pushed there, never forced. The remote moved meanwhile: fetched again and the same one-key
 * change made on its new head, so a teammate's changes to other keys stay, up to REMOTE_ATTEMPTS
 * times. A base that refuses the push as protected sends this and every later change to
 * STATUS_BRANCH. The local base follows the pushed commit when that loses nothing.
 */
async function setOnRemote(loc: SprintLocation, remote: SprintRemote, key: string, status: string, by: SprintActor): Promise<StatusChange> {
  if (await hasLocalChanges(loc)) throw new AppError('E_BASE_DIRTY', 'The project folder has uncommitted changes to the sprint status; commit or discard them first.');
  let switched = false;
  for (let attempt = 0; attempt < REMOTE_ATTEMPTS; attempt++) {
    const target = remote.statusBranch ?? loc.branch;
    const start = await remoteStart(loc, remote, target);
    const edited = setStatusInText(start.text, key, status);
    if (!edited) throw new AppError('E_STORY_NOT_FOUND', 'Story not found.');
    if (edited.text === start.text && start.parents.length === 1) return { key, from: edited.from, to: status, commit: start.parents[0]!, changed: false, checkoutUpdated: false };
    const message = commitMessage(key, status, by);
    const next = await commitFile(loc, start.treeFrom, edited.text, start.mode, start.parents, start.parents.length > 1 ? `${message}\n\nWith ${loc.branch} merged in.` : message, by);
    const outcome = await remote.push(target, next);
    if (outcome === 'moved') continue;
    if (outcome === 'protected') {
      if (target !== loc.branch || switched) throw new AppError('E_REMOTE_REJECTED', `The remote refused the sprint status change on ${target} as a protected branch; allow pushes to ${target}.`);
      remote.statusBranch = await remote.useStatusBranch(loc.branch);
      switched = true;
      attempt--;
      continue;
    }
    let checkoutUpdated = false;
    if (target === loc.branch) {
      const checkedOut = (await currentBranch(loc.top)) === loc.branch;
      checkoutUpdated = (await fastForward(loc.top, loc.branch, next)) === 'fast-forwarded' && checkedOut;
    } else await remote.pushedToStatusBranch(loc.branch);
    return { key, from: edited.from, to: status, commit: next, changed: true, checkoutUpdated };
  }
  throw new AppError('E_REMOTE_REJECTED', `The remote's ${remote.statusBranch ?? loc.branch} kept moving: the status change of ${key} did not land after ${REMOTE_ATTEMPTS} attempts; try again.`);
}

/** Whether the base branch holds a sprint status at all (a project without one has nothing to start from). */
export async function hasSprintStatus(project: SprintProject): Promise<boolean> {
  const loc = await locateSprint(project);
  const head = await resolveCommit(loc.top, loc.ref);
  return !!head && !!(await entryAt(loc.top, head, loc.fileInRepo));
}
