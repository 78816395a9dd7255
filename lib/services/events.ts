import type { Caller } from '../core/access';
import { subscribeProjectEvents, type ProjectEvent } from '../engine/events';
import type { ProjectEventView } from '../../types/api';
import { projectOf } from './access';
import { RUN_EVENTS_HEADERS } from './runs';

const KEEPALIVE_MS = 15_000;

const view = (e: ProjectEvent): ProjectEventView => ({
  type: e.type,
  ...(e.storyKey !== undefined ? { storyKey: e.storyKey } : {}),
  ...(e.runId !== undefined ? { runId: e.runId } : {}),
  ...(e.workspaceId !== undefined ? { workspaceId: e.workspaceId } : {}),
  at: e.at,
});

/**
 * A project's changes as server-sent events (whoever sees the project; 404 otherwise): one event
 * per change, named by its type (`story`, `run`, `workspace`, `autopilot`, `board`), its data a
 * ProjectEventView — a signal to read the board (or the run, the workspace) again, never the state
 * itself, so a reader learns nothing the API would not show them. A comment first (`: ready`) says
 * the stream listens; a keep-alive comment every 15 s holds proxies open. It ends when `signal`
 * (the reader going away) aborts.
 */
export async function projectEvents(caller: Caller, projectId: string, signal?: AbortSignal): Promise<{ body: ReadableStream<Uint8Array>; headers: Record<string, string> }> {
  const project = await projectOf(caller, projectId, 'read');
  const encoder = new TextEncoder();
  let cleanup = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let closed = false;
      const write = (text: string) => {
        if (closed) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          finish();
        }
      };
      const finish = () => {
        if (closed) return;
        closed = true;
        cleanup();
        try {
          controller.close();
        } catch {
          // Already cancelled by the reader.
        }
      };
      const unsubscribe = subscribeProjectEvents(project.id, (e) => write(`event: ${e.type}\ndata: ${JSON.stringify(view(e))}\n\n`));
      const keepalive = setInterval(() => write(': keep-alive\n\n'), KEEPALIVE_MS);
      // The stream's reader keeps the server busy, not this timer: an abandoned stream never holds a process open.
      keepalive.unref?.();
      cleanup = () => {
        unsubscribe();
        clearInterval(keepalive);
        signal?.removeEventListener('abort', finish);
      };
      if (signal?.aborted) return finish();
      signal?.addEventListener('abort', finish, { once: true });
      write(': ready\n\n');
    },
    cancel() {
      cleanup();
    },
  });
  return { body, headers: { ...RUN_EVENTS_HEADERS } };
}
