import { POST as chat } from '@/app/api/chat/route';
import { POST as mcp } from '@/app/api/mcp/route';
import * as access from '@/lib/services/access';
import { AppError } from '@/lib/errors';
import { jsonRequest, startHarness, type Harness } from './harness';

/**
 * POST /api/chat and the MCP chat tool run one turn function of lib/services, behind one access
 * rule: changing that rule once (here: no chat outside a project) changes both surfaces alike,
 * and restoring it gives both their turn back.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  h.model.setScript('plain');
});
afterAll(async () => {
  await h.close();
});
afterEach(() => {
  jest.restoreAllMocks();
});

const turn = { agentId: 'product-lead', message: 'hello from a surface' };

/** One JSON-RPC call of the MCP chat tool, through the real /api/mcp handler (stateless: no session needed). */
async function mcpChat(args: Record<string, unknown>): Promise<{ isError?: boolean; text: string }> {
  const res = await mcp(
    jsonRequest('/api/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'chat', arguments: args } }, { headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }),
  );
  expect(res.status).toBe(200);
  const { result } = (await res.json()) as { result: { isError?: boolean; content: Array<{ text: string }> } };
  return { isError: result.isError, text: result.content[0]!.text };
}

const conversations = async () => (await h.runtime.store.list()).items.length;

it('a rule changed once in the turn access policy is followed by POST /api/chat (JSON and stream) and the MCP chat tool', async () => {
  const original = access.turnAccess;
  const policy = jest.spyOn(access, 'turnAccess').mockImplementation(async (caller, target) => {
    if (!target.projectId) throw new AppError('E_FORBIDDEN', 'Chat only in a project.');
    return original(caller, target);
  });
  const before = await conversations();

  const rest = await chat(jsonRequest('/api/chat', turn));
  expect(rest.status).toBe(403);
  expect(await rest.json()).toEqual({ success: false, code: 'E_FORBIDDEN', error: 'Chat only in a project.' });
  const streamed = await chat(jsonRequest('/api/chat', { ...turn, stream: true }));
  expect(streamed.status).toBe(403);
  expect((await streamed.json()).code).toBe('E_FORBIDDEN');
  expect(await mcpChat(turn)).toEqual({ isError: true, text: 'E_FORBIDDEN: Chat only in a project.' });

  // Every surface asked the one rule, and none started a turn past it.
  expect(policy).toHaveBeenCalledTimes(3);
  expect(await conversations()).toBe(before);

  policy.mockRestore();
  const answered = await chat(jsonRequest('/api/chat', turn));
  expect(answered.status).toBe(200);
  const body = await answered.json();
  expect(body.data.message.content).toContain('You said: "hello from a surface"');
  const viaMcp = await mcpChat(turn);
  expect(viaMcp.isError).toBeFalsy();
  const brief = JSON.parse(viaMcp.text);
  expect(brief).toMatchObject({ answer: body.data.message.content, stopReason: 'stop', toolCalls: [] });
  expect(brief.conversationId).not.toBe(body.data.conversationId);
  expect(await conversations()).toBe(before + 2);
}, 60_000);

it('a refusal of the policy on a conversation is the same error on both surfaces', async () => {
  const first = await (await chat(jsonRequest('/api/chat', turn))).json();
  const conversationId = first.data.conversationId as string;
  jest.spyOn(access, 'turnAccess').mockRejectedValue(new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${conversationId}".`));

  const rest = await chat(jsonRequest('/api/chat', { ...turn, conversationId }));
  expect(rest.status).toBe(404);
  const restBody = await rest.json();
  const viaMcp = await mcpChat({ ...turn, conversationId });
  expect(viaMcp).toEqual({ isError: true, text: `${restBody.code}: ${restBody.error}` });
  expect(restBody.code).toBe('E_CONVERSATION_NOT_FOUND');
  expect((await h.runtime.store.messages(conversationId)).filter((m) => m.role === 'user')).toHaveLength(1);
}, 60_000);
