import { getRuntime } from '@/lib/runtime';
import { isTerminal, runView, type RunEvent } from '@/lib/runs';
import { handle } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';
import { runOr404 } from '../../_lib';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The store is read this often too: a run another instance drives has no events here. */
const POLL_MS = 1000;
const KEEPALIVE_MS = 15_000;

/**
 * Progress of a run as server-sent events: `run` (the run, now and at every change of status),
 * `turn`, `tool`, `answered` (a question the server answered); the stream ends after the run ends.
 */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/runs/:id/events', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const first = await runOr404(id, caller);
    const runs = getRuntime().runs;
    const encoder = new TextEncoder();
    let cleanup = () => {};
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        let closed = false;
        let lastStatus = '';
        let lastUpdate = '';
        const send = (event: RunEvent) => {
          if (closed) return;
          controller.enqueue(encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`));
          if (event.type === 'run') {
            lastStatus = event.run.status;
            lastUpdate = `${event.run.status}:${event.run.conversationId}:${event.run.answers}:${event.run.endedAt}`;
            if (isTerminal(event.run.status)) finish();
          }
        };
        const finish = () => {
          if (closed) return;
          closed = true;
          cleanup();
          controller.close();
        };
        const unsubscribe = runs.subscribe(first.id, send);
        const poll = setInterval(() => {
          void runs.store.get(first.id).then((run) => {
            if (!run) return finish();
            const key = `${run.status}:${run.conversationId ?? null}:${run.answers}:${run.endedAt ?? null}`;
            if (key !== lastUpdate || run.status !== lastStatus) send({ type: 'run', run: runView(run) });
          }, () => undefined);
        }, POLL_MS);
        const keepalive = setInterval(() => !closed && controller.enqueue(encoder.encode(': keep-alive\n\n')), KEEPALIVE_MS);
        cleanup = () => {
          unsubscribe();
          clearInterval(poll);
          clearInterval(keepalive);
          request.signal?.removeEventListener('abort', finish);
        };
        request.signal?.addEventListener('abort', finish, { once: true });
        send({ type: 'run', run: runView(first) });
      },
      cancel() {
        cleanup();
      },
    });
    return new Response(stream, {
      status: 200,
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' },
    });
  });
}
