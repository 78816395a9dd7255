/**
 * What a version says about itself. It travels as trailers of its commit message, so the shadow
 * repository alone is the whole record (no side database to keep in step), and `git log` on it
 * reads naturally.
 */

/** `write`: an agent wrote it; `restore`: an earlier version brought back; `untracked`: found on disk, author unknown. */
export type VersionKind = 'write' | 'restore' | 'untracked';

export interface VersionInfo {
  /** The commit id in the shadow repository. */
  version: string;
  /** Relative to the store's work root, posix. */
  path: string;
  /** ISO time, in milliseconds, of the record. */
  at: string;
  /** null for an untracked version: the file was there before (or changed outside) any agent write. */
  agentId: string | null;
  conversationId: string | null;
  kind: VersionKind;
  size: number;
  sha256: string;
  /** The tool that wrote it (save_output, edit_file, ...), when known. */
  tool?: string;
  /**
   * The person (or token) who caused it: whose turn an agent wrote it in, or who made it directly
   * (a restore, a save in the editor; then no agent and no conversation).
   */
  by?: string;
  /** The version a restore brought back. */
  restoredFrom?: string;
  /** A caller's one-line note. */
  message?: string;
}

export type VersionMeta = Omit<VersionInfo, 'version'>;

const TRAILERS: Array<[keyof VersionMeta, string]> = [
  ['path', 'Path'],
  ['kind', 'Kind'],
  ['agentId', 'Agent'],
  ['conversationId', 'Conversation'],
  ['tool', 'Tool'],
  ['size', 'Size'],
  ['sha256', 'Sha256'],
  ['at', 'At'],
  ['restoredFrom', 'Restored-From'],
  ['by', 'By'],
];

/** One line, no control characters: a value that could never start a trailer of its own. */
export function oneLine(text: string, max = 200): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim().slice(0, max);
}

export function commitMessage(meta: VersionMeta): string {
  const subject = meta.message ? oneLine(meta.message) : `${meta.tool ?? meta.kind} ${meta.path}`;
  const lines = TRAILERS.flatMap(([key, name]) => {
    const value = meta[key];
    return value === undefined || value === null ? [] : [`${name}: ${value}`];
  });
  return `${subject}\n\n${lines.join('\n')}\n`;
}

/** The metadata of a commit this store wrote, or null for any other commit. */
export function parseCommitMessage(message: string): VersionMeta | null {
  const cut = message.trimEnd().lastIndexOf('\n\n');
  if (cut < 0) return null;
  const subject = message.slice(0, cut).trim();
  const fields = new Map<string, string>();
  for (const line of message.slice(cut + 2).trimEnd().split('\n')) {
    const at = line.indexOf(': ');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 2));
  }
  const path = fields.get('Path');
  const kind = fields.get('Kind');
  const sha256 = fields.get('Sha256');
  const size = Number(fields.get('Size'));
  const at = fields.get('At');
  if (!path || !sha256 || !at || !Number.isFinite(size) || (kind !== 'write' && kind !== 'restore' && kind !== 'untracked')) return null;
  const meta: VersionMeta = {
    path,
    at,
    agentId: fields.get('Agent') ?? null,
    conversationId: fields.get('Conversation') ?? null,
    kind,
    size,
    sha256,
  };
  const tool = fields.get('Tool');
  if (tool) meta.tool = tool;
  const by = fields.get('By');
  if (by) meta.by = by;
  const restoredFrom = fields.get('Restored-From');
  if (restoredFrom) meta.restoredFrom = restoredFrom;
  // The subject is generated unless the caller gave a message.
  if (subject && subject !== `${tool ?? kind} ${path}`) meta.message = subject;
  return meta;
}
