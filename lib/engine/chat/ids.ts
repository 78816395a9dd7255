import crypto from 'node:crypto';

/** An id of a message, a tool call or a server note: the prefix says which. */
export function newId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replace(/-/g, '').slice(0, 24)}`;
}
