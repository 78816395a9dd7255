import { recordedTurnSse } from './__fixtures__/turn';
import { chatReducer, initialChatState, reduceChunks, runningTool } from './chatReducer';
import { historyToMessages } from './history';
import { consumeUiMessageStream, createSseParser, parseUiMessageStreamText } from './sse';
import type { ChatState, StreamChunk, ToolPart } from './types';

function submitted(): ChatState {
  return chatReducer(initialChatState, { type: 'submit', text: '*plan', userMessageId: 'u1', assistantMessageId: 'a1' });
}

async function* pieces(text: string, size: number) {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

async function feed(text: string, size: number): Promise<{ state: ChatState; sawDone: boolean }> {
  let state = submitted();
  const { sawDone } = await consumeUiMessageStream(pieces(text, size), (chunk) => {
    state = chatReducer(state, { type: 'chunk', chunk });
  });
  state = chatReducer(state, { type: 'end', reason: 'complete' });
  return { state, sawDone };
}

describe('SSE parser', () => {
  it('handles CRLF, CR, comments, multi-line data and a last event without a blank line', () => {
    const events: string[] = [];
    const p = createSseParser((e) => events.push(e.data));
    p.feed(': keep-alive\r\ndata: one\r\n\r');
    p.feed('\ndata: two\rdata: lines\r\rdata: three');
    p.end();
    expect(events).toEqual(['one', 'two\nlines', 'three']);
  });

  it('skips events that are not JSON without losing the rest', () => {
    const { chunks, sawDone } = parseUiMessageStreamText('data: {oops\n\ndata: {"type":"start"}\n\ndata: [DONE]\n\n');
    expect(chunks).toEqual([{ type: 'start' }]);
    expect(sawDone).toBe(true);
  });
});

describe('stream reducer on a recorded turn', () => {
  it.each([1, 7, 64, 100000])('gives the same parts in order when the body arrives in %i-character pieces', async (size) => {
    const { state, sawDone } = await feed(recordedTurnSse, size);
    expect(sawDone).toBe(true);
    expect(state.conversationId).toBe('conv-1');
    expect(state.status).toBe('idle');
    expect(state.error).toBeNull();
    expect(state.stopReason).toBe('stop');
    expect(state.usage).toEqual({ promptTokens: 120, completionTokens: 30 });
    const [user, assistant] = state.messages;
    expect(user.role).toBe('user');
    expect(assistant.parts.map((p) => (p.type === 'tool' ? `${p.toolName}:${p.state}` : `${p.type}:${p.state}`))).toEqual([
      'text:done',
      'read_file:done',
      'read_file:failed',
      'save_output:done',
      'text:done',
    ]);
    expect(assistant.parts[0]).toMatchObject({ text: 'Let me look at the workflow.' });
    // The message and the code apart, so every error reads the same way.
    expect(assistant.parts[2]).toMatchObject({ errorText: 'File not found: {bundle-root}/missing.md', errorCode: 'ENOENT' });
    expect(state.activeMessageId).toBeNull();
  });

  it('is busy while a tool runs and names the running tool', () => {
    let s = submitted();
    s = reduceChunks(s, [
      { type: 'start' },
      { type: 'tool-input-available', toolCallId: 'c', toolName: 'list_files', input: { path: '{bundle-root}' } },
    ]);
    expect(s.status).toBe('streaming');
    expect(runningTool(s)?.toolName).toBe('list_files');
  });

  it('treats an ok:false output as a failure', () => {
    const s = reduceChunks(submitted(), [
      { type: 'tool-input-available', toolCallId: 'c', toolName: 'edit_file', input: {} },
      { type: 'tool-output-available', toolCallId: 'c', output: { ok: false, error: { code: 'E_NO_MATCH', message: 'old_text not found' } } },
    ]);
    expect(s.messages[1].parts[0]).toMatchObject({ state: 'failed', errorText: 'old_text not found', errorCode: 'E_NO_MATCH' });
  });

  it('starts a new text part after a tool even when the server reuses the part id', () => {
    const s = reduceChunks(submitted(), [
      { type: 'text-start', id: '0' },
      { type: 'text-delta', id: '0', delta: 'before' },
      { type: 'tool-input-available', toolCallId: 'c', toolName: 'read_file', input: {} },
      { type: 'tool-output-available', toolCallId: 'c', output: { ok: true } },
      { type: 'text-start', id: '0' },
      { type: 'text-delta', id: '0', delta: 'after' },
    ]);
    expect(s.messages[1].parts.map((p) => (p.type === 'text' ? p.text : p.type))).toEqual(['before', 'tool', 'after']);
  });

  it('appends deltas without ids to the open text part', () => {
    const s = reduceChunks(submitted(), [
      { type: 'text-delta', delta: 'a' },
      { type: 'text-delta', delta: 'b' },
    ] as StreamChunk[]);
    expect(s.messages[1].parts).toHaveLength(1);
    expect(s.messages[1].parts[0]).toMatchObject({ text: 'ab' });
  });

  it('reports max_iterations so the UI can offer Continue', () => {
    const s = reduceChunks(submitted(), [
      { type: 'text-delta', id: 't', delta: 'working' },
      { type: 'data-stop', data: { stopReason: 'max_iterations' } },
      { type: 'finish' },
    ]);
    expect(s.stopReason).toBe('max_iterations');
    expect(s.status).toBe('idle');
  });

  it('notices a stream that ends without finish (dropped connection) and settles running tools', () => {
    const text = parseUiMessageStreamText(recordedTurnSse).chunks.slice(0, 9);
    let s = reduceChunks(submitted(), text);
    s = chatReducer(s, { type: 'end', reason: 'complete' });
    expect(s.error).toMatchObject({ kind: 'dropped' });
    expect(s.status).toBe('idle');
    const tools = s.messages[1].parts.filter((p): p is ToolPart => p.type === 'tool');
    expect(tools.every((t) => t.state !== 'running')).toBe(true);
  });

  it('shows a server error chunk and does not call it a dropped connection', () => {
    let s = reduceChunks(submitted(), [{ type: 'error', errorText: 'E_LLM_UPSTREAM: rate limited' }]);
    s = chatReducer(s, { type: 'end', reason: 'complete' });
    expect(s.error).toEqual({ kind: 'stream', message: 'rate limited', code: 'E_LLM_UPSTREAM' });
    // The empty answer is dropped; the question stays.
    expect(s.messages.map((m) => m.role)).toEqual(['user']);
  });

  it('marks a stopped turn as aborted and ignores chunks that arrive later', () => {
    let s = reduceChunks(submitted(), [
      { type: 'text-delta', id: 't', delta: 'partial' },
      { type: 'tool-input-available', toolCallId: 'c', toolName: 'read_file', input: {} },
    ]);
    s = chatReducer(s, { type: 'end', reason: 'aborted' });
    expect(s.stopReason).toBe('aborted');
    expect(s.error).toBeNull();
    expect(s.messages[1].parts[1]).toMatchObject({ state: 'failed', errorText: 'Stopped.' });
    const after = chatReducer(s, { type: 'chunk', chunk: { type: 'text-delta', id: 't', delta: 'late' } });
    expect(after).toBe(s);
  });

  it('keeps the question and the error when the request itself fails; retry drops them before resending', () => {
    let s = chatReducer(submitted(), { type: 'request-failed', error: { kind: 'http', message: 'busy', code: 'E_CONVERSATION_BUSY', status: 409 } });
    expect(s.messages.map((m) => m.role)).toEqual(['user']);
    expect(s.error?.code).toBe('E_CONVERSATION_BUSY');
    expect(s.lastUserText).toBe('*plan');
    s = chatReducer(s, { type: 'discard-failed-turn' });
    expect(s.messages).toEqual([]);
    expect(s.error).toBeNull();
  });
});

describe('history', () => {
  it('renders stored tool calls with their results and merges an answer', () => {
    const messages = historyToMessages([
      { id: 'u', role: 'user', content: 'hi', timestamp: 't' },
      {
        id: 'a',
        role: 'assistant',
        content: 'Done.',
        timestamp: 't',
        functionCalls: [
          { id: 'c1', name: 'read_file', arguments: '{"file_path":"x.md"}', result: { ok: true, content: '' } },
          { id: 'c2', name: 'save_output', arguments: { file_path: 'y.md' }, result: { ok: false, error: { code: 'E_READ_ONLY', message: 'no' } } },
          { id: 'c3', name: 'list_files', arguments: {}, result: undefined },
        ],
      },
    ]);
    expect(messages).toHaveLength(2);
    const parts = messages[1].parts;
    expect(parts.map((p) => (p.type === 'tool' ? p.state : p.type))).toEqual(['done', 'failed', 'failed', 'text']);
    expect((parts[0] as ToolPart).input).toEqual({ file_path: 'x.md' });
    expect(parts[1]).toMatchObject({ errorText: 'no', errorCode: 'E_READ_ONLY' });
  });

  it('names the profile and the model that answered, with the cost of the turn, from stored fields', () => {
    const stored = { id: 'a', role: 'assistant', content: 'Done.', timestamp: 't', profile: 'strong', model: 'gpt-4.1', usage: { promptTokens: 10, completionTokens: 2 }, cost: 0.002 };
    const [m] = historyToMessages([stored as never]);
    expect(m).toMatchObject({ model: { profile: 'strong', model: 'gpt-4.1' }, cost: 0.002, usage: { promptTokens: 10, completionTokens: 2 } });
  });
});

describe('the answering profile in the stream', () => {
  it('is known from data-conversation, before the first word, and the cost from data-usage', () => {
    let s = submitted();
    s = chatReducer(s, { type: 'chunk', chunk: { type: 'data-conversation', data: { conversationId: 'c1', profile: 'fast', model: 'qwen2.5:7b' } } as StreamChunk });
    expect(s.messages.find((m) => m.id === 'a1')?.model).toEqual({ profile: 'fast', model: 'qwen2.5:7b' });
    s = chatReducer(s, { type: 'chunk', chunk: { type: 'data-usage', data: { promptTokens: 5, completionTokens: 1, cachedTokens: 0, cost: 0.0001 } } as StreamChunk });
    expect(s.messages.find((m) => m.id === 'a1')).toMatchObject({ model: { profile: 'fast' }, cost: 0.0001 });
  });
});

describe('after a Stop, the stored answer', () => {
  const stoppedOnScreen = (): ChatState => {
    let s = submitted();
    s = chatReducer(s, { type: 'chunk', chunk: { type: 'data-conversation', data: { conversationId: 'c1' } } });
    s = chatReducer(s, { type: 'chunk', chunk: { type: 'text-start', id: 't' } });
    s = chatReducer(s, { type: 'chunk', chunk: { type: 'text-delta', id: 't', delta: 'w001 w002 w003' } });
    return chatReducer(s, { type: 'end', reason: 'aborted' });
  };
  const stored = historyToMessages([
    { id: 'su', role: 'user', content: '*plan', timestamp: 't' },
    { id: 'sa', role: 'assistant', content: 'w001 w002', timestamp: 't', parts: [{ type: 'text', text: 'w001 w002' }] },
  ]);

  it('replaces the answer on screen, keeping what came before it and the stopped state', () => {
    const s = chatReducer(stoppedOnScreen(), { type: 'stored-answer', conversationId: 'c1', messages: stored });
    expect(s.messages.map((m) => m.id)).toEqual(['u1', 'sa']);
    expect(s.messages[1].parts).toEqual([expect.objectContaining({ type: 'text', text: 'w001 w002' })]);
    expect(s.stopReason).toBe('aborted');
  });

  it('is dropped for another conversation or once a new turn has started', () => {
    const s = stoppedOnScreen();
    expect(chatReducer(s, { type: 'stored-answer', conversationId: 'other', messages: stored })).toBe(s);
    const next = chatReducer(s, { type: 'submit', text: 'again', userMessageId: 'u2', assistantMessageId: 'a2' });
    expect(chatReducer(next, { type: 'stored-answer', conversationId: 'c1', messages: stored })).toBe(next);
  });

  it('removes an answer the server never stored', () => {
    const onlyQuestion = historyToMessages([{ id: 'su', role: 'user', content: '*plan', timestamp: 't' }]);
    expect(chatReducer(stoppedOnScreen(), { type: 'stored-answer', conversationId: 'c1', messages: onlyQuestion }).messages.map((m) => m.id)).toEqual(['u1']);
  });
});
