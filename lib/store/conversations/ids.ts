import { randomUUID } from 'node:crypto';

// Ids become folder names (OUTPUT_PATH/<id>) and URL segments, so only characters that are safe
// in both, on every OS, pass; no dots at all rules out "." and ".." without a special case.
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
// Windows refuses these as folder names whatever the case.
const RESERVED = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/i;

/** True for ids the store could have issued or accepted; anything else can be answered 404 at once. */
export function isValidConversationId(id: unknown): id is string {
  return typeof id === 'string' && ID_PATTERN.test(id) && !RESERVED.test(id);
}

export function newConversationId(): string {
  return randomUUID();
}

// The project catalog's rule (project ids are folder names under the projects root, dots
// allowed), repeated so the store need not depend on the catalog; a leading letter or digit
// already rules out "." and "..".
const PROJECT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function isValidProjectId(id: unknown): id is string {
  return typeof id === 'string' && PROJECT_ID_PATTERN.test(id);
}
