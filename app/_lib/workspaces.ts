/**
 * The browser's side of a project's build: its settings, its workspaces (checkouts on their own
 * `bmad/<name>` branches), their diffs and the commands agents ran in them. The shapes the server
 * sends are those of types/api.ts.
 */
import type {
  BuildSettingsView,
  ConversationDetail,
  RepositoryView,
  WorkspaceCommitView,
  WorkspaceDetailView,
  WorkspaceDiffView,
  WorkspaceFileView,
  WorkspaceMergeView,
  WorkspaceSetupView,
  WorkspaceStatusView,
  WorkspaceView,
} from '@/types/api';
import { ApiError, request } from './api';

export type { RepositoryView, BuildSettingsView, WorkspaceView, WorkspaceDetailView, WorkspaceDiffView } from '@/types/api';

export type WorkspaceStatus = WorkspaceStatusView;

export type SetupOutcomeView = WorkspaceSetupView;

/** The person a workspace row names: its name, or (from an older server) the person as others see them. */
export type CreatedBy = WorkspaceView['createdBy'] | { id?: string; name?: string; email?: string } | null | undefined;

export type ChangedFileView = WorkspaceFileView;
export type ChangedFileStatus = WorkspaceFileView['status'];
export type CommitView = WorkspaceCommitView;

export type MergeResultView = WorkspaceMergeView;

/** One piece of a command's output as it came, from one stream. */
export interface TranscriptChunk {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** What the command tool answers (`run_command`'s result). */
export interface RunCommandResult {
  /** The line as it ran (variables resolved, whitespace kept), when the server says it. */
  command?: string;
  exit_code: number | null;
  stdout: string;
  stderr: string;
  duration_ms: number;
  stopped?: 'time_limit' | 'memory_limit' | 'process_limit' | 'disk_quota' | null;
  /** Both streams in the order they came (raw: colour codes kept); absent from older results. */
  transcript?: TranscriptChunk[];
  /** The files the command changed; a string each, or an entry with its path. */
  files_changed?: Array<string | { path: string; status?: string }>;
  cut?: boolean;
  /** What the server adds for the model (a limit reached, output cut...). */
  hint?: string;
}

/** The rule a workspace name follows, in the server's terms (its branch is `bmad/<name>`). */
export const WORKSPACE_NAME_RULE = 'Letters, digits, “.”, “_” and “-” only; it becomes the branch bmad/<name>.';
const NAME_RE = /^[A-Za-z0-9._-]+$/;

/** What is wrong with a name before it is sent, or null. */
export function workspaceNameProblem(name: string): string | null {
  if (!name.trim()) return 'Give the workspace a name.';
  if (!NAME_RE.test(name)) return `“${name}” cannot be used: ${WORKSPACE_NAME_RULE}`;
  return null;
}

export function personName(by: CreatedBy): string {
  if (!by) return 'someone';
  if (typeof by === 'string') return by;
  return by.name || by.email || by.id || 'someone';
}

export const shortSha = (sha: string | null | undefined) => (sha ? sha.slice(0, 7) : '');

export function durationText(ms: number | null | undefined): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** "0:07", "12:30", "1:02:03": a running clock's reading. */
export function elapsedText(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = String(total % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

/** When a setup started: `startedAt`, else (from a server that has no such field) the time of its running outcome. */
export function setupStart(setup: WorkspaceSetupView | null | undefined): number | null {
  const t = Date.parse(setup?.startedAt ?? (setup?.status === 'running' ? (setup.at ?? '') : ''));
  return Number.isFinite(t) ? t : null;
}

/** Whether a workspace's setup line still runs: nothing else may start, merge or discard meanwhile. */
export const setupRunning = (w: Pick<WorkspaceView, 'setup'> | null | undefined) => w?.setup?.status === 'running';

const STOPPED_WORDS: Record<string, string> = {
  time_limit: 'stopped at the time limit',
  memory_limit: 'stopped at the memory limit',
  process_limit: 'stopped at the process limit',
  disk_quota: 'stopped at the workspace’s disk quota',
};

/** "exit code 0 · 1.2 s", "stopped at the time limit · 10 min 0 s". */
export function commandOutcome(r: Partial<RunCommandResult> | null | undefined): string {
  if (!r) return '';
  const parts: string[] = [];
  if (r.stopped && STOPPED_WORDS[r.stopped]) parts.push(STOPPED_WORDS[r.stopped]);
  else if (typeof r.exit_code === 'number') parts.push(`exit code ${r.exit_code}`);
  const d = durationText(r.duration_ms);
  if (d) parts.push(d);
  return parts.join(' · ');
}

export function asCommandResult(v: unknown): RunCommandResult | null {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (!('exit_code' in o) && !('stdout' in o) && !('stopped' in o)) return null;
  const transcript = Array.isArray(o.transcript)
    ? o.transcript.filter((c): c is TranscriptChunk => !!c && typeof c === 'object' && ((c as TranscriptChunk).stream === 'stdout' || (c as TranscriptChunk).stream === 'stderr') && typeof (c as TranscriptChunk).text === 'string')
    : undefined;
  return {
    ...(typeof o.command === 'string' ? { command: o.command } : {}),
    exit_code: typeof o.exit_code === 'number' ? o.exit_code : null,
    stdout: typeof o.stdout === 'string' ? o.stdout : '',
    stderr: typeof o.stderr === 'string' ? o.stderr : '',
    duration_ms: typeof o.duration_ms === 'number' ? o.duration_ms : NaN,
    stopped: typeof o.stopped === 'string' ? (o.stopped as RunCommandResult['stopped']) : null,
    files_changed: Array.isArray(o.files_changed) ? (o.files_changed as RunCommandResult['files_changed']) : undefined,
    cut: o.cut === true || o.truncated === true,
    ...(transcript ? { transcript } : {}),
    ...(typeof o.hint === 'string' ? { hint: o.hint } : {}),
  };
}

/** A run of output from one stream, as the page shows it. */
export interface OutputBlock {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** Output shown in the page at most: its tail kept (where test runners say what failed). */
export const MAX_SHOWN_OUTPUT = 64 * 1024;

/**
 * A command's output as blocks of one stream each: in the order it came when the result has its
 * transcript, else all of stdout then all of stderr. Past `max` characters the earliest are left
 * out (`omitted` says how many). Adjacent chunks of one stream are joined.
 */
export function outputBlocks(r: Pick<RunCommandResult, 'stdout' | 'stderr' | 'transcript'>, max = MAX_SHOWN_OUTPUT): { blocks: OutputBlock[]; ordered: boolean; omitted: number } {
  const ordered = !!r.transcript?.length;
  const chunks: OutputBlock[] = ordered
    ? (r.transcript as TranscriptChunk[])
    : [
        { stream: 'stdout', text: r.stdout },
        { stream: 'stderr', text: r.stderr },
      ];
  const total = chunks.reduce((n, c) => n + c.text.length, 0);
  let omitted = Math.max(0, total - max);
  let skip = omitted;
  const blocks: OutputBlock[] = [];
  for (const c of chunks) {
    let text = c.text;
    if (skip > 0) {
      const drop = Math.min(skip, text.length);
      skip -= drop;
      text = text.slice(drop);
    }
    if (!text) continue;
    const last = blocks[blocks.length - 1];
    if (last && last.stream === c.stream) last.text += text;
    else blocks.push({ stream: c.stream, text });
  }
  if (!blocks.length) omitted = 0;
  return { blocks, ordered, omitted };
}

/**
 * A workspace's state in words: "3 ahead, 0 behind main" while open (when the counts are known),
 * "Merged into main at abc1234 by Ada" once merged (never its old count), "Discarded".
 */
export function workspaceStateText(w: Pick<WorkspaceView, 'status' | 'base' | 'ahead' | 'behind' | 'mergedCommit' | 'mergedInto' | 'mergedAt' | 'mergedBy'>, when?: (iso: string) => string): string {
  if (w.status === 'merged') {
    const at = w.mergedAt && when ? ` ${when(w.mergedAt)}` : '';
    return `Merged into ${w.mergedInto || w.base}${w.mergedCommit ? ` at ${shortSha(w.mergedCommit)}` : ''}${at}${w.mergedBy ? ` by ${w.mergedBy}` : ''}`;
  }
  if (w.status === 'discarded') return 'Discarded';
  if (typeof w.ahead !== 'number' || typeof w.behind !== 'number') return '';
  return `${w.ahead} ahead, ${w.behind} behind ${w.base}`;
}

/** A refused merge or discard in words a person can act on. */
export function workspaceActionError(e: unknown, kind: 'merge' | 'discard', base: string): { message: string; paths?: string[] } {
  const ae = e instanceof ApiError ? e : null;
  const message = (e as Error)?.message || 'Something went wrong.';
  const nothing = kind === 'merge' ? 'nothing was merged' : 'nothing was discarded';
  if (ae?.code === 'E_MERGE_CONFLICT') return { message: `The merge into ${base} conflicts; nothing was changed. Conflicting files:`, paths: conflictPaths(ae) };
  if (ae?.code === 'E_BASE_DIRTY') return { message: `The project folder has uncommitted changes, so ${nothing}. Commit or undo them in the project folder, then ${kind} again.` };
  if (ae?.code === 'E_GIT_LOCKED') {
    const lock = lockFile(ae);
    return {
      message: lock
        ? `Git’s lock file ${lock} is in the project repository, so ${nothing}: a git command that stopped halfway left it, or one is still running. When no git runs on the project, delete ${lock}, then ${kind} again.`
        : `${message} Nothing was changed.`,
    };
  }
  if (ae?.code === 'E_CONFLICT' && /setup/i.test(message)) return { message: `The workspace’s setup is still running: ${kind} it once the setup ends.` };
  return { message };
}

/** The lock file an `E_GIT_LOCKED` answer names (relative to the repository), or null. */
export function lockFile(e: unknown): string | null {
  const extra = (e as { extra?: Record<string, unknown> })?.extra ?? {};
  const details = extra.details && typeof extra.details === 'object' ? (extra.details as Record<string, unknown>) : {};
  const lock = typeof extra.lock === 'string' ? extra.lock : typeof details.lock === 'string' ? details.lock : null;
  return lock && lock.length <= 300 ? lock : null;
}

export function commandOf(input: unknown): string {
  const o = input && typeof input === 'object' ? (input as Record<string, unknown>) : {};
  return typeof o.command === 'string' ? o.command : '';
}

export function changedPath(f: string | { path: string }): string {
  return typeof f === 'string' ? f : f.path;
}

/** One command an agent ran in a workspace, from a conversation's stored tool calls. */
export interface CommandLogEntry {
  id: string;
  conversationId: string;
  command: string;
  cwd?: string;
  at?: string;
  result: RunCommandResult | null;
  /** The call failed as a tool error (no result of the command's own). */
  error?: string;
}

/** The run_command calls of stored conversations, oldest first. */
export function commandLog(conversations: ConversationDetail[]): CommandLogEntry[] {
  const out: CommandLogEntry[] = [];
  for (const c of conversations) {
    for (const m of c.messages ?? []) {
      for (const call of m.functionCalls ?? []) {
        if (call.name !== 'run_command') continue;
        const args = call.arguments && typeof call.arguments === 'object' ? (call.arguments as Record<string, unknown>) : {};
        const result = asCommandResult(call.result);
        const r = call.result && typeof call.result === 'object' ? (call.result as Record<string, unknown>) : {};
        const err = r.ok === false || typeof r.error === 'string' ? String((r.error as { message?: string })?.message ?? r.error ?? 'failed') : undefined;
        out.push({
          id: `${c.id}:${call.id}`,
          conversationId: c.id,
          command: commandOf(args),
          ...(typeof args.cwd === 'string' ? { cwd: args.cwd } : {}),
          ...(m.timestamp ? { at: m.timestamp } : {}),
          result,
          ...(result ? {} : err ? { error: err } : {}),
        });
      }
    }
  }
  return out;
}

/* ---------------------------------------------------------------- unified diff */

export type DiffLineKind = 'add' | 'del' | 'context' | 'hunk' | 'meta';

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
  oldNo?: number;
  newNo?: number;
}

export interface DiffFile {
  /** The new path (the old one for a deletion). */
  path: string;
  oldPath?: string;
  binary: boolean;
  lines: DiffLine[];
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

function unquote(p: string): string {
  const t = p.trim();
  if (t.startsWith('"') && t.endsWith('"')) {
    try {
      return JSON.parse(t) as string;
    } catch {
      return t.slice(1, -1);
    }
  }
  return t;
}

const stripPrefix = (p: string) => unquote(p).replace(/^[ab]\//, '');

/**
 * `git diff` output as files of numbered lines. One pass over the text, each line looked at once:
 * linear in the diff's size, whatever its content.
 */
export function parseUnifiedDiff(text: string): DiffFile[] {
  const files: DiffFile[] = [];
  let cur: DiffFile | null = null;
  let oldNo = 0;
  let newNo = 0;
  let inHunk = false;
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    if (line.startsWith('diff --git ')) {
      const m = /^diff --git (\S+|"[^"]*") (\S+|"[^"]*")$/.exec(line);
      const path = m ? stripPrefix(m[2]!) : line.slice(11);
      cur = { path, binary: false, lines: [{ kind: 'meta', text: line }] };
      files.push(cur);
      inHunk = false;
      continue;
    }
    if (!cur) {
      cur = { path: '', binary: false, lines: [] };
      files.push(cur);
    }
    const hunk = HUNK.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      inHunk = true;
      cur.lines.push({ kind: 'hunk', text: line });
      continue;
    }
    if (inHunk && line.startsWith('+')) cur.lines.push({ kind: 'add', text: line.slice(1), newNo: newNo++ });
    else if (inHunk && line.startsWith('-')) cur.lines.push({ kind: 'del', text: line.slice(1), oldNo: oldNo++ });
    else if (inHunk && line.startsWith(' ')) cur.lines.push({ kind: 'context', text: line.slice(1), oldNo: oldNo++, newNo: newNo++ });
    else {
      if (!inHunk) {
        if (line.startsWith('--- ') && line !== '--- /dev/null') cur.oldPath = stripPrefix(line.slice(4));
        else if (line.startsWith('+++ ') && line !== '+++ /dev/null') cur.path = stripPrefix(line.slice(4));
        else if (line === '+++ /dev/null' && cur.oldPath) cur.path = cur.oldPath;
        else if (line.startsWith('Binary files ') || line === 'GIT binary patch') cur.binary = true;
      }
      cur.lines.push({ kind: 'meta', text: line });
    }
  }
  return files;
}

/* ---------------------------------------------------------------- REST */

const enc = encodeURIComponent;

const call = request;

/** A merge conflict's paths, from the error envelope (`paths`, or `details.paths`). */
export function conflictPaths(e: unknown): string[] {
  const extra = (e as { extra?: Record<string, unknown> })?.extra ?? {};
  const details = extra.details && typeof extra.details === 'object' ? (extra.details as Record<string, unknown>) : {};
  const paths = Array.isArray(extra.paths) ? extra.paths : Array.isArray(details.paths) ? details.paths : [];
  return paths.filter((p): p is string => typeof p === 'string');
}

const base = (projectId: string) => `/api/projects/${enc(projectId)}`;

export const workspacesApi = {
  repository: async (projectId: string, signal?: AbortSignal): Promise<RepositoryView | null> => {
    const d = await call<{ repository?: RepositoryView | null }>(base(projectId), { signal });
    return d?.repository ?? null;
  },
  build: (projectId: string, signal?: AbortSignal) => call<BuildSettingsView>(`${base(projectId)}/build`, { signal }),
  saveBuild: (projectId: string, patch: Partial<BuildSettingsView>) =>
    call<BuildSettingsView>(`${base(projectId)}/build`, { method: 'PUT', body: JSON.stringify(patch) }),
  list: async (projectId: string, signal?: AbortSignal): Promise<WorkspaceView[]> => {
    const d = await call<WorkspaceView[] | { items?: WorkspaceView[]; workspaces?: WorkspaceView[] }>(`${base(projectId)}/workspaces`, { signal });
    return Array.isArray(d) ? d : (d?.items ?? d?.workspaces ?? []);
  },
  create: (projectId: string, name: string) => call<WorkspaceView>(`${base(projectId)}/workspaces`, { method: 'POST', body: JSON.stringify({ name }) }),
  get: (projectId: string, id: string, signal?: AbortSignal) => call<WorkspaceDetailView>(`${base(projectId)}/workspaces/${enc(id)}`, { signal }),
  diff: (projectId: string, id: string, path?: string, signal?: AbortSignal) =>
    call<WorkspaceDiffView>(`${base(projectId)}/workspaces/${enc(id)}/diff${path ? `?path=${enc(path)}` : ''}`, { signal }),
  merge: (projectId: string, id: string) => call<MergeResultView>(`${base(projectId)}/workspaces/${enc(id)}/merge`, { method: 'POST' }),
  discard: (projectId: string, id: string) => call<unknown>(`${base(projectId)}/workspaces/${enc(id)}`, { method: 'DELETE' }),
};
