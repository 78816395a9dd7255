import { SERVER_SHUTDOWN } from '../chat/shutdown-reason';

/**
 * Running turns of this process, so a shutdown signal can stop them: the HTTP server's close
 * waits for open requests, and a turn waiting on a slow model would hold the process for up to
 * the turn timeout. These turns are stored as interrupted and their streams end.
 */
const KEY = Symbol.for('bmad-orchestrator.runningTurns');
const holder = globalThis as unknown as Record<symbol, Set<AbortController> | boolean | undefined>;
const turns = (holder[KEY] ??= new Set<AbortController>()) as Set<AbortController>;
const INSTALLED = Symbol.for('bmad-orchestrator.shutdownInstalled');

export function trackTurn(controller: AbortController): () => void {
  turns.add(controller);
  return () => turns.delete(controller);
}

export function abortRunningTurns(): number {
  const n = turns.size;
  // The reason tells these turns apart from a user's Stop: they are stored as interrupted.
  for (const c of turns) c.abort(SERVER_SHUTDOWN);
  turns.clear();
  return n;
}

/** Called once from the server's instrumentation hook, never in tests or scripts. */
export function installShutdownHandlers(): void {
  if (holder[INSTALLED]) return;
  holder[INSTALLED] = true;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => abortRunningTurns());
}
