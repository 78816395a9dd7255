export const DEFAULT_TITLE = 'New conversation';

const TITLE_MAX = 60;
const PREVIEW_MAX = 140;
/** Longest title rename() accepts. */
export const TITLE_LIMIT = 200;

function firstLine(text: string): string {
  for (const line of text.split(/\r\n|\r|\n/)) {
    const trimmed = line.replace(/\s+/g, ' ').trim();
    if (trimmed) return trimmed;
  }
  return '';
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  // Cut on a word boundary when one is near, so titles do not end mid-word.
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** True when the message is a `*command` (the way users start workflows). */
export function isCommandMessage(message: string): boolean {
  return /^\*[A-Za-z0-9]/.test(message.trim());
}

/**
 * A short title for a conversation from its first message: the workflow's name when the message
 * was a command that runs one, otherwise the first non-empty line, clipped to about 60 characters.
 */
export function defaultTitle(firstMessage: string, workflowName?: string): string {
  const workflow = workflowName ? firstLine(workflowName) : '';
  if (workflow && isCommandMessage(firstMessage)) return clip(workflow, TITLE_MAX);
  const line = firstLine(firstMessage);
  return line ? clip(line, TITLE_MAX) : DEFAULT_TITLE;
}

// Short words that read as letters in a workflow's name.
const ACRONYMS = new Set(['prd', 'ux', 'ui', 'qa', 'api', 'prfaq', 'e2e', 'tea', 'atdd', 'ci', 'nfr', 'nfrs', 'gdd', 'tdd', 'mvp', 'cis', 'bmm', 'bmb', 'ai', 'llm']);

/**
 * A workflow's or skill's name as a person would say it: `bmad-prd` → `PRD`,
 * `bmad-create-epics-and-stories` → `Create epics and stories`. A name already written as words
 * (`Product brief`) stays as it is.
 */
export function displayName(name: string): string {
  const line = firstLine(name);
  if (/\s/.test(line) || !/[-_]/.test(line)) return ACRONYMS.has(line.toLowerCase()) ? line.toUpperCase() : line;
  const words = line.replace(/^(bmad|bmm)[-_]/i, '').replace(/^(agent|workflow|skill)[-_]/i, '').split(/[-_]+/).filter(Boolean);
  const out = words.map((w) => (ACRONYMS.has(w.toLowerCase()) ? w.toUpperCase() : w.toLowerCase())).join(' ');
  return out ? out.charAt(0).toUpperCase() + out.slice(1) : line;
}

/**
 * The title of a conversation that ran a workflow: its display name, then what tells this run
 * apart (what the user typed with the command, or else the document it writes):
 * `PRD · plant shop`. Clipped like every automatic title.
 */
export function workflowTitle(name: string, subject?: string): string {
  const head = displayName(name);
  const tail = subject ? firstLine(subject) : '';
  return clip(tail && tail.toLowerCase() !== head.toLowerCase() ? `${head} · ${tail}` : head, TITLE_MAX);
}

/** The one-line preview list() shows; null when the message has no visible text. */
export function previewOf(content: string): string | null {
  const line = content.replace(/\s+/g, ' ').trim();
  return line ? clip(line, PREVIEW_MAX) : null;
}

/** Title as stored: one line, trimmed; null when it is empty or too long. */
export function normaliseTitle(title: string): string | null {
  const t = title.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim();
  return t && t.length <= TITLE_LIMIT ? t : null;
}
