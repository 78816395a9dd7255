/** Human wording for tool calls: what the agent is doing, in the person's terms. */

export interface ToolLabel {
  /** Verb phrase, e.g. "Reading". */
  verb: string;
  /** The file or folder the call is about, shown as code. */
  target?: string;
  /** Extra words after the target, e.g. `for "goal"`. */
  suffix?: string;
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function s(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function toolLabel(toolName: string, input: unknown): ToolLabel {
  const a = obj(input);
  switch (toolName) {
    case 'read_file': {
      const range = a.start_line !== undefined || a.end_line !== undefined
        ? `lines ${a.start_line ?? 1}–${a.end_line ?? 'end'}`
        : undefined;
      return { verb: 'Reading', target: s(a.file_path) ?? s(a.path), suffix: range ? `(${range})` : undefined };
    }
    case 'list_files':
      return { verb: 'Listing', target: s(a.path) ?? '.', suffix: a.recursive ? '(recursive)' : undefined };
    case 'search_files':
      return { verb: 'Searching', target: s(a.path) ?? '.', suffix: s(a.pattern) ? `for “${a.pattern}”` : undefined };
    case 'save_output':
      return { verb: 'Writing', target: s(a.file_path) };
    case 'edit_file':
      return { verb: 'Editing', target: s(a.file_path) };
    case 'apply_patch':
      return { verb: 'Updating front matter of', target: s(a.file_path) };
    case 'execute_workflow':
      return { verb: 'Running workflow', target: s(a.workflow_path) };
    default:
      return { verb: 'Calling', target: toolName };
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
    default:
      return `Running ${toolName}…`;
  }
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
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
    case 'edit_file':
      return s(o.path) ? `Edited ${o.path}` : undefined;
    case 'apply_patch':
      return s(o.path) ? `Updated ${o.path}` : undefined;
    case 'execute_workflow': {
      const wf = obj(o.workflow);
      const unresolved = Array.isArray(o.unresolved) && o.unresolved.length > 0 ? ` — unresolved: ${o.unresolved.join(', ')}` : '';
      return `${s(wf.name) ?? 'Workflow'} loaded${unresolved}`;
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
