import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { startTurn, collectTurn } from '@/lib/chat';
import { UI_STREAM_HEADERS } from '@/lib/stream';
import { sseBody } from '@/lib/stream/sse-body';
import { trackTurn } from '@/lib/runtime/shutdown';
import { handle, ok, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';
import { turnAccess } from '../_lib/turns';
import { turnWorkspace } from '@/lib/services';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const Message = z
  .string({ error: (issue) => (issue.input === undefined ? 'message is required' : 'message must be a string') })
  .max(20_000, 'message must be at most 20,000 characters')
  .refine((m) => m.trim().length > 0, 'message must not be empty');

const ChatBody = z
  .object({
    agentId: z.string().trim().min(1, 'agentId is required').max(200),
    projectId: z.string().trim().min(1, 'projectId must not be empty').max(200).optional(),
    // Checked below: a regenerate answers the stored message and ignores this one.
    message: z.unknown().optional(),
    conversationId: z.string().min(1).max(200).optional(),
    stream: z.boolean().optional(),
    regenerate: z.boolean().optional(),
    editMessageId: z.string().min(1, 'editMessageId must not be empty').max(200).optional(),
    /** A model profile by name (GET /api/models); unknown names are a 400 naming this field. */
    model: z.string().trim().min(1, 'model must not be empty').max(64).optional(),
    /** Run in this workspace of the project (its checkout is `{project-root}`); a conversation keeps it. */
    workspaceId: z.string().trim().min(1, 'workspaceId must not be empty').max(200).optional(),
  })
  .superRefine((body, ctx) => {
    if (body.regenerate && body.editMessageId !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['editMessageId'], message: 'editMessageId cannot be combined with regenerate' });
    }
    if ((body.regenerate || body.editMessageId !== undefined) && !body.conversationId) {
      ctx.addIssue({ code: 'custom', path: ['conversationId'], message: `conversationId is required with ${body.regenerate ? 'regenerate' : 'editMessageId'}` });
    }
    if (body.regenerate) return;
    const message = Message.safeParse(body.message);
    for (const issue of message.success ? [] : message.error.issues) ctx.addIssue({ code: 'custom', path: ['message'], message: issue.message });
  });

export async function POST(request: Request) {
  return handle('POST /api/chat', request, async () => {
    const caller = await callerOf(request);
    const body = await readJson(request, ChatBody);
    const rt = getRuntime();
    const owner = await turnAccess(caller, body);
    const workspace = await turnWorkspace(caller, body);
    const wantsStream = body.stream ?? (request.headers.get('accept') ?? '').includes('text/event-stream');

    // One controller for the whole turn: the client going away or the stream being cancelled stops it.
    const controller = new AbortController();
    const abort = () => controller.abort();
    request.signal?.addEventListener('abort', abort, { once: true });
    const untrack = trackTurn(controller);
    const done = () => {
      untrack();
      request.signal?.removeEventListener('abort', abort);
    };

    let turn;
    try {
      turn = await startTurn(
        rt,
        {
          agentId: body.agentId,
          conversationId: body.conversationId,
          ...(body.regenerate ? { regenerate: true } : { message: body.message as string }),
          ...(body.editMessageId !== undefined ? { editMessageId: body.editMessageId } : {}),
          ...(body.projectId ? { projectId: body.projectId } : {}),
          ...(body.model ? { model: body.model } : {}),
          ...owner,
          ...(workspace ? { workspace } : {}),
        },
        controller.signal,
      );
    } catch (e) {
      done();
      throw e;
    }

    if (!wantsStream) {
      const summary = await collectTurn(turn.events, { price: turn.price }).finally(done);
      if (summary.error) {
        return Response.json(
          { success: false, error: summary.error.message, code: summary.error.code, conversationId: turn.conversationId, userMessageId: turn.userMessageId },
          { status: summary.error.status },
        );
      }
      return ok({
        conversationId: turn.conversationId,
        userMessageId: turn.userMessageId,
        message: {
          id: turn.messageId,
          role: 'assistant',
          content: summary.content,
          timestamp: new Date().toISOString(),
          functionCalls: summary.functionCalls,
          profile: turn.profile,
          model: turn.model,
        },
        usage: summary.usage,
        iterations: summary.iterations,
        stopReason: summary.stopReason,
        ...(summary.compactions.length ? { compactions: summary.compactions } : {}),
      });
    }

    const stream = sseBody({
      messageId: turn.messageId,
      conversationId: turn.conversationId,
      userMessageId: turn.userMessageId,
      model: { profile: turn.profile, model: turn.model, ...(turn.price ? { price: turn.price } : {}) },
      events: turn.events,
      onTextWritten: turn.reportTextSent,
      onCancel: () => controller.abort(),
      // The client gone is a cancel even where the server never cancels the body.
      ...(request.signal ? { readerGone: request.signal } : {}),
      onEnd: done,
    });
    return new Response(stream, { status: 200, headers: { ...UI_STREAM_HEADERS } });
  });
}
