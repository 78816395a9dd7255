import fs from 'node:fs';
import path from 'node:path';
import { BoundedMap } from '../../core/bounded-map';
import { AppError } from '../../core/errors';
import { git, GitError } from '../../sandbox/git/runner';
import { atTop, currentBranch, findRepositoryTop, resolveCommit } from '../../sandbox/git/repo';
import { isAncestor } from '../../sandbox/git/fast-forward';
import { splitFrontmatter } from '../../core/frontmatter';
import { invalidStatusFile, MAX_STATUS_BYTES, parseStatusDocument, readEntries } from './parse';

export const STATUS_FILE = 'sprint-status.yaml';
/** Of a story file only its head is read for the title. */
const TITLE_BYTES = 8 * 1024;
/** Story files bigger than this are not opened at all. */
const MAX_STORY_BYTES = 1024 * 1024;

/** A project as the sprint needs it: never shown to anyone (the folder is a server path). */
export interface SprintProject {
  /** The project folder, absolute. */
  root: string;
  /** The config's `implementation_artifacts`, relative to the project (posix). */
  artifacts: string;
  /** The build settings' base branch; null: the branch the project folder has checked out. */
  baseBranch: string | null;
  /** The project's remote repository, when it has one: the board reads what was fetched, status changes are pushed. */
  remote?: SprintRemote | null;
  /** The project's id, when known: a status change is told to its event subscribers. */
  projectId?: string;
}

/**
 * A remote repository as the sprint needs it (lib/engine/remotes makes one): fetch a branch into
 * its tracking ref, push a commit onto a branch (fast-forward only, never forced), and the branch
 * status changes go to once the base refused them as protected.
 */
export interface SprintRemote {
  /** STATUS_BRANCH once the base refused a status change as protected; null: the base. */
  statusBranch: string | null;
  /** Where a fetch leaves a branch's remote head (`refs/remotes/origin/<branch>`). */
  trackingRef(branch: string): string;
  /** Fetches a branch: its remote head, or null when the remote has no such branch. */
  fetch(branch: string): Promise<string | null>;
  /** Pushes a commit onto a branch: `moved` when the remote has commits it lacks, `protected` when refused as such. */
  push(branch: string, commit: string): Promise<'ok' | 'moved' | 'protected'>;
  /** Remembers that status changes go to the status branch from now on; its name. */
  useStatusBranch(base: string): Promise<string>;
  /** Told after every push to the status branch (the forges' part keeps its pull request current). */
  pushedToStatusBranch(base: string): Promise<void>;
}

/** From a catalog project (`install.documentFolders`) and the build settings' base branch. */
export function sprintProjectOf(project: { id?: string; root: string; install: { documentFolders: Record<string, string> } }, baseBranch: string | null, remote?: SprintRemote | null): SprintProject {
  const folders = project.install.documentFolders;
  const artifacts = folders.implementation_artifacts ?? `${folders.output_folder ?? '_bmad-output'}/implementation-artifacts`;
  return { root: project.root, artifacts, baseBranch, ...(remote ? { remote } : {}), ...(project.id ? { projectId: project.id } : {}) };
}

/** BMAD's list of work put off for later, which parallel skills append to: `deferred-work.md` in the implementation artifacts. */
export const DEFERRED_WORK_FILE = 'deferred-work.md';

/**
 * The project's append-only files (relative to the project): the sprint's deferred-work list and
 * the build settings' `appendOnly`. A merge joins both sides' lines in these (mergeTrees).
 */
export function appendOnlyFiles(project: Pick<SprintProject, 'artifacts'>, configured: readonly string[] = []): string[] {
  return [...new Set([`${project.artifacts}/${DEFERRED_WORK_FILE}`, ...configured])];
}

/** Where the sprint status is: the repository, the branch, and its paths in the repository and in the project. */
export interface SprintLocation {
  top: string;
  branch: string;
  /** `refs/heads/<branch>`. */
  ref: string;
  /** The artifacts folder relative to the repository's top (posix; '' never: it is inside the project). */
  folderInRepo: string;
  /** The sprint status file relative to the repository's top. */
  fileInRepo: string;
  /** The project folder relative to the repository's top ('' when they are one). */
  projectInRepo: string;
}

export async function locateSprint(project: SprintProject): Promise<SprintLocation> {
  const top = findRepositoryTop(project.root);
  if (!top) throw new AppError('E_NOT_A_REPOSITORY', 'The project folder is not in a git repository.');
  const branch = project.baseBranch ?? (await currentBranch(top));
  if (!branch) throw new AppError('E_CONFLICT', 'The project folder has no branch checked out; set a base branch in the build settings.');
  // The folder comes from the install's config, already held inside the project; checked again since a caller may build it.
  if (!project.artifacts || path.posix.isAbsolute(project.artifacts) || project.artifacts.split('/').some((p) => p === '..' || p === '.git' || !p)) {
    throw new AppError('E_VALIDATION', 'The implementation artifacts folder must be a folder inside the project.', { field: 'implementation_artifacts' });
  }
  const projectInRepo = path.relative(fs.realpathSync(top), fs.realpathSync(project.root)).split(path.sep).join('/');
  const folderInRepo = [projectInRepo, project.artifacts].filter(Boolean).join('/');
  return { top, branch, ref: `refs/heads/${branch}`, folderInRepo, fileInRepo: `${folderInRepo}/${STATUS_FILE}`, projectInRepo };
}

/** A repository path as the project sees it (relative to the project folder). */
export function projectPathOf(loc: SprintLocation, repoPath: string): string {
  return loc.projectInRepo ? repoPath.slice(loc.projectInRepo.length + 1) : repoPath;
}

/** Runs git at the repository's top with pathspecs taken literally (a path is never pathspec magic). */
export function gitAt(top: string, args: string[], opts: { env?: Record<string, string>; input?: string; maxBytes?: number } = {}) {
  return git(['--literal-pathspecs', ...args], { cwd: top, ...opts });
}

/**
 * What commits and blobs hold never changes: entries, texts and story titles read once are kept (bounded), so the
 * sprint status of a commit read again — every look, every status change — costs no git.
 */
const entriesRead = new BoundedMap<string, { mode: string; blob: string } | null>(4096);
const textsRead = new BoundedMap<string, string>(64);
const titlesRead = new BoundedMap<string, string | null>(4096);

/** One tree entry of a commit: mode and blob, or null when the path is no file there. */
export async function entryAt(top: string, commit: string, repoPath: string): Promise<{ mode: string; blob: string } | null> {
  const key = `${top}\0${commit}\0${repoPath}`;
  const kept = entriesRead.get(key);
  if (kept !== undefined) return kept;
  const r = await gitAt(top, ['ls-tree', '-z', '--full-tree', commit, '--', repoPath]);
  // A failure (a commit not there yet) is not kept.
  if (r.code !== 0) return null;
  const m = /^(\d{6}) blob ([0-9a-f]{40,64})\t/.exec(r.stdout);
  return entriesRead.set(key, m && (m[1] === '100644' || m[1] === '100755') ? { mode: m[1], blob: m[2] } : null);
}

/** A blob's text, refused past `max` bytes and when it is not UTF-8 (its bytes could not be written back as they were). */
export async function blobText(top: string, blob: string, max = MAX_STATUS_BYTES): Promise<string> {
  const key = `${top}\0${blob}\0${max}`;
  const kept = textsRead.get(key);
  if (kept !== undefined) return kept;
  const r = await gitAt(top, ['cat-file', 'blob', blob], { maxBytes: max + 1 });
  if (r.code !== 0) throw new AppError('E_INTERNAL', 'The sprint status could not be read from the repository.');
  if (r.cut) throw invalidStatusFile(`is larger than ${max / 1024} kB`);
  if (r.stdout.includes('\uFFFD')) throw invalidStatusFile('is not UTF-8 text');
  return r.stdout.length <= 256 * 1024 ? textsRead.set(key, r.stdout) : r.stdout;
}

/** The sprint status text of a commit, or null when the commit has no such file. */
export async function statusTextAt(top: string, commit: string, fileInRepo: string): Promise<{ text: string; mode: string; blob: string } | null> {
  const entry = await entryAt(top, commit, fileInRepo);
  if (!entry) return null;
  return { ...entry, text: await blobText(top, entry.blob) };
}

export interface BoardStory {
  key: string;
  title: string;
  status: string | null;
  /** The story's file relative to the project (`<key>.md`, else a spec of the story), or null. */
  file: string | null;
}

export interface BoardEpic {
  key: string;
  number: number;
  status: string | null;
  /** `epic-N-retrospective`'s status, when the file has one. */
  retrospective: string | null;
  stories: BoardStory[];
}

export interface Board {
  /** The file read, relative to the project, with the branch and commit it was read at; null when there is none. */
  source: { path: string; branch: string; commit: string } | null;
  epics: BoardEpic[];
  /**
   * The project folder has the base branch checked out and its sprint status differs from the
   * committed one (edited, or written by an agent and never committed): the board shows the
   * committed one, and changes are refused until the folder's file is committed or discarded.
   */
  uncommitted: boolean;
}

/** Whether the project folder has the base branch checked out with its sprint status changed or untracked. */
export async function hasLocalChanges(loc: SprintLocation): Promise<boolean> {
  if ((await currentBranch(loc.top)) !== loc.branch) return false;
  const r = await gitAt(loc.top, [...atTop(loc.top), 'status', '--porcelain=v1', '-z', '--untracked-files=all', '--', loc.fileInRepo]);
  if (r.code !== 0) throw new GitError('status', r);
  return r.stdout.length > 0;
}

/** `1-2-account-management` → `Account management`: a title when no story file names one. */
export function titleFromKey(key: string): string {
  const slug = key.replace(/^\d+-\d+[a-z]?-/, '').replace(/-+/g, ' ').trim();
  return slug ? slug[0]!.toUpperCase() + slug.slice(1) : key;
}

/** A story file's title: its frontmatter `title`, else its first `# ` heading without the `Story N.M:` lead. */
export function titleFromMarkdown(text: string): string | null {
  const { data, body } = splitFrontmatter(text);
  if (typeof data.title === 'string' && data.title.trim()) return data.title.trim().slice(0, 300);
  const m = /^#[ \t]+(.+)$/m.exec(body);
  if (!m) return null;
  const heading = m[1]!.replace(/[ \t#]+$/, '').trim();
  const title = heading.replace(/^Story\s+\d+\.\d+[a-z]?\s*:\s*/i, '').trim();
  return (title || heading).slice(0, 300) || null;
}

/** `1-02a-x` → `1-2a`. */
export function storyNumber(key: string): string | null {
  const k = /^(\d+)-(\d+)([a-z]?)-/.exec(key);
  return k ? `${Number(k[1])}-${Number(k[2])}${k[3]}` : null;
}

/** `spec-1-2-login.md` → `1-2`: the story a build spec leads its name with. */
export function specNumber(fileName: string): string | null {
  if (fileName.includes('/') || !fileName.endsWith('.md')) return null;
  const f = /^spec-(\d+)-(\d+)([a-z]?)(?:-|\.md$)/.exec(fileName);
  return f ? `${Number(f[1])}-${Number(f[2])}${f[3]}` : null;
}

/** `spec-1-2-…md` names story 1-2 (numbers compared as numbers, so 1-2 is not 1-20). */
export function specNamesStory(fileName: string, key: string): boolean {
  const n = storyNumber(key);
  return n !== null && specNumber(fileName) === n;
}

/** The files of a folder at a commit: name → blob and size (files only, sizes from git). */
async function filesAt(top: string, commit: string, folderInRepo: string): Promise<Map<string, { blob: string; size: number }>> {
  const r = await gitAt(top, ['ls-tree', '-z', '-l', '--full-tree', commit, '--', `${folderInRepo}/`], { maxBytes: 16 * 1024 * 1024 });
  const out = new Map<string, { blob: string; size: number }>();
  if (r.code !== 0) return out;
  for (const rec of r.stdout.split('\0')) {
    const m = /^(\d{6}) blob ([0-9a-f]{40,64}) +(\d+)\t(.*)$/s.exec(rec);
    if (!m || (m[1] !== '100644' && m[1] !== '100755')) continue;
    out.set(m[4]!.slice(folderInRepo.length + 1), { blob: m[2]!, size: Number(m[3]) });
  }
  return out;
}

/** All the blobs' text sent back by one `cat-file --batch` at most. */
const MAX_BATCH_BYTES = 32 * 1024 * 1024;

/**
 * The heads of several blobs in one git process (`cat-file --batch`), by blob. Each blob's text
 * runs to the next blob's header (sizes are bytes, and a file that is not UTF-8 changes length
 * when read as text); blobs past the batch's budget are left out.
 */
async function blobHeads(top: string, wanted: { blob: string; size: number }[], headBytes = TITLE_BYTES): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const blobs: string[] = [];
  let budget = MAX_BATCH_BYTES;
  for (const w of wanted) {
    if (w.size > budget) continue;
    budget -= w.size;
    blobs.push(w.blob);
  }
  if (!blobs.length) return out;
  const r = await gitAt(top, ['cat-file', '--batch'], { input: blobs.join('\n') + '\n', maxBytes: MAX_BATCH_BYTES + blobs.length * 128 });
  if (r.code !== 0) return out;
  const text = r.stdout;
  let pos = 0;
  for (let i = 0; i < blobs.length; i++) {
    if (!text.startsWith(`${blobs[i]} blob `, pos)) break;
    const start = text.indexOf('\n', pos) + 1;
    if (start === 0) break;
    const next = i + 1 < blobs.length ? text.indexOf(`\n${blobs[i + 1]} blob `, start) : text.length;
    // cat-file ends each blob with a newline of its own: the last one's is not the blob's.
    const end = next < 0 || i + 1 === blobs.length ? (text.endsWith('\n') ? text.length - 1 : text.length) : next;
    out.set(blobs[i]!, text.slice(start, Math.min(end, start + headBytes)));
    if (next < 0) break;
    pos = next + 1;
  }
  return out;
}

/**
 * Files of a commit by repository path, each with its blob and text, in two gits at most (one
 * ls-tree, one cat-file --batch): files larger than `max` bytes, links and missing paths left out.
 */
export async function filesTextAt(top: string, commit: string, repoPaths: string[], max: number): Promise<Map<string, { blob: string; text: string }>> {
  const out = new Map<string, { blob: string; text: string }>();
  if (!repoPaths.length) return out;
  const r = await gitAt(top, ['ls-tree', '-z', '-l', '--full-tree', commit, '--', ...repoPaths], { maxBytes: 16 * 1024 * 1024 });
  if (r.code !== 0) return out;
  const found = new Map<string, { blob: string; size: number }>();
  for (const rec of r.stdout.split('\0')) {
    const m = /^(\d{6}) blob ([0-9a-f]{40,64}) +(\d+)\t(.*)$/s.exec(rec);
    if (m && (m[1] === '100644' || m[1] === '100755') && Number(m[3]) <= max) found.set(m[4]!, { blob: m[2]!, size: Number(m[3]) });
  }
  // One batch holds up to its budget; the rest in the next ones (each file fits in one).
  let left = [...new Map([...found.values()].map((f) => [f.blob, f])).values()];
  const texts = new Map<string, string>();
  while (left.length) {
    const batch = await blobHeads(top, left, max);
    if (!batch.size) break;
    for (const [blob, text] of batch) texts.set(blob, text);
    left = left.filter((f) => !batch.has(f.blob));
  }
  for (const [p, f] of found) {
    const text = texts.get(f.blob);
    if (text !== undefined) out.set(p, { blob: f.blob, text });
  }
  return out;
}

/**
 * The commits a board is read at. Without a remote: the local base. With one: the story files from
 * the remote's base as last fetched (the local base when it holds commits the remote lacks, or
 * nothing was fetched yet), the status from the remote's status branch when the base is protected,
 * else from that same commit.
 */
async function boardCommits(project: SprintProject, loc: SprintLocation): Promise<{ commit: string | null; statusCommit: string | null; branch: string }> {
  const local = await resolveCommit(loc.top, loc.ref);
  const remote = project.remote;
  if (!remote) return { commit: local, statusCommit: null, branch: loc.branch };
  const fetched = await resolveCommit(loc.top, remote.trackingRef(loc.branch));
  const commit = fetched && (!local || (await isAncestor(loc.top, local, fetched))) ? fetched : (local ?? fetched);
  if (remote.statusBranch) {
    const status = await resolveCommit(loc.top, remote.trackingRef(remote.statusBranch));
    if (status) return { commit, statusCommit: status, branch: remote.statusBranch };
  }
  return { commit, statusCommit: null, branch: loc.branch };
}

/** A board as its commits hold it, without the project folder's own state. */
export type CommittedBoard = Omit<Board, 'uncommitted'>;

/**
 * The board of a project: the sprint status as the base branch holds it (committed, never the
 * working tree), epics in file order with their stories, each story's title and file from the
 * files beside the status file on that branch.
 */
export async function readBoard(project: SprintProject): Promise<Board> {
  const loc = await locateSprint(project);
  const [board, uncommitted] = await Promise.all([committedBoardAt(project, loc), hasLocalChanges(loc)]);
  return { ...board, uncommitted };
}

/** The board as the base branch holds it, without looking at the project folder (a watcher's read, made often). */
export async function readCommittedBoard(project: SprintProject): Promise<CommittedBoard> {
  return committedBoardAt(project, await locateSprint(project));
}

/**
 * Boards by the commits and paths they were read at: what a commit holds never changes, so a
 * board read again at the same commits (every look of the autopilot, every board request) is
 * the one read before.
 */
const boardsRead = new BoundedMap<string, CommittedBoard>(64);

async function committedBoardAt(project: SprintProject, loc: SprintLocation): Promise<CommittedBoard> {
  const { commit, statusCommit, branch } = await boardCommits(project, loc);
  if (!commit) return { source: null, epics: [] };
  const key = [loc.top, commit, statusCommit ?? '', branch, loc.fileInRepo, loc.folderInRepo, loc.projectInRepo].join('\0');
  const kept = boardsRead.get(key);
  if (kept) return structuredClone(kept);
  const board = await boardAt(loc, commit, statusCommit, branch);
  boardsRead.set(key, structuredClone(board));
  return board;
}

async function boardAt(loc: SprintLocation, commit: string, statusCommit: string | null, branch: string): Promise<CommittedBoard> {
  const found = await statusTextAt(loc.top, statusCommit ?? commit, loc.fileInRepo);
  if (!found) return { source: null, epics: [] };
  const entries = readEntries(parseStatusDocument(found.text));
  const epics = new Map<number, BoardEpic>();
  const epicOf = (n: number): BoardEpic => {
    let e = epics.get(n);
    if (!e) epics.set(n, (e = { key: `epic-${n}`, number: n, status: null, retrospective: null, stories: [] }));
    return e;
  };
  const files = await filesAt(loc.top, commit, loc.folderInRepo);
  // Specs by the story number they lead with (`spec-1-2-…` → 1-2): the first by name wins.
  const specs = new Map<string, string>();
  for (const f of [...files.keys()].sort()) {
    const n = specNumber(f);
    if (n && !specs.has(n)) specs.set(n, f);
  }
  const stories: { story: BoardStory; meta: { blob: string; size: number } | null }[] = [];
  for (const entry of entries) {
    const epic = epicOf(entry.epic);
    if (entry.kind === 'epic') epic.status = entry.status;
    else if (entry.kind === 'retrospective') epic.retrospective = entry.status;
    else {
      let name: string | null = files.has(`${entry.key}.md`) && !entry.key.includes('/') ? `${entry.key}.md` : null;
      if (!name) name = specs.get(storyNumber(entry.key) ?? '') ?? null;
      const story: BoardStory = { key: entry.key, title: titleFromKey(entry.key), status: entry.status, file: name ? projectPathOf(loc, `${loc.folderInRepo}/${name}`) : null };
      epic.stories.push(story);
      const meta = name ? files.get(name)! : null;
      stories.push({ story, meta: meta && meta.size <= MAX_STORY_BYTES ? meta : null });
    }
  }
  // Titles by blob: a status change makes a new commit whose story files are the ones read before.
  const unique = new Map(stories.filter((s) => s.meta && !titlesRead.has(s.meta.blob)).map((s) => [s.meta!.blob, s.meta!]));
  const heads = await blobHeads(loc.top, [...unique.values()]);
  for (const [blob, head] of heads) titlesRead.set(blob, titleFromMarkdown(head));
  for (const { story, meta } of stories) {
    const title = meta ? titlesRead.get(meta.blob) : undefined;
    if (title) story.title = title;
  }
  return {
    source: { path: projectPathOf(loc, loc.fileInRepo), branch, commit: statusCommit ?? commit },
    epics: [...epics.values()].sort((a, b) => a.number - b.number),
  };
}
