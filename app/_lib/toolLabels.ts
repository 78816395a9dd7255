/** Human wording for tool calls: what the agent is doing, in the person's terms. */
import { plural } from './format';

export interface ToolLabel {
  /** Verb phrase for the call's state, e.g. "Reading", "Read", "Could not read". */
  verb: string;
  /** What the call is about, in the person's terms: a file name, a folder, a workflow's name. */
  target?: string;
  /** The full virtual path behind `target`, kept for the details. */
  path?: string;
  /** Extra words after the target, e.g. `for "goal"`. */
  suffix?: string;
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function s(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

const ROOT_NAMES: Record<string, string> = {
  '{bundle-root}': 'the bundle',
  '{core-root}': 'BMAD core',
  '{project-root}': 'the project',
  '{output_folder}': 'the outputs',
  '.': 'the outputs',
};

/**
 * A virtual path as a person reads it: the file's name, or the folder's; `{bundle-root}/...`
 * and the like are for the details, not the headline.
 */
export function friendlyPath(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  if (ROOT_NAMES[trimmed]) return ROOT_NAMES[trimmed];
  const parts = trimmed.split('/').filter(Boolean);
  const last = parts[parts.length - 1] ?? trimmed;
  return ROOT_NAMES[last] ?? last;
}

/** A workflow's name: the folder of a `workflow.yaml` / `workflow*.md`, else the file's name without extension. */
export function workflowName(path: string): string {
  const parts = path.split('/').filter(Boolean);
  const file = parts[parts.length - 1] ?? path;
  if (/^workflow[\w.-]*\.(ya?ml|md|xml)$/i.test(file) && parts.length > 1) return parts[parts.length - 2];
  return file.replace(/\.(ya?ml|md|xml)$/i, '');
}

const VERBS: Record<string, [running: string, done: string, failed: string]> = {
  read_file: ['Reading', 'Read', 'Could not read'],
  list_files: ['Listing', 'Listed', 'Could not list'],
  search_files: ['Searching', 'Searched', 'Could not search'],
  save_output: ['Writing', 'Wrote', 'Could not write'],
  edit_file: ['Editing', 'Edited', 'Could not edit'],
  apply_patch: ['Updating the front matter of', 'Updated the front matter of', 'Could not update'],
  execute_workflow: ['Running workflow', 'Ran workflow', 'Could not run workflow'],
  run_command: ['Running', 'Ran', 'Could not run'],
};

/** A command line as a headline: its first line, cut short. */
export function commandHeadline(command: string): string {
  const first = command.split('\n')[0] ?? '';
  const line = first.length > 80 ? `${first.slice(0, 79)}…` : first;
  return line !== command ? (line.endsWith('…') ? line : `${line} …`) : line;
}

export type ToolCallState = 'running' | 'done' | 'failed';

/**
 * An MCP server's tool, from the function name the model calls (`<server>__<tool>`; server names
 * hold no `__`) and, once it answered, the result's own `server` and `tool` (the real tool name,
 * before any character was replaced).
 */
export function mcpToolOf(toolName: string, output?: unknown): { server: string; tool: string } | null {
  const m = /^([A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*)__(.+)$/.exec(toolName);
  if (!m) return null;
  const o = obj(output);
  const server = s(o.server) ?? m[1]!;
  const tool = s(o.tool) ?? m[2]!;
  return { server, tool };
}

/** The headline of a tool call, in the tense of its state: "Reading brief.md", "Ran workflow plan". */
export function toolLabel(toolName: string, input: unknown, state: ToolCallState = 'running', output?: unknown): ToolLabel {
  const a = obj(input);
  const verbs = VERBS[toolName];
  const verb = verbs ? verbs[state === 'running' ? 0 : state === 'done' ? 1 : 2] : state === 'running' ? 'Calling' : state === 'done' ? 'Called' : 'Could not call';
  const withPath = (path: string | undefined, suffix?: string): ToolLabel => ({
    verb,
    ...(path ? { target: friendlyPath(path), path } : {}),
    ...(suffix ? { suffix } : {}),
  });
  switch (toolName) {
    case 'read_file': {
      const range = a.start_line !== undefined || a.end_line !== undefined
        ? `lines ${a.start_line ?? 1}–${a.end_line ?? 'end'}`
        : undefined;
      return withPath(s(a.file_path) ?? s(a.path), range ? `(${range})` : undefined);
    }
    case 'list_files':
      return withPath(s(a.path) ?? '.', a.recursive ? '(with subfolders)' : undefined);
    case 'search_files':
      return withPath(s(a.path) ?? '.', s(a.pattern) ? `for “${a.pattern}”` : undefined);
    case 'save_output':
    case 'edit_file':
    case 'apply_patch':
      return withPath(s(obj(output).path) ?? s(a.file_path) ?? s(a.path));
    case 'execute_workflow': {
      const path = s(a.workflow_path);
      const name = s(obj(obj(output).workflow).name) ?? (path ? workflowName(path) : undefined);
      return { verb, ...(name ? { target: name } : {}), ...(path ? { path } : {}) };
    }
    case 'run_command': {
      const command = s(a.command);
      return { verb, ...(command ? { target: commandHeadline(command) } : { target: 'a command' }) };
    }
    default: {
      const mcp = mcpToolOf(toolName, output);
      if (mcp) return { verb, target: mcp.tool, suffix: `on ${mcp.server}` };
      return { verb, target: toolName };
    }
  }
}

/** Short status words for the polite live region, without paths (those are noisy when spoken). */
export function toolStatusText(toolName: string): string {
  switch (toolName) {
    case 'read_file':
      return 'Reading file…';
    case 'list_files':
      return 'Listing files…';
    case 'search_files':
      return 'Searching files…';
    case 'save_output':
      return 'Writing file…';
    case 'edit_file':
      return 'Editing file…';
    case 'apply_patch':
      return 'Updating file…';
    case 'execute_workflow':
      return 'Running workflow…';
    case 'spawn_subagent':
      return 'Subagent working…';
    case 'run_command':
      return 'Running a command…';
    default: {
      const mcp = mcpToolOf(toolName);
      return mcp ? `Running ${mcp.tool} on ${mcp.server}…` : `Running ${toolName}…`;
    }
  }
}


function bytes(n: number): string {
  if (n < 1024) return plural(n, 'byte');
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** One line about a successful result, e.g. "42 lines, 1.2 KB". */
export function toolResultSummary(toolName: string, output: unknown): string | undefined {
  const o = obj(output);
  if (o.ok === false) return undefined;
  const trunc = o.truncated === true ? ' (truncated)' : '';
  switch (toolName) {
    case 'read_file':
      if (typeof o.lines === 'number' && typeof o.bytes === 'number') return `${plural(o.lines, 'line')}, ${bytes(o.bytes)}${trunc}`;
      break;
    case 'list_files':
      if (Array.isArray(o.entries)) return `${plural(o.entries.length, 'entry', 'entries')}${trunc}`;
      break;
    case 'search_files':
      if (Array.isArray(o.matches)) return `${plural(o.matches.length, 'match', 'matches')}${trunc}`;
      break;
    case 'save_output':
      if (typeof o.bytes_written === 'number') return `${bytes(o.bytes_written)} written`;
      break;
    case 'execute_workflow': {
      const unresolved = Array.isArray(o.unresolved) && o.unresolved.length > 0 ? `Unresolved: ${o.unresolved.join(', ')}` : undefined;
      return unresolved;
    }
  }
  return undefined;
}

const MAX_STRING = 1200;
const MAX_JSON = 6000;

/**
 * A compact, readable rendering of a value for the details view: long strings (file contents,
 * instructions) are cut so a large read never freezes the page.
 */
export function shortJson(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}… (${value.length - MAX_STRING} more characters)` : value;
  let text: string;
  try {
    text = JSON.stringify(
      value,
      (_k, v: unknown) => (typeof v === 'string' && v.length > MAX_STRING ? `${v.slice(0, MAX_STRING)}… (${v.length - MAX_STRING} more characters)` : v),
      2,
    );
  } catch {
    text = String(value);
  }
  if (text === undefined) return String(value);
  return text.length > MAX_JSON ? `${text.slice(0, MAX_JSON)}\n… (truncated)` : text;
}
