import { isMap, isScalar, parseDocument, type Document } from 'yaml';
import { AppError } from '../../core/errors';

/**
 * BMAD's sprint status (`sprint-status.yaml`, written by sprint planning and moved by the build
 * skills): a YAML map whose `development_status` map holds, in order, `epic-N`, its stories
 * `N-M-slug` (`N-Ma-slug` for split stories) and `epic-N-retrospective`, each with a status.
 */

/** Bigger than any real sprint (a few hundred stories is a few kB); past it the file is refused. */
export const MAX_STATUS_BYTES = 1024 * 1024;
/** Entries of `development_status` read at most. */
export const MAX_ENTRIES = 5_000;
const MAX_KEY = 300;
const MAX_STATUS_CHARS = 64;

export const STORY_STATUSES = ['backlog', 'ready-for-dev', 'in-progress', 'review', 'done'] as const;
export const EPIC_STATUSES = ['backlog', 'in-progress', 'done'] as const;
export const RETRO_STATUSES = ['optional', 'done'] as const;
export type StoryStatus = (typeof STORY_STATUSES)[number];

/** What BMAD 6.0 wrote and its own sprint planning still reads by their modern meaning. */
const LEGACY: Record<string, string> = { drafted: 'ready-for-dev', contexted: 'in-progress' };

export type EntryKind = 'epic' | 'story' | 'retrospective';

export interface StatusEntry {
  key: string;
  kind: EntryKind;
  /** The epic number the key belongs to. */
  epic: number;
  /** As written (legacy values mapped), trimmed; null when the key has no value. */
  status: string | null;
}

const EPIC_KEY = /^epic-(\d{1,9})$/;
const RETRO_KEY = /^epic-(\d{1,9})-retrospective$/;
const STORY_KEY = /^(\d{1,9})-(\d{1,9})([a-z]?)-./s;

export function classifyKey(key: string): { kind: EntryKind; epic: number } | null {
  let m = RETRO_KEY.exec(key);
  if (m) return { kind: 'retrospective', epic: Number(m[1]) };
  m = EPIC_KEY.exec(key);
  if (m) return { kind: 'epic', epic: Number(m[1]) };
  m = STORY_KEY.exec(key);
  if (m) return { kind: 'story', epic: Number(m[1]) };
  return null;
}

/** The statuses a key may be set to. */
export function statusesFor(kind: EntryKind): readonly string[] {
  return kind === 'story' ? STORY_STATUSES : kind === 'epic' ? EPIC_STATUSES : RETRO_STATUSES;
}

export function normalizeStatus(raw: string): string {
  const s = raw.trim();
  return LEGACY[s] ?? s;
}

export function invalidStatusFile(reason: string): AppError {
  return new AppError('E_SPRINT_STATUS_INVALID', `The sprint status file ${reason}.`);
}

/** Parses the text as one YAML document, refusing what no sprint status is (too big, broken, not a map). */
export function parseStatusDocument(text: string): Document.Parsed {
  if (text.length > MAX_STATUS_BYTES) throw invalidStatusFile(`is larger than ${MAX_STATUS_BYTES / 1024} kB`);
  // The yaml parser is linear in its input; toJS caps aliases so a small file cannot expand.
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false, strict: true });
  const err = doc.errors[0];
  if (err) throw invalidStatusFile(`is not valid YAML (${err.message.split('\n')[0].slice(0, 200)})`);
  if (doc.contents !== null && !isMap(doc.contents)) throw invalidStatusFile('is not a YAML map of keys');
  return doc;
}

/** The development_status map of a parsed document, or null when it has none. */
function developmentStatus(doc: Document.Parsed) {
  if (!isMap(doc.contents)) return null;
  const node = doc.contents.get('development_status', true);
  if (node === undefined || node === null || (isScalar(node) && node.value === null)) return null;
  if (!isMap(node)) throw invalidStatusFile('has a development_status that is not a map of keys');
  return node;
}

/** The entries of `development_status` in file order; keys that are neither epics, stories nor retrospectives are left out. */
export function readEntries(doc: Document.Parsed): StatusEntry[] {
  const map = developmentStatus(doc);
  if (!map) return [];
  if (map.items.length > MAX_ENTRIES) throw invalidStatusFile(`has more than ${MAX_ENTRIES} entries`);
  const out: StatusEntry[] = [];
  for (const pair of map.items) {
    if (!isScalar(pair.key)) continue;
    const key = String(pair.key.value);
    if (key.length > MAX_KEY) continue;
    const kind = classifyKey(key);
    if (!kind) continue;
    const v = pair.value;
    // A status is a word; a value as long as a page is cut (the board shows it, it never goes back to the file).
    const status = isScalar(v) && v.value !== null && typeof v.value !== 'object' ? normalizeStatus(String(v.value).slice(0, MAX_STATUS_CHARS)) : null;
    out.push({ key, ...kind, status });
  }
  return out;
}

/**
 * The text with one key's value of `development_status` replaced by `status`, every other byte
 * kept: the value's own characters (quotes included) are replaced where the parser found them,
 * in block or flow style alike. The result is parsed again and must differ from the original in
 * that one value only. Null when the key is not there.
 */
export function setStatusInText(text: string, key: string, status: string): { text: string; from: string | null } | null {
  const doc = parseStatusDocument(text);
  const map = developmentStatus(doc);
  if (!map) return null;
  const pair = map.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
  if (!pair) return null;
  const value = pair.value;
  let next: string;
  let from: string | null = null;
  if (value === null || value === undefined) {
    // `key:` with nothing after the colon has no value node; the key's end is where it goes.
    const end = isScalar(pair.key) && pair.key.range ? pair.key.range[1] : null;
    if (end === null) throw invalidStatusFile(`has an entry for ${key} that cannot be changed in place`);
    const colon = text.indexOf(':', end);
    if (colon < 0) throw invalidStatusFile(`has an entry for ${key} that cannot be changed in place`);
    next = `${text.slice(0, colon + 1)} ${status}${text.slice(colon + 1)}`;
  } else {
    if (!isScalar(value) || !value.range || value.tag || (value.value !== null && typeof value.value === 'object')) {
      throw invalidStatusFile(`has a value for ${key} that is not a plain status`);
    }
    const [start, end] = value.range;
    from = value.value === null ? null : normalizeStatus(String(value.value));
    const glue = start === end && text[start - 1] === ':' ? ' ' : '';
    next = `${text.slice(0, start)}${glue}${status}${text.slice(end)}`;
  }
  // The proof: the new text means the old one with that one status changed, nothing else.
  const before = doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  const after = parseStatusDocument(next).toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  (before.development_status as Record<string, unknown>)[key] = status;
  if (JSON.stringify(before) !== JSON.stringify(after)) throw invalidStatusFile(`could not be changed for ${key} without changing something else`);
  return { text: next, from };
}
