import type { ChatDeps } from './deps';

/** The time the turn stamps its messages with: the process's, or the one a test gives. */
export function clock(deps: Pick<ChatDeps, 'now'>): () => Date {
  return deps.now ?? (() => new Date());
}
