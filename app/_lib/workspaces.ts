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

/** What the command tool answers (`run_command`'s result). */
export interface RunCommandResult {
  exit_code: number | null;
  stdout: string;
  stderr: string;
  duration_ms: number;
  stopped?: 'time_limit' | 'memory_limit' | 'process_limit' | null;
  /** The files the command changed; a string each, or an entry with its path. */
  files_changed?: Array<string | { path: string; status?: string }>;
  cut?: boolean;
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

const STOPPED_WORDS: Record<string, string> = {
  time_limit: 'stopped at the time limit',
  memory_limit: 'stopped at the memory limit',
  process_limit: 'stopped at the process limit',
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
  return {
    exit_code: typeof o.exit_code === 'number' ? o.exit_code : null,
    stdout: typeof o.stdout === 'string' ? o.stdout : '',
    stderr: typeof o.stderr === 'string' ? o.stderr : '',
    duration_ms: typeof o.duration_ms === 'number' ? o.duration_ms : NaN,
    stopped: typeof o.stopped === 'string' ? (o.stopped as RunCommandResult['stopped']) : null,
    files_changed: Array.isArray(o.files_changed) ? (o.files_changed as RunCommandResult['files_changed']) : undefined,
    cut: o.cut === true || o.truncated === true,
  };
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
