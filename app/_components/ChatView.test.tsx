import { TextDecoder as NodeTextDecoder, TextEncoder as NodeTextEncoder } from 'util';
import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary, ConversationDetail } from '@/types/api';
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

beforeEach(() => {
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
    if (url.startsWith('/api/conversations/conv-9')) return jsonResponse(200, { success: true, data: detail });
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
  usage: { promptTokens: 1, completionTokens: 1 },
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
