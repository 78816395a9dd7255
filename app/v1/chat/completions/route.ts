import { z } from 'zod';
import { chatCompletion, OPENAI_MAX_BODY_BYTES } from '@/lib/services';
import { readJson } from '../../../api/_lib/http';
import { callerOf } from '../../../api/_lib/caller';
import { handleOpenAI } from '../../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

// OpenAI's fields that this server reads; any other field is ignored, as OpenAI ignores what it
// does not know of (`tools` too: the agent works with its own).
const Part = z.object({ type: z.string(), text: z.string().optional() });
const Message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(Part), z.null()]).optional(),
});
const Key = z.string().max(512);
const Body = z.object({
  model: z.string({ error: (i) => (i.input === undefined ? 'model is required' : 'model must be a string') }).trim().min(1, 'model is required').max(300),
  messages: z.array(Message, { error: (i) => (i.input === undefined ? 'messages is required' : 'messages must be an array') }).min(1, 'messages must not be empty').max(10_000),
  stream: z.boolean().nullable().optional(),
  stream_options: z.object({ include_usage: z.boolean().nullable().optional() }).nullable().optional(),
  user: Key.optional(),
  conversation: z.union([Key, z.object({ id: Key })]).nullable().optional(),
  metadata: z.record(z.string().max(64), Key).nullable().optional(),
});

const header = (request: Request, name: string) => request.headers.get(name)?.trim() || undefined;

export async function POST(request: Request) {
  return handleOpenAI('POST /v1/chat/completions', request, async () => {
    const caller = await callerOf(request);
    const body = await readJson(request, Body, OPENAI_MAX_BODY_BYTES);
    const conversation = typeof body.conversation === 'string' ? body.conversation : body.conversation?.id;
    const keys = { openWebUiChatId: header(request, 'x-openwebui-chat-id'), conversationHeader: header(request, 'x-conversation-id'), conversation, metadata: body.metadata, user: body.user };
    const input = { model: body.model, messages: body.messages, stream: !!body.stream, includeUsage: !!body.stream_options?.include_usage, keys, profile: header(request, 'x-bmad-profile') };
    const answer = await chatCompletion(caller, input, request.signal);
    const headers = { 'x-bmad-conversation-id': answer.conversationId };
    return answer.kind === 'stream' ? new Response(answer.body, { status: 200, headers: { ...answer.headers, ...headers } }) : Response.json(answer.completion, { headers });
  });
}
