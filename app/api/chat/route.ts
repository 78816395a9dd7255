import { z } from 'zod';
import { chatTurn } from '@/lib/services';
import { handle, ok, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';

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
    const stream = body.stream ?? (request.headers.get('accept') ?? '').includes('text/event-stream');
    const turn = await chatTurn(caller, { ...body, message: body.message as string | undefined }, { stream, signal: request.signal });
    return turn.kind === 'stream' ? new Response(turn.body, { status: 200, headers: turn.headers }) : ok(turn.view);
  });
}
