import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { CompactionMark, StoredMessage } from '../../store/conversations/types';
import type { ToolDefinition } from '../../model/llm/types';
import { DROPPED_NOTE, toModelMessages } from '../prompt';
import { checkMessageFits, contextGuard, countMessage, countRequest, FRAMING, loadTokenizer, planCompaction, requestLimit, tokenizerFor, type Tokenizer } from './index';

let cl100k: Tokenizer;
let o200k: Tokenizer;
beforeAll(async () => {
  [cl100k, o200k] = await Promise.all([loadTokenizer('cl100k_base'), loadTokenizer('o200k_base')]);
});

describe('tokenizer', () => {
  it('counts known strings as the reference tokenizers do', () => {
    // tiktoken: cl100k_base encodes "tiktoken is great!" as [83, 1609, 5963, 374, 2294, 0].
    expect(cl100k.count('tiktoken is great!')).toBe(6);
    expect(cl100k.count('hello world')).toBe(2);
    expect(o200k.count('hello world')).toBe(2);
    expect(cl100k.count('')).toBe(0);
    // A long text is counted once, then served from the cache with the same answer.
    const long = Array(100).fill('The quick brown fox jumps over the lazy dog.').join(' ');
    expect(cl100k.count(long)).toBe(1000);
    expect(cl100k.count(long)).toBe(1000);
  });

  it('counts special tokens in user text as text instead of throwing', () => {
    expect(cl100k.count('a <|endoftext|> b')).toBeGreaterThan(3);
  });

  it('uses o200k for the OpenAI models that have it, cl100k for the rest unless the profile says', () => {
    expect(tokenizerFor('gpt-4o-mini')).toBe('o200k_base');
    expect(tokenizerFor('gpt-4.1')).toBe('o200k_base');
    expect(tokenizerFor('o3-mini')).toBe('o200k_base');
    expect(tokenizerFor('gpt-3.5-turbo')).toBe('cl100k_base');
    expect(tokenizerFor('qwen2.5:7b')).toBe('cl100k_base');
    expect(tokenizerFor('qwen2.5:7b', 'o200k_base')).toBe('o200k_base');
  });

  it('counts a request with every message framed, tool calls and ids included, plus the tool schemas', () => {
    const user: ChatCompletionMessageParam = { role: 'user', content: 'hello world' };
    expect(countMessage(cl100k, user)).toBe(FRAMING.perMessage + 1 + 2);
    const call: ChatCompletionMessageParam = { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"file_path":"a.md"}' } }] };
    expect(countMessage(cl100k, call)).toBe(
      FRAMING.perMessage + cl100k.count('assistant') + FRAMING.perToolCall + cl100k.count('call_1') + cl100k.count('read_file') + cl100k.count('{"file_path":"a.md"}'),
    );
    const tools: ToolDefinition[] = [{ type: 'function', function: { name: 'read_file', description: 'Read a file.', parameters: { type: 'object' } } }];
    const count = countRequest(cl100k, { messages: [user, call], tools });
    expect(count.tools).toBe(FRAMING.toolsPreamble + cl100k.count(JSON.stringify(tools)));
    expect(count.total).toBe(FRAMING.priming + count.tools + count.messages[0] + count.messages[1]);
    // The same content arriving as a fresh object (the other side of the wire) counts the same.
    expect(countRequest(cl100k, JSON.parse(JSON.stringify({ messages: [user, call], tools }))).total).toBe(count.total);
  });
});

// A conversation in a small window: a workflow started by the server, files read, several turns.
const ts = '2026-01-01T00:00:00.000Z';
const SYSTEM = 'You are a test agent. '.repeat(40);
const TOOLS: ToolDefinition[] = [{ type: 'function', function: { name: 'read_file', description: 'Read a file.', parameters: { type: 'object', properties: { file_path: { type: 'string' } } } } }];
const render = (h: StoredMessage[]) => toModelMessages(SYSTEM, h);
const file = (n: number) => `Line ${n} of a long document about the product. `.repeat(60);

function conversation(turns: number): StoredMessage[] {
  const h: StoredMessage[] = [
    { id: 'sys', role: 'system', content: 'Loaded config: user_name=Ada', timestamp: ts },
    { id: 'u0', role: 'user', content: '*plan', timestamp: ts },
    { id: 'a0', role: 'assistant', content: '', toolCalls: [{ id: 'wf', name: 'execute_workflow', arguments: '{"workflow_path":"{bundle-root}/workflows/brief/workflow.yaml"}' }], timestamp: ts },
    { id: 't0', role: 'tool', toolCallId: 'wf', name: 'execute_workflow', result: { ok: true, path: '{bundle-root}/workflows/brief/workflow.yaml', instructions: { content: 'Ask one question at a time. '.repeat(30) } }, timestamp: ts },
    { id: 'a0b', role: 'assistant', content: 'First question: what is the product?', timestamp: ts },
  ];
  for (let i = 1; i <= turns; i++) {
    h.push(
      { id: `u${i}`, role: 'user', content: `Answer ${i}: it helps parents keep school forms.`, timestamp: ts },
      { id: `a${i}`, role: 'assistant', content: '', toolCalls: [{ id: `r${i}`, name: 'read_file', arguments: `{"file_path":"{output_folder}/notes-${i}.md"}` }], timestamp: ts },
      { id: `t${i}`, role: 'tool', toolCallId: `r${i}`, name: 'read_file', result: { ok: true, path: `{output_folder}/notes-${i}.md`, content: file(i) }, timestamp: ts },
      { id: `a${i}b`, role: 'assistant', content: `Thanks. Question ${i + 1}: who else uses it?`, timestamp: ts },
    );
  }
  h.push({ id: 'ulast', role: 'user', content: 'The last answer, which must always reach the model.', timestamp: ts });
  return h;
}

const apply = (h: StoredMessage[], marks: CompactionMark[]) => {
  const byId = new Map(marks.map((m) => [m.messageId, m.compacted]));
  return h.map((m) => (byId.has(m.id) ? ({ ...m, compacted: byId.get(m.id) } as StoredMessage) : m));
};

describe('planCompaction', () => {
  const budget = { profile: 'small', contextWindow: 8192, maxOutputTokens: 1024 };

  it('fits a long conversation under the limit, old tool results first, keeping the system prompt, the workflow and the last user message', () => {
    const history = conversation(12);
    const before = countRequest(cl100k, { messages: render(history), tools: TOOLS }).total;
    expect(before).toBeGreaterThan(8192);
    const plan = planCompaction({ history, render, tools: TOOLS, tokenizer: cl100k, budget });
    if (!plan.ok) throw plan.error;
    const limit = requestLimit(budget);
    expect(plan.report).toMatchObject({ profile: 'small', limit, tokensBefore: before });
    expect(plan.report.tokensAfter).toBeLessThanOrEqual(limit);
    expect(countRequest(cl100k, { messages: plan.messages, tools: TOOLS }).total).toBe(plan.report.tokensAfter);
    // Down to the low-water mark, so the next requests grow from here without compacting again.
    expect(plan.report.tokensAfter).toBeLessThanOrEqual(Math.floor(limit * 0.75));

    const text = JSON.stringify(plan.messages);
    expect(plan.messages[0]).toEqual(render(history)[0]);
    expect(text).toContain('Ask one question at a time.');
    expect(plan.messages[plan.messages.length - 1]).toEqual({ role: 'user', content: 'The last answer, which must always reach the model.' });
    // Tool results went first, oldest first, each with how to read it again; no turn had to go.
    expect(plan.report.toolResults).toBeGreaterThan(0);
    expect(plan.report.droppedMessages).toBe(0);
    expect(text).toContain('notes-12.md');
    expect(text).toContain(file(12).slice(0, 200));
    const marker = plan.messages.find((m) => m.role === 'tool' && String(m.content).includes('notes-1.md'));
    expect(JSON.parse(String(marker!.content))).toMatchObject({ ok: true, compacted: true, path: '{output_folder}/notes-1.md' });
    expect(JSON.parse(String(marker!.content)).note).toMatch(/call read_file again with \{"file_path":"\{output_folder\}\/notes-1\.md"\}/);

    // The marks are what the store keeps: rendering the stored history with them gives the same request.
    expect(render(apply(history, plan.marks))).toEqual(plan.messages);
  });

  it('drops whole old turns once tool results are not enough, leaving a note and the workflow call with its result', () => {
    const history = conversation(40);
    const plan = planCompaction({ history, render, tools: TOOLS, tokenizer: cl100k, budget });
    if (!plan.ok) throw plan.error;
    expect(plan.report.droppedMessages).toBeGreaterThan(0);
    expect(plan.report.tokensAfter).toBeLessThanOrEqual(requestLimit(budget));
    const roles = plan.messages.map((m) => m.role);
    expect(plan.messages[1]).toEqual({ role: 'user', content: DROPPED_NOTE });
    // The workflow's call and result stay, in order, where they were.
    const wf = plan.messages.findIndex((m) => m.role === 'tool' && m.tool_call_id === 'wf');
    expect(wf).toBeGreaterThan(0);
    expect(plan.messages[wf - 1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'wf' }] });
    // Every tool call still has its answer, every answer its call.
    for (let i = 0; i < plan.messages.length; i++) {
      const m = plan.messages[i];
      if (m.role === 'tool') expect(['assistant', 'tool']).toContain(roles[i - 1]);
    }
    expect(render(apply(history, plan.marks))).toEqual(plan.messages);
  });

  it('goes on from an earlier compaction: a second one only adds marks', () => {
    const history = conversation(12);
    const first = planCompaction({ history, render, tools: TOOLS, tokenizer: cl100k, budget });
    if (!first.ok) throw first.error;
    const compacted = apply(history, first.marks);
    const grown = [...compacted];
    for (let i = 20; i < 40; i++) {
      grown.splice(grown.length - 1, 0,
        { id: `x${i}`, role: 'user', content: `More ${i}. `.repeat(30), timestamp: ts },
        { id: `y${i}`, role: 'assistant', content: `Reply ${i}. `.repeat(30), timestamp: ts },
      );
    }
    const second = planCompaction({ history: grown, render, tools: TOOLS, tokenizer: cl100k, budget });
    if (!second.ok) throw second.error;
    expect(second.marks.every((m) => !first.marks.some((f) => f.messageId === m.messageId && f.compacted === m.compacted))).toBe(true);
    expect(second.report.tokensAfter).toBeLessThanOrEqual(requestLimit(budget));
  });

  it("shortens the arguments of this step's own call once it ran (a document just saved) before giving up", () => {
    const history = conversation(1);
    history.push(
      { id: 'asave', role: 'assistant', content: '', toolCalls: [{ id: 'save', name: 'save_output', arguments: JSON.stringify({ file_path: 'brief.md', content: file(99).repeat(12) }) }], timestamp: ts },
      { id: 'tsave', role: 'tool', toolCallId: 'save', name: 'save_output', result: { ok: true, path: '{output_folder}/brief.md', bytes_written: 40000 }, timestamp: ts },
    );
    const plan = planCompaction({ history, render, tools: TOOLS, tokenizer: cl100k, budget });
    if (!plan.ok) throw plan.error;
    const call = plan.messages.find((m) => m.role === 'assistant' && m.tool_calls?.[0]?.id === 'save') as { tool_calls: { function: { arguments: string } }[] };
    expect(JSON.parse(call.tool_calls[0].function.arguments)).toEqual({ file_path: 'brief.md', content: expect.stringMatching(/^\[[\d,]+ tokens removed to fit the context window; this call already ran\]$/) });
    expect(plan.report.toolArguments).toBe(1);
  });

  it('fails before the call, naming what does not fit, when the protected parts alone are too large', () => {
    const history = conversation(2);
    history[history.length - 1] = { id: 'ulast', role: 'user', content: 'word '.repeat(9000), timestamp: ts };
    const plan = planCompaction({ history, render, tools: TOOLS, tokenizer: cl100k, budget });
    expect(plan.ok).toBe(false);
    if (plan.ok) return;
    expect(plan.error.code).toBe('E_CONTEXT_TOO_LARGE');
    expect(plan.error.status).toBe(422);
    expect(plan.error.message).toMatch(/profile "small"/);
    expect(plan.error.message).toMatch(/the last user message 9,0\d\d/);
    expect(plan.error.message).toMatch(/the active workflow's instructions/);
    expect(plan.error.message).toMatch(/allows 7,168/);
  });
});

describe('contextGuard', () => {
  const budget = { profile: 'small', contextWindow: 8192, maxOutputTokens: 1024 };

  it('lets a request under the limit through untouched, without reading the store', async () => {
    const load = jest.fn(async () => conversation(1));
    const save = jest.fn(async () => undefined);
    const prepare = contextGuard({ budget, tokenizer: cl100k, tools: TOOLS, render, load, save });
    const messages = render(conversation(1));
    const out = await prepare(messages);
    expect(out).toEqual({ messages });
    expect((out as { messages: unknown }).messages).toBe(messages);
    expect(load).not.toHaveBeenCalled();
  });

  it('compacts from the stored history, saves the marks and reports it', async () => {
    const history = conversation(12);
    const saved: CompactionMark[][] = [];
    const prepare = contextGuard({ budget, tokenizer: cl100k, tools: TOOLS, render, load: async () => history, save: async (m) => void saved.push(m) });
    const out = await prepare(render(history));
    if ('error' in out) throw out.error;
    expect(out.compaction).toMatchObject({ profile: 'small', droppedMessages: 0 });
    expect(out.compaction!.toolResults).toBeGreaterThan(0);
    expect(saved).toHaveLength(1);
    expect(render(apply(history, saved[0]))).toEqual(out.messages);
  });

  it('refuses at once a message that cannot fit beside the system prompt and the tool schemas', () => {
    expect(checkMessageFits(cl100k, budget, { systemPrompt: SYSTEM, message: 'short', tools: TOOLS })).toBeNull();
    const error = checkMessageFits(cl100k, budget, { systemPrompt: SYSTEM, message: 'word '.repeat(8000), tools: TOOLS });
    expect(error).toMatchObject({ code: 'E_CONTEXT_TOO_LARGE', status: 422 });
    expect(error!.message).toMatch(/the message \(8,0\d\d\)/);
  });
});
