import { TextDecoder as NodeTextDecoder, TextEncoder as NodeTextEncoder } from 'util';
import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary, ConversationDetail, ModelProfileView } from '@/types/api';
import { recordedTurnChunks } from '../_lib/__fixtures__/turn';
import { ChatView, type ChatViewProps } from './ChatView';

// jsdom has no TextDecoder; the browser does.
Object.assign(globalThis, { TextDecoder: NodeTextDecoder, TextEncoder: NodeTextEncoder });

const agent: AgentSummary = {
  id: 'analyst',
  name: 'Mary',
  title: 'Business Analyst',
  icon: '📊',
  bundleName: 'bmm',
  greeting: 'Hello, I am **Mary**. Pick a command.',
  commands: [
    { cmd: '*plan', description: 'Create a product brief' },
    { cmd: '*help', description: 'Show the menu' },
  ],
};

const sse = (chunks: Record<string, unknown>[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('');

/** A response body the test writes to piece by piece, like a live SSE stream. */
function liveBody(signal?: AbortSignal | null) {
  const enc = new NodeTextEncoder();
  const queue: Array<Uint8Array | null> = [];
  let pending: { resolve: (r: { done: boolean; value?: Uint8Array }) => void; reject: (e: unknown) => void } | null = null;
  let failure: unknown = null;
  const flush = () => {
    if (!pending) return;
    if (failure) {
      pending.reject(failure);
      pending = null;
      return;
    }
    if (queue.length === 0) return;
    const next = queue.shift()!;
    const p = pending;
    pending = null;
    p.resolve(next === null ? { done: true } : { done: false, value: next });
  };
  signal?.addEventListener('abort', () => {
    failure = Object.assign(new Error('The operation was aborted.'), { name: 'AbortError' });
    flush();
  });
  const reader = {
    read: () =>
      new Promise<{ done: boolean; value?: Uint8Array }>((resolve, reject) => {
        pending = { resolve, reject };
        flush();
      }),
    releaseLock: () => {},
  };
  return {
    body: { getReader: () => reader },
    push: (text: string) => {
      queue.push(enc.encode(text));
      flush();
    },
    close: () => {
      queue.push(null);
      flush();
    },
  };
}

type Live = ReturnType<typeof liveBody>;

function streamResponse(live: Live) {
  return { ok: true, status: 200, headers: { get: (k: string) => (k.toLowerCase() === 'content-type' ? 'text/event-stream' : null) }, body: live.body };
}

function jsonResponse(status: number, body: unknown) {
  return { ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body };
}

let lives: Live[];
let chatBodies: Array<Record<string, unknown>>;
let fetchMock: jest.Mock;
let chatReply: (init: RequestInit) => unknown;
let details: Record<string, unknown>;
let patches: Array<{ url: string; body: unknown }>;

beforeEach(() => {
  details = {};
  patches = [];
  lives = [];
  chatBodies = [];
  chatReply = (init) => {
    const live = liveBody(init.signal);
    lives.push(live);
    return streamResponse(live);
  };
  fetchMock = jest.fn(async (url: string, init: RequestInit = {}) => {
    if (url === '/api/chat') {
      chatBodies.push(JSON.parse(String(init.body)));
      return chatReply(init);
    }
    if (init.method === 'PATCH') {
      patches.push({ url, body: JSON.parse(String(init.body)) });
      return jsonResponse(200, { success: true, data: {} });
    }
    if (url.startsWith('/api/conversations/conv-9')) return jsonResponse(200, { success: true, data: detail });
    const extra = details[url.replace('/api/conversations/', '')];
    if (extra) return jsonResponse(200, { success: true, data: extra });
    return jsonResponse(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
  (globalThis as { fetch?: unknown }).fetch = fetchMock;
  Element.prototype.scrollTo = jest.fn();
});

function renderChat(props: Partial<ChatViewProps> = {}) {
  const handlers = {
    onConversationCreated: jest.fn(),
    onDetailLoaded: jest.fn(),
    onOutputsChanged: jest.fn(),
    onTurnEnd: jest.fn(),
    onNewConversation: jest.fn(),
  };
  render(<ChatView conversationId={null} agentId="analyst" agents={[agent]} {...handlers} {...props} />);
  return handlers;
}

const detail: ConversationDetail = {
  id: 'conv-9',
  agentId: 'analyst',
  bundleName: 'bmm',
  title: 'Brief',
  createdAt: '2025-01-01T00:00:00Z',
  updatedAt: '2025-01-01T00:00:00Z',
  status: 'idle',
  messageCount: 2,
  usage: { promptTokens: 1, completionTokens: 1, cachedTokens: 0 },
  messages: [
    { id: 'u1', role: 'user', content: '*plan', timestamp: '2025-01-01T00:00:00Z' },
    {
      id: 'a1',
      role: 'assistant',
      content: 'Here is the brief.',
      timestamp: '2025-01-01T00:00:01Z',
      functionCalls: [{ id: 'c1', name: 'execute_workflow', arguments: { workflow_path: '{bundle-root}/workflows/plan/workflow.yaml' }, result: { ok: true, workflow: { name: 'plan' } } }],
    },
  ],
};

describe('ChatView', () => {
  it('opens with the greeting and command cards; a card sends the command and the answer streams in', async () => {
    const user = userEvent.setup();
    const h = renderChat();
    expect(screen.getByTestId('message-greeting')).toHaveTextContent('Hello, I am Mary. Pick a command.');
    // An empty chat shows each command with its description, in plain sight rather than a tooltip.
    const cards = screen.getAllByTestId('command-card');
    expect(cards.map((c) => c.textContent)).toEqual(['*planCreate a product brief', '*helpShow the menu']);
    expect(screen.queryByTestId('command-chip')).toBeNull();

    await user.click(cards[0]);
    expect(chatBodies[0]).toEqual({ agentId: 'analyst', message: '*plan', stream: true });
    const log = screen.getByRole('log');
    expect(log).toHaveAttribute('aria-busy', 'true');
    expect(screen.getByTestId('stop-button')).toBeInTheDocument();
    expect(screen.getByTestId('message-user')).toHaveTextContent('*plan');

    // Up to the first tool call: the status line names the activity, not every token.
    await act(async () => lives[0].push(sse(recordedTurnChunks.slice(0, 8))));
    await waitFor(() => expect(screen.getByTestId('tool-activity')).toHaveAttribute('data-state', 'running'));
    expect(screen.getByRole('status')).toHaveTextContent('Reading file…');
    expect(screen.getByTestId('message-assistant')).toHaveTextContent('Let me look at the workflow.');
    expect(h.onConversationCreated).toHaveBeenCalledWith('conv-1');

    await act(async () => {
      lives[0].push(sse(recordedTurnChunks.slice(8)));
      lives[0].push('data: [DONE]\n\n');
      lives[0].close();
    });
    await waitFor(() => expect(log).toHaveAttribute('aria-busy', 'false'));
    const tools = screen.getAllByTestId('tool-activity');
    expect(tools.map((t) => t.getAttribute('data-state'))).toEqual(['done', 'failed', 'done']);
    expect(within(screen.getByTestId('message-assistant')).getByRole('table')).toBeInTheDocument();
    expect(h.onOutputsChanged).toHaveBeenCalled();
    expect(h.onTurnEnd).toHaveBeenCalled();
    expect(screen.getByTestId('send-button')).toBeInTheDocument();
    expect(screen.queryByTestId('chat-error')).toBeNull();

    // The next message goes to the same conversation, and only the new message is sent.
    await user.type(screen.getByTestId('composer-input'), 'thanks{Enter}');
    expect(chatBodies[1]).toEqual({ agentId: 'analyst', message: 'thanks', conversationId: 'conv-1', stream: true });
  });

  it('Stop aborts the request and marks the turn as stopped', async () => {
    const user = userEvent.setup();
    renderChat();
    await user.type(screen.getByTestId('composer-input'), 'go{Enter}');
    await act(async () => lives[0].push(sse([{ type: 'start' }, { type: 'text-delta', id: 't', delta: 'part' }])));
    await user.click(screen.getByTestId('stop-button'));
    await waitFor(() => expect(screen.getByTestId('stopped-notice')).toBeInTheDocument());
    expect(fetchMock.mock.calls[0][1].signal.aborted).toBe(true);
    expect(screen.getByRole('log')).toHaveAttribute('aria-busy', 'false');
    expect(screen.getByTestId('message-assistant')).toHaveTextContent('part');
  });

  it('offers Continue at the step limit and sends "continue"', async () => {
    const user = userEvent.setup();
    renderChat();
    await user.type(screen.getByTestId('composer-input'), 'go{Enter}');
    await act(async () => {
      lives[0].push(sse([{ type: 'start' }, { type: 'data-conversation', data: { conversationId: 'c2' } }, { type: 'data-stop', data: { stopReason: 'max_iterations' } }, { type: 'finish' }]) + 'data: [DONE]\n\n');
      lives[0].close();
    });
    await user.click(await screen.findByTestId('continue-button'));
    expect(chatBodies[1]).toEqual({ agentId: 'analyst', message: 'continue', conversationId: 'c2', stream: true });
  });

  it('shows a dropped connection and retries the same message', async () => {
    const user = userEvent.setup();
    renderChat();
    await user.type(screen.getByTestId('composer-input'), 'hello{Enter}');
    await act(async () => {
      lives[0].push(sse([{ type: 'start' }, { type: 'text-delta', id: 't', delta: 'half an ans' }]));
      lives[0].close();
    });
    const alert = await screen.findByTestId('chat-error');
    expect(alert).toHaveTextContent('Connection lost');
    await user.click(within(alert).getByTestId('retry-button'));
    expect(chatBodies[1]).toMatchObject({ message: 'hello' });
  });

  it('shows an API error (no model configured) with Retry', async () => {
    chatReply = () => jsonResponse(503, { success: false, error: 'No model is configured: set OPENAI_API_KEY or OPENAI_BASE_URL, and OPENAI_MODEL.', code: 'E_LLM_NOT_CONFIGURED' });
    const user = userEvent.setup();
    renderChat();
    await user.type(screen.getByTestId('composer-input'), 'hello{Enter}');
    const alert = await screen.findByTestId('chat-error');
    expect(alert).toHaveTextContent('set OPENAI_API_KEY or OPENAI_BASE_URL');
    expect(alert).toHaveTextContent('E_LLM_NOT_CONFIGURED');
    expect(screen.getAllByTestId('message-user')).toHaveLength(1);
    await user.click(screen.getByTestId('retry-button'));
    await waitFor(() => expect(chatBodies).toHaveLength(2));
    expect(screen.getAllByTestId('message-user')).toHaveLength(1);
  });

  it('loads an existing conversation with its tool calls', async () => {
    const h = renderChat({ conversationId: 'conv-9', agentId: null });
    await screen.findByTestId('message-user');
    expect(h.onDetailLoaded).toHaveBeenCalledWith(expect.objectContaining({ id: 'conv-9' }));
    const tool = screen.getByTestId('tool-activity');
    expect(screen.getByTestId('tool-label')).toHaveTextContent('Ran workflow plan');
    expect(tool).toHaveAttribute('data-state', 'done');
    expect(screen.getByTestId('message-assistant')).toHaveTextContent('Here is the brief.');
    await waitFor(() => expect(screen.getByTestId('composer-input')).toHaveFocus());
    const user = userEvent.setup();
    await user.type(screen.getByTestId('composer-input'), 'more{Enter}');
    expect(chatBodies[0]).toEqual({ agentId: 'analyst', message: 'more', conversationId: 'conv-9', stream: true });
  });

  it('says so when the conversation does not exist', async () => {
    renderChat({ conversationId: 'nope', agentId: null });
    expect(await screen.findByRole('alert')).toHaveTextContent('does not exist');
  });

  it("sends a project agent's messages with the project, and never lets a same-named bundle agent answer", async () => {
    const user = userEvent.setup();
    const projectAgent: AgentSummary = { ...agent, name: 'Mary (acme)', projectId: 'acme', bundleName: 'acme' };
    renderChat({ projectId: 'acme', agents: [agent, projectAgent] });
    expect(screen.getByRole('region', { name: 'Conversation with Mary (acme)' })).toBeInTheDocument();
    await user.type(screen.getByTestId('composer-input'), 'hello{Enter}');
    expect(chatBodies[0]).toEqual({ projectId: 'acme', agentId: 'analyst', message: 'hello', stream: true });
  });

  it('in a project without that agent, the composer stays off', () => {
    renderChat({ projectId: 'acme', agents: [agent] });
    expect(screen.getByTestId('composer-input')).toBeDisabled();
  });
});

/** Ends the current live stream with these chunks. */
async function finish(live: Live, chunks: Record<string, unknown>[]) {
  await act(async () => {
    live.push(sse(chunks) + 'data: [DONE]\n\n');
    live.close();
  });
}

const answer = (conversationId: string, text: string, extra: Record<string, unknown>[] = []) => [
  { type: 'start' },
  { type: 'data-conversation', data: { conversationId } },
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: text },
  { type: 'text-end', id: 't' },
  ...extra,
  { type: 'data-stop', data: { stopReason: 'stop' } },
  { type: 'finish' },
];

const storedDetail = (id: string, extra: Record<string, unknown> = {}) => ({
  ...detail,
  id,
  messages: [
    { id: 'u1', role: 'user', content: 'First question', timestamp: '2025-01-01T00:00:00Z' },
    { id: 'a1', role: 'assistant', content: 'First answer', timestamp: '2025-01-01T00:00:01Z' },
    { id: 'u2', role: 'user', content: 'Second question', timestamp: '2025-01-01T00:00:02Z' },
    { id: 'a2', role: 'assistant', content: 'Second answer', timestamp: '2025-01-01T00:00:03Z' },
  ],
  ...extra,
});

describe('ChatView: retry, regenerate, edit', () => {
  it('a first message whose answer fails keeps the message once; Retry regenerates instead of sending it again', async () => {
    const user = userEvent.setup();
    const h = renderChat();
    await user.type(screen.getByTestId('composer-input'), 'My first message{Enter}');
    await finish(lives[0], [{ type: 'start' }, { type: 'data-conversation', data: { conversationId: 'c-new' } }, { type: 'error', errorText: 'The model rejected the request.' }]);
    const alert = await screen.findByTestId('chat-error');
    expect(alert).toHaveTextContent('The model rejected the request.');
    expect(h.onConversationCreated).toHaveBeenCalledWith('c-new');
    expect(screen.getAllByTestId('message-user')).toHaveLength(1);

    await user.click(within(alert).getByTestId('retry-button'));
    expect(chatBodies[1]).toEqual({ agentId: 'analyst', conversationId: 'c-new', regenerate: true, stream: true });
    expect(chatBodies[1]).not.toHaveProperty('message');
    await finish(lives[1], answer('c-new', 'Second time lucky.'));
    await screen.findByText('Second time lucky.');
    expect(screen.getAllByTestId('message-user')).toHaveLength(1);
    expect(screen.getAllByTestId('message-assistant')).toHaveLength(1);
    expect(screen.queryByTestId('chat-error')).toBeNull();
  });

  it('a request the server refused (no turn started) is sent again as it was', async () => {
    chatReply = () => jsonResponse(409, { success: false, error: 'A reply is still running.', code: 'E_CONVERSATION_BUSY' });
    const user = userEvent.setup();
    renderChat({ conversationId: 'conv-9', agentId: null });
    await screen.findByText('Here is the brief.');
    await user.type(screen.getByTestId('composer-input'), 'again{Enter}');
    await screen.findByTestId('chat-error');
    await user.click(screen.getByTestId('retry-button'));
    await waitFor(() => expect(chatBodies).toHaveLength(2));
    expect(chatBodies[1]).toMatchObject({ message: 'again', conversationId: 'conv-9' });
    expect(chatBodies[1]).not.toHaveProperty('regenerate');
  });

  it('after a connection failure before any answer, asks the server whether it stored the message before retrying', async () => {
    details['c-12'] = storedDetail('c-12');
    let failNext = true;
    chatReply = (init) => {
      if (failNext) {
        failNext = false;
        throw new TypeError('Failed to fetch');
      }
      const live = liveBody(init.signal);
      lives.push(live);
      return streamResponse(live);
    };
    const user = userEvent.setup();
    renderChat({ conversationId: 'c-12', agentId: null });
    await screen.findByText('Second answer');
    await user.type(screen.getByTestId('composer-input'), 'Third question{Enter}');
    const alert = await screen.findByTestId('chat-error');
    // The server did store it (the stored conversation ends with it): Retry must not send it again.
    details['c-12'] = { ...storedDetail('c-12'), messages: [...storedDetail('c-12').messages, { id: 'u3', role: 'user', content: 'Third question', timestamp: 't' }] };
    await user.click(within(alert).getByTestId('retry-button'));
    await waitFor(() => expect(chatBodies).toHaveLength(2));
    expect(chatBodies[1]).toEqual({ agentId: 'analyst', conversationId: 'c-12', regenerate: true, stream: true });
    expect(screen.getAllByTestId('message-user')).toHaveLength(3);
  });

  it('shows a stream error as its message with the code apart, whichever way the server words it', async () => {
    const user = userEvent.setup();
    renderChat();
    await user.type(screen.getByTestId('composer-input'), 'x{Enter}');
    await finish(lives[0], [{ type: 'start' }, { type: 'error', errorText: 'E_LLM_UPSTREAM: Rate limited' }]);
    const message = within(await screen.findByTestId('chat-error')).getByTestId('error-message');
    expect(message.firstChild?.textContent).toBe('Rate limited');
    expect(within(message).getByTestId('error-code')).toHaveTextContent('E_LLM_UPSTREAM');
  });

  it('regenerates the last answer: the old one goes and the server answers the stored question again', async () => {
    details['c-2'] = storedDetail('c-2');
    const user = userEvent.setup();
    renderChat({ conversationId: 'c-2', agentId: null });
    await screen.findByText('Second answer');
    // Only the last answer offers it.
    expect(screen.getAllByTestId('regenerate')).toHaveLength(1);
    await user.click(screen.getByTestId('regenerate'));
    expect(chatBodies[0]).toEqual({ agentId: 'analyst', conversationId: 'c-2', regenerate: true, stream: true });
    expect(screen.queryByText('Second answer')).toBeNull();
    await finish(lives[0], answer('c-2', 'A fresh answer'));
    await screen.findByText('A fresh answer');
    expect(screen.getAllByTestId('message-user').map((m) => m.querySelector('.msg-bubble')!.textContent)).toEqual(['First question', 'Second question']);
  });

  it('edits an earlier message: says the later messages go, sends editMessageId, and truncates the view', async () => {
    details['c-3'] = storedDetail('c-3');
    const user = userEvent.setup();
    renderChat({ conversationId: 'c-3', agentId: null });
    await screen.findByText('Second answer');
    await user.click(within(screen.getAllByTestId('message-user')[0]).getByTestId('edit-message'));
    expect(screen.getByTestId('edit-note')).toHaveTextContent('Editing will remove the messages after this one.');
    const box = screen.getByRole('textbox', { name: 'Edit your message' });
    expect(box).toHaveValue('First question');
    expect(box).toHaveAccessibleDescription('Editing will remove the messages after this one.');
    await user.clear(box);
    await user.type(box, 'First question, better{Enter}');
    await waitFor(() => expect(chatBodies).toHaveLength(1));
    expect(chatBodies[0]).toEqual({ agentId: 'analyst', conversationId: 'c-3', editMessageId: 'u1', message: 'First question, better', stream: true });
    expect(screen.queryByText('Second question')).toBeNull();
    expect(screen.queryByText('First answer')).toBeNull();
    await finish(lives[0], answer('c-3', 'Answer to the edit'));
    await screen.findByText('Answer to the edit');
    expect(screen.getAllByTestId('message-user')).toHaveLength(1);
  });

  it('editing a message sent in this view finds its stored id first', async () => {
    const user = userEvent.setup();
    renderChat();
    await user.type(screen.getByTestId('composer-input'), 'hello{Enter}');
    await finish(lives[0], answer('c-4', 'Hi.'));
    details['c-4'] = { ...storedDetail('c-4'), messages: [{ id: 'stored-u1', role: 'user', content: 'hello', timestamp: 't' }, { id: 'stored-a1', role: 'assistant', content: 'Hi.', timestamp: 't' }] };
    await user.click(within(screen.getByTestId('message-user')).getByTestId('edit-message'));
    // The last question with its answer: the answer goes too.
    expect(screen.getByTestId('edit-note')).toBeInTheDocument();
    await user.type(screen.getByRole('textbox', { name: 'Edit your message' }), ' again{Enter}');
    await waitFor(() => expect(chatBodies).toHaveLength(2));
    expect(chatBodies[1]).toMatchObject({ editMessageId: 'stored-u1', message: 'hello again', conversationId: 'c-4' });
  });

  it('Escape cancels an edit and keeps the message', async () => {
    details['c-5'] = storedDetail('c-5');
    const user = userEvent.setup();
    renderChat({ conversationId: 'c-5', agentId: null });
    await screen.findByText('Second answer');
    await user.click(within(screen.getAllByTestId('message-user')[1]).getByTestId('edit-message'));
    await user.keyboard('{Escape}');
    expect(screen.queryByTestId('edit-form')).toBeNull();
    expect(screen.getByText('Second question')).toBeInTheDocument();
    expect(chatBodies).toHaveLength(0);
  });
});

describe('ChatView: what a reload shows', () => {
  it.each([
    ['failed', { status: 'failed', lastTurn: { status: 'failed', error: { code: 'E_LLM_UPSTREAM', message: 'Rate limited by the provider' }, at: 't' } }],
    ['stopped', { status: 'idle', lastTurn: { status: 'stopped', at: 't' } }],
    ['interrupted', { status: 'interrupted', lastTurn: { status: 'interrupted', at: 't' } }],
    ['interrupted (older server)', { status: 'interrupted' }],
  ])('%s', async (kind, extra) => {
    details['c-6'] = storedDetail('c-6', extra);
    renderChat({ conversationId: 'c-6', agentId: null });
    await screen.findByText('Second answer');
    if (kind === 'failed') {
      const error = screen.getByTestId('chat-error');
      expect(within(error).getByTestId('error-message').firstChild?.textContent).toBe('Rate limited by the provider');
      expect(within(error).getByTestId('error-code')).toHaveTextContent('E_LLM_UPSTREAM');
      expect(screen.queryByTestId('interrupted-notice')).toBeNull();
      await userEvent.setup().click(within(error).getByTestId('retry-button'));
      expect(chatBodies[0]).toEqual({ agentId: 'analyst', conversationId: 'c-6', regenerate: true, stream: true });
    } else if (kind === 'stopped') {
      expect(screen.getByTestId('stopped-notice')).toHaveTextContent('Stopped.');
      expect(screen.queryByTestId('interrupted-notice')).toBeNull();
      expect(screen.queryByTestId('chat-error')).toBeNull();
    } else {
      expect(screen.getByTestId('interrupted-notice')).toHaveTextContent('the server stopped');
      expect(screen.queryByTestId('stopped-notice')).toBeNull();
    }
  });
});

/** A model profile as GET /api/models lists one. */
const profile = (name: string, model: string, configured = true): ModelProfileView => ({ name, model, contextWindow: 128000, maxOutputTokens: 4096, configured, default: false });

describe('ChatView: usage, models, status', () => {
  it('shows the answer\'s token usage and the model that answered, discreetly', async () => {
    const user = userEvent.setup();
    renderChat();
    await user.type(screen.getByTestId('composer-input'), 'hi{Enter}');
    await finish(lives[0], answer('c-7', 'Hello.', [{ type: 'data-usage', data: { promptTokens: 1200, completionTokens: 34, model: { profile: 'fast', model: 'gpt-4o-mini' } } }]));
    expect(await screen.findByTestId('answer-tokens')).toHaveTextContent('1,234 tokens');
    expect(screen.getByTestId('answer-model')).toHaveTextContent('fast');
  });

  it('reads usage and model per answer from a stored conversation, summing its model calls', async () => {
    details['c-8'] = {
      ...detail,
      id: 'c-8',
      messages: [
        { id: 'u1', role: 'user', content: 'q', timestamp: 't' },
        { id: 'a1', role: 'assistant', content: '', timestamp: 't', functionCalls: [{ id: 'x', name: 'list_files', arguments: {}, result: { ok: true, entries: [] } }], usage: { promptTokens: 1000, completionTokens: 10 }, profile: 'deep', model: 'o3', cost: 0.01 },
        { id: 'a2', role: 'assistant', content: 'Done.', timestamp: 't', usage: { promptTokens: 1100, completionTokens: 90 }, profile: 'deep', model: 'o3', cost: 0.012 },
      ],
    };
    renderChat({ conversationId: 'c-8', agentId: null });
    expect(await screen.findByTestId('answer-tokens')).toHaveTextContent('2,200 tokens');
    expect(screen.getByTestId('answer-model')).toHaveTextContent('deep');
    expect(screen.getByTestId('answer-cost')).toHaveTextContent('cost 0.02');
    expect(screen.getAllByTestId('answer-meta')[0]).toHaveAttribute('title', expect.stringContaining('o3'));
    expect(screen.getAllByTestId('message-assistant')).toHaveLength(1);
  });

  it('hides the model picker with one profile; with more, the choice goes with each message and the conversation remembers it', async () => {
    const user = userEvent.setup();
    const { unmount } = render(<ChatView conversationId={null} agentId="analyst" agents={[agent]} models={[profile('default', 'm1')]} onConversationCreated={jest.fn()} onDetailLoaded={jest.fn()} onOutputsChanged={jest.fn()} onTurnEnd={jest.fn()} onNewConversation={jest.fn()} />);
    expect(screen.queryByTestId('model-picker')).toBeNull();
    unmount();

    details['c-9'] = storedDetail('c-9', { model: 'deep' });
    const models = [
      profile('fast', 'gpt-4o-mini'),
      profile('deep', 'o3'),
      profile('local', 'qwen', false),
    ];
    renderChat({ conversationId: 'c-9', agentId: null, models });
    await screen.findByText('Second answer');
    const select = screen.getByRole('combobox', { name: 'Model' });
    expect(select).toHaveValue('deep');
    expect(screen.getByRole('option', { name: /local .*not configured/ })).toBeDisabled();
    await user.selectOptions(select, 'fast');
    expect(patches).toEqual([{ url: '/api/conversations/c-9', body: { model: 'fast' } }]);
    await user.type(screen.getByTestId('composer-input'), 'quick one{Enter}');
    expect(chatBodies[0]).toMatchObject({ message: 'quick one', model: 'fast' });
    await finish(lives[0], answer('c-9', 'Quick.'));
    // Automatic gives the choice back to the server's routes: the conversation forgets its model.
    await user.selectOptions(select, '');
    expect(patches.at(-1)).toEqual({ url: '/api/conversations/c-9', body: { model: null } });
    await user.type(screen.getByTestId('composer-input'), 'and now{Enter}');
    expect(chatBodies[1]).toMatchObject({ message: 'and now' });
    expect(chatBodies[1]).not.toHaveProperty('model');
  });

  it('keeps status messages for screen readers: no lasting visible line after the answer', async () => {
    const user = userEvent.setup();
    renderChat();
    await user.type(screen.getByTestId('composer-input'), 'hi{Enter}');
    await finish(lives[0], answer('c-10', 'Hello.'));
    const status = screen.getByRole('status');
    expect(status).toHaveClass('visually-hidden');
    expect(status).toHaveTextContent('Answer complete.');
    expect(screen.queryByText('Assistant finished responding.')).toBeNull();
  });

  it('after the first message the command cards give way to the compact chips', async () => {
    const user = userEvent.setup();
    renderChat();
    expect(screen.getByTestId('command-cards')).toBeInTheDocument();
    await user.type(screen.getByTestId('composer-input'), 'hi{Enter}');
    expect(screen.queryByTestId('command-cards')).toBeNull();
    expect(screen.getAllByTestId('command-chip')).toHaveLength(2);
  });

  it('opens a written file from its tool card', async () => {
    const user = userEvent.setup();
    const onOpenFile = jest.fn();
    renderChat({ onOpenFile, canOpenFile: (p: string) => p.startsWith('{output_folder}/') });
    await user.type(screen.getByTestId('composer-input'), 'write{Enter}');
    await finish(lives[0], [
      { type: 'start' },
      { type: 'data-conversation', data: { conversationId: 'c-11' } },
      { type: 'tool-input-available', toolCallId: 'w', toolName: 'save_output', input: { file_path: '{output_folder}/brief.md' } },
      { type: 'tool-output-available', toolCallId: 'w', output: { ok: true, path: '{output_folder}/brief.md', bytes_written: 3 } },
      { type: 'finish' },
    ]);
    await user.click(await screen.findByRole('button', { name: 'Open brief.md' }));
    expect(onOpenFile).toHaveBeenCalledWith('{output_folder}/brief.md');
  });
});

describe('ChatView: commands known to be broken, and costs', () => {
  const broken: AgentSummary = {
    ...agent,
    commands: [
      { cmd: '*plan', description: 'Create a product brief', problem: 'The skill bmad-plan is not installed in this project, so this command cannot run.' },
      { cmd: '*help', description: 'Show the menu' },
    ],
  };

  it('marks the broken command on its card and explains it when picked or typed, sending nothing', async () => {
    const user = userEvent.setup();
    renderChat({ agents: [broken] });
    const [plan, help] = screen.getAllByTestId('command-card');
    expect(plan).toHaveAttribute('data-broken', 'true');
    expect(plan).toHaveTextContent('cannot run');
    expect(help).not.toHaveAttribute('data-broken');
    await user.click(plan);
    expect(screen.getByTestId('broken-command')).toHaveTextContent('*plan cannot run: The skill bmad-plan is not installed');
    await user.type(screen.getByTestId('composer-input'), '*plan for my shop{Enter}');
    expect(chatBodies).toEqual([]);
    await user.click(help);
    expect(chatBodies).toEqual([{ agentId: 'analyst', message: '*help', stream: true }]);
    expect(screen.queryByTestId('broken-command')).toBeNull();
  });

  it('offers a command the doctor only suspects, with its problem shown, and sends it', async () => {
    const user = userEvent.setup();
    const suspect: AgentSummary = {
      ...agent,
      commands: [
        {
          cmd: '*CP',
          description: 'Create PRD',
          problem: 'May not work: the frontmatter is not valid YAML (step-07.md). Fix the file, or run BMAD’s installer on the project again.',
          problemSeverity: 'warning',
        },
      ],
    };
    renderChat({ agents: [suspect] });
    const [cp] = screen.getAllByTestId('command-card');
    expect(cp).not.toHaveAttribute('data-broken');
    expect(cp).toHaveAttribute('data-warning', 'true');
    expect(cp).toHaveTextContent('may not work');
    expect(cp).not.toHaveTextContent('cannot run');
    await user.click(cp);
    expect(screen.queryByTestId('broken-command')).toBeNull();
    expect(chatBodies).toEqual([{ agentId: 'analyst', message: '*CP', stream: true }]);
  });

  it("shows each stored answer's cost and the conversation's total after a reload", async () => {
    details['conv-costs'] = {
      ...detail,
      id: 'conv-costs',
      messages: [
        detail.messages[0],
        { ...detail.messages[1], usage: { promptTokens: 10, completionTokens: 2, cachedTokens: 0, cost: 0.25 } },
        { id: 'u2', role: 'user', content: 'more', timestamp: '2025-01-01T00:00:02Z' },
        { id: 'a2', role: 'assistant', content: 'More.', timestamp: '2025-01-01T00:00:03Z', usage: { promptTokens: 10, completionTokens: 2, cachedTokens: 0, cost: 0.5 } },
      ],
    };
    renderChat({ conversationId: 'conv-costs' });
    await waitFor(() => expect(screen.getAllByTestId('answer-cost')).toHaveLength(2));
    expect(screen.getAllByTestId('answer-cost').map((e) => e.textContent)).toEqual([' · cost 0.25', ' · cost 0.50']);
    expect(screen.getByTestId('conversation-cost')).toHaveTextContent('Conversation cost 0.75');
  });
});
