import { POST as chat } from '@/app/api/chat/route';
import { GET as getConversation } from '@/app/api/conversations/[id]/route';
import { GET as getAudit } from '@/app/api/conversations/[id]/audit/route';
import { currentTurn, reply, type ChatRequestBody, type Reply, type ScriptRequest } from '../scripted-model';
import { get, jsonRequest, params, readSse, startHarness, type Harness } from './harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const send = (body: Record<string, unknown>, init?: RequestInit) => chat(jsonRequest('/api/chat', body, init));
const usage = (prompt_tokens: number, completion_tokens: number) => ({ usage: { prompt_tokens, completion_tokens } });

const INSTRUCTIONS = 'Find the user name in the bundle config.\nAnswer with the name only.';

const isNested = (body: ChatRequestBody) => String(body.messages?.[0]?.content ?? '').startsWith('You are a subagent');
const toolNames = (body: ChatRequestBody) => (body.tools ?? []).map((t) => t.function?.name);
/** Model calls of the current turn so far (tool results are the answers to earlier calls). */
const answered = (body: ChatRequestBody) => currentTurn(body).filter((m) => m.role === 'assistant').length;

/** The parent delegates to a subagent, which reads a file and answers; the parent answers with it. */
function delegating(nested: (body: ChatRequestBody, step: number) => Reply, parentArgs: Record<string, unknown> = { instructions: INSTRUCTIONS }) {
  return ({ body }: ScriptRequest): Reply => {
    if (isNested(body)) return nested(body, answered(body));
    if (answered(body) === 0) return reply.toolCalls([{ id: 'spawn_1', name: 'spawn_subagent', arguments: parentArgs }], usage(100, 1));
    const result = JSON.parse(String(currentTurn(body).find((m) => m.role === 'tool')!.content));
    return reply.text(`The subagent found: ${result.result ?? result.error?.code}`, usage(200, 4));
  };
}

const readsConfig = (_body: ChatRequestBody, step: number): Reply =>
  step === 0
    ? reply.toolCalls([{ name: 'read_file', arguments: { file_path: '{bundle-root}/config.yaml' } }], usage(10, 2))
    : reply.text('Ada', usage(20, 3));

describe('spawn_subagent through POST /api/chat', () => {
  it('runs a nested loop with its own prompt and tools, counted in the parent turn, kept in the history', async () => {
    h = await startHarness();
    h.model.setScript(delegating(readsConfig));
    const res = await send({ agentId: 'product-lead', message: 'who is the user?' });
    const body = (await res.json()) as Any;
    expect(res.status).toBe(200);
    expect(body.data.message.content).toBe('The subagent found: Ada');

    const requests = h.model.chatRequests().map((r) => r.body!);
    expect(requests.map(isNested)).toEqual([false, true, true, false]);
    // The nested request: the sub-task as its system prompt, no persona, no way to spawn again.
    const nested = requests[1];
    expect(String(nested.messages![0].content)).toContain(`## Your task\n${INSTRUCTIONS}`);
    expect(String(nested.messages![0].content)).not.toContain('Your full agent definition');
    expect(nested.messages!.map((m) => m.role)).toEqual(['system', 'user']);
    expect(toolNames(nested)).not.toContain('spawn_subagent');
    expect(toolNames(nested)).toEqual(expect.arrayContaining(['read_file', 'save_output']));
    expect(toolNames(requests[0])).toContain('spawn_subagent');

    const [spawn] = body.data.message.functionCalls;
    expect(spawn).toMatchObject({ id: 'spawn_1', name: 'spawn_subagent', arguments: { instructions: INSTRUCTIONS } });
    expect(spawn.result).toEqual({
      ok: true,
      result: 'Ada',
      steps: 2,
      usage: { promptTokens: 30, completionTokens: 5 },
      tool_calls: [{ name: 'read_file', ok: true, args: { file_path: '{bundle-root}/config.yaml' } }],
    });
    // The parent model got exactly that result.
    const toolMessage = requests[3].messages!.find((m) => m.role === 'tool')!;
    expect(JSON.parse(String(toolMessage.content))).toEqual(spawn.result);

    // Steps and tokens: the parent's 2 model calls and the subagent's 2.
    expect(body.data.iterations).toBe(4);
    expect(body.data.usage).toEqual({ promptTokens: 330, completionTokens: 10 });

    const id = body.data.conversationId;
    const detail = (await (await getConversation(get(`/api/conversations/${id}`), params({ id }))).json()) as Any;
    expect(detail.data.usage).toEqual({ promptTokens: 330, completionTokens: 10 });
    const assistant = detail.data.messages.find((m: Any) => m.role === 'assistant');
    expect(assistant.functionCalls).toEqual([expect.objectContaining({ id: 'spawn_1', name: 'spawn_subagent', result: spawn.result })]);
    expect(assistant.content).toBe('The subagent found: Ada');
    // The nested model calls are not the conversation's messages.
    expect(detail.data.messages.map((m: Any) => m.role)).toEqual(['user', 'assistant']);

    // Same sandbox, same audit log: the nested read is there next to the critical action's.
    const audit = (await (await getAudit(get(`/api/conversations/${id}/audit`), params({ id }))).json()) as Any;
    expect(audit.data.map((e: Any) => e.toolName).sort()).toEqual(['read_file', 'read_file', 'spawn_subagent']);
  });

  it('streams the nested calls as data-subagent parts under the spawn call', async () => {
    h = await startHarness();
    h.model.setScript(delegating(readsConfig));
    const chunks = (await readSse(await send({ agentId: 'product-lead', message: 'who?', stream: true }))).filter((c): c is Any => c !== '[DONE]');
    const types = chunks.map((c) => c.type);
    const nested = chunks.filter((c) => c.type === 'data-subagent');
    expect(nested.map((c) => c.data.state)).toEqual(['running', 'done']);
    for (const c of nested) {
      expect(c.id).toBe('spawn_1:0');
      expect(c.data).toMatchObject({ parentToolCallId: 'spawn_1', toolName: 'read_file', step: 1, input: { file_path: '{bundle-root}/config.yaml' } });
    }
    const spawnInput = types.indexOf('tool-input-available');
    const spawnOutput = chunks.findIndex((c) => c.type === 'tool-output-available' && c.toolCallId === 'spawn_1');
    expect(spawnInput).toBeLessThan(types.indexOf('data-subagent'));
    expect(types.lastIndexOf('data-subagent')).toBeLessThan(spawnOutput);
    expect(chunks[spawnOutput].output).toMatchObject({ ok: true, steps: 2 });
    // Only the parent's calls are tool parts.
    expect(chunks.filter((c) => c.type === 'tool-input-available').map((c) => c.toolName)).toEqual(['spawn_subagent']);
    expect(chunks.find((c) => c.type === 'data-usage').data).toEqual({ promptTokens: 330, completionTokens: 10, iterations: 4 });
  });

  it('stops a subagent at max_steps with E_SUBAGENT_LIMIT and what it had; it cannot spawn another', async () => {
    h = await startHarness();
    h.model.setScript(
      delegating(
        (_body, step) =>
          reply.toolCalls(
            [
              { name: 'list_files', arguments: { path: '{bundle-root}' } },
              ...(step === 0 ? [{ name: 'spawn_subagent', arguments: { instructions: 'recurse' } }] : []),
            ],
            { text: `Looked ${step + 1}. `, ...usage(10, 1) },
          ),
        { instructions: 'List everything', max_steps: 2 },
      ),
    );
    const body = (await (await send({ agentId: 'product-lead', message: 'list' })).json()) as Any;
    const [spawn] = body.data.message.functionCalls;
    expect(spawn.result.ok).toBe(false);
    expect(spawn.result.error.code).toBe('E_SUBAGENT_LIMIT');
    expect(spawn.result.error.details).toMatchObject({
      result: 'Looked 1. \n\nLooked 2. ',
      steps: 2,
      tool_calls: [
        { name: 'list_files', ok: true },
        { name: 'spawn_subagent', ok: false, error: 'E_INVALID_ARGS' },
        { name: 'list_files', ok: true },
      ],
    });
    // The parent goes on within its own limit and answers.
    expect(body.data.stopReason).toBe('stop');
    expect(body.data.message.content).toBe('The subagent found: E_SUBAGENT_LIMIT');
    expect(body.data.iterations).toBe(4);
    expect(h.model.chatRequests()).toHaveLength(4);
  });

  it('a subagent that uses the last of MAX_ITERATIONS ends the parent turn with max_iterations, cleanly', async () => {
    h = await startHarness({ MAX_ITERATIONS: '3' });
    h.model.setScript(delegating(() => reply.toolCalls([{ name: 'list_files', arguments: { path: '{bundle-root}' } }], usage(10, 1))));
    const res = await send({ agentId: 'product-lead', message: 'list' });
    const body = (await res.json()) as Any;
    expect(res.status).toBe(200);
    expect(body.data.stopReason).toBe('max_iterations');
    expect(body.data.iterations).toBe(3);
    expect(h.model.chatRequests()).toHaveLength(3);
    const [spawn] = body.data.message.functionCalls;
    expect(spawn.result.error.code).toBe('E_SUBAGENT_LIMIT');
    expect(spawn.result.error.message).toMatch(/all this turn had left/);
    expect(spawn.result.error.details).toMatchObject({ steps: 2, tool_calls: [{ name: 'list_files', ok: true }, { name: 'list_files', ok: true }] });
    expect(body.data.usage).toEqual({ promptTokens: 120, completionTokens: 3 });

    // The history is complete: the conversation goes on.
    h.model.setScript([reply.text('Going on.')]);
    const next = (await (await send({ agentId: 'product-lead', message: 'continue', conversationId: body.data.conversationId })).json()) as Any;
    expect(next.data.stopReason).toBe('stop');
    const roles = h.model.chatRequests()[3].body!.messages!.map((m) => m.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
  });

  it('stopping the turn during a subagent cancels its model call within 1 s and frees the conversation', async () => {
    h = await startHarness();
    h.model.setScript(delegating(() => reply.hang()));
    const controller = new AbortController();
    const res = await send({ agentId: 'product-lead', message: 'go', stream: true }, { signal: controller.signal });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('"conversationId"')) seen += new TextDecoder().decode((await reader.read()).value);
    const id = /"conversationId":"([^"]+)"/.exec(seen)![1];
    await h.model.waitFor(() => h.model.chatRequests().length === 2, 2000);
    const started = Date.now();
    controller.abort();
    await reader.cancel();
    await h.model.waitFor(() => h.model.chatRequests()[1].clientClosed, 1000);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(h.model.chatRequests()).toHaveLength(2);

    await new Promise((r) => setTimeout(r, 50));
    h.model.setScript([reply.text('back again')]);
    const next = await send({ agentId: 'product-lead', message: 'again', conversationId: id });
    expect(next.status).toBe(200);
    const detail = (await (await getConversation(get(`/api/conversations/${id}`), params({ id }))).json()) as Any;
    const spawn = detail.data.messages.find((m: Any) => m.role === 'assistant').functionCalls[0];
    expect(spawn.result.error.code).toBe('E_ABORTED');
  });

  it("the turn's deadline covers its subagents", async () => {
    h = await startHarness({ TURN_TIMEOUT_MS: '400' });
    h.model.setScript(delegating(() => reply.hang()));
    const res = await send({ agentId: 'product-lead', message: 'go' });
    expect(res.status).toBe(504);
    expect(((await res.json()) as Any).code).toBe('E_LLM_TIMEOUT');
    await h.model.waitFor(() => h.model.chatRequests()[1]?.clientClosed === true, 1000);
  });
});
