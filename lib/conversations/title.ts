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
