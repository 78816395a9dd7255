import { TextDecoder as NodeTextDecoder, TextEncoder as NodeTextEncoder } from 'util';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary, ConversationDetail, ConversationSummaryView } from '@/types/api';
import { AuthGate } from './AuthGate';
import { ChatView } from './ChatView';
import { Sidebar } from './Sidebar';

Object.assign(globalThis, { TextDecoder: NodeTextDecoder, TextEncoder: NodeTextEncoder });

/**
 * Read-only sharing as the screens show it, with accounts on: a reader of someone else's
 * conversation gets the read-only line and "Continue in a copy" instead of the composer, Edit and
 * Regenerate; messages are labelled by author; the list names the owner of what is not one's own
 * and offers Rename and Delete only on one's own.
 */
const agent: AgentSummary = { id: 'pm', name: 'John', title: 'Product Manager', icon: '🧭', bundleName: 'shop', projectId: 'shop', commands: [{ cmd: '*prd', description: 'Write the PRD' }] };
const ada = { id: 'u-ada', name: 'Ada' };
const bob = { id: 'u-bob', name: 'Bob' };

const conversation = (over: Partial<ConversationDetail>): ConversationDetail => ({
  id: 'c-1',
  agentId: 'pm',
  bundleName: 'shop',
  projectId: 'shop',
  title: 'Plant shop PRD',
  createdAt: '2026-01-01T00:00:00Z',
  updatedAt: '2026-01-01T00:00:00Z',
  status: 'idle',
  messageCount: 2,
  ownerId: ada.id,
  owner: ada,
  usage: { promptTokens: 1, completionTokens: 1, cachedTokens: 0 },
  messages: [
    { id: 'm1', role: 'user', content: 'Draft the PRD', timestamp: '2026-01-01T00:00:00Z', author: ada },
    { id: 'm2', role: 'assistant', content: 'Here is the draft.', timestamp: '2026-01-01T00:00:01Z', functionCalls: [], parts: [{ type: 'text', text: 'Here is the draft.' }] },
  ],
  ...over,
});

const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });
const ok = (data: unknown, status = 200) => json(status, { success: true, data });

let me: { id: string; name: string; role: 'admin' | 'member' };
let details: Record<string, ConversationDetail>;
let list: ConversationSummaryView[];
let copyAnswer: () => unknown;
let calls: Array<{ url: string; method: string }>;

beforeEach(() => {
  me = { ...bob, role: 'member' };
  details = {};
  list = [];
  calls = [];
  copyAnswer = () => ok({ id: 'c-2' }, 201);
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    calls.push({ url, method });
    if (url === '/api/auth/setup') return ok({ auth: true, needsSetup: false, sso: null, signUp: false });
    if (url === '/api/users/me') return ok({ ...me, kind: 'session', email: `${me.name.toLowerCase()}@example.com`, accounts: true });
    if (url.startsWith('/api/conversations?')) return ok({ items: list });
    const copy = /^\/api\/conversations\/([^/]+)\/copy$/.exec(url);
    if (copy && method === 'POST') return copyAnswer();
    const one = /^\/api\/conversations\/([^/?]+)$/.exec(url);
    if (one && details[one[1]!]) return ok(details[one[1]!]);
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
  Element.prototype.scrollTo = jest.fn();
});

function openChat(id = 'c-1') {
  const handlers = { onConversationCreated: jest.fn(), onDetailLoaded: jest.fn(), onOutputsChanged: jest.fn(), onTurnEnd: jest.fn(), onNewConversation: jest.fn(), onOpenConversation: jest.fn() };
  render(
    <AuthGate>
      <ChatView conversationId={id} agentId={null} projectId="shop" agents={[agent]} helpCommand="*bmad-help" {...handlers} />
    </AuthGate>,
  );
  return handlers;
}

describe('a conversation one may read but not write in', () => {
  it('shows "Shared by Ada · read-only" instead of the composer, with no Edit or Regenerate, and continues in a copy', async () => {
    details['c-1'] = conversation({ shared: true, canWrite: false });
    const h = openChat();
    expect(await screen.findByTestId('read-only-line')).toHaveTextContent('Shared by Ada · read-only');
    expect(screen.queryByTestId('composer-input')).toBeNull();
    expect(screen.queryByTestId('edit-message')).toBeNull();
    expect(screen.queryByTestId('regenerate')).toBeNull();
    expect(screen.queryByTestId('what-next')).toBeNull();
    // Ada's words are hers, named as such.
    expect(within(screen.getByTestId('message-user')).getByTestId('message-author')).toHaveTextContent('Ada said:');

    await userEvent.click(screen.getByTestId('continue-in-copy'));
    await waitFor(() => expect(h.onOpenConversation).toHaveBeenCalledWith('c-2'));
    expect(calls).toContainEqual({ url: '/api/conversations/c-1/copy', method: 'POST' });
  });

  it('marks an owner and an author who were deactivated or removed', async () => {
    const gone = { ...ada, status: 'removed' as const };
    details['c-1'] = conversation({ shared: true, canWrite: false, owner: gone, messages: [{ id: 'm1', role: 'user', content: 'Draft the PRD', timestamp: '2026-01-01T00:00:00Z', author: gone }] });
    openChat();
    expect(await screen.findByTestId('read-only-line')).toHaveTextContent('Shared by Ada (removed) · read-only');
    expect(within(screen.getByTestId('message-user')).getByTestId('message-author')).toHaveTextContent('Ada (removed) said:');
  });

  it('shows no composer while the detail loads, and tells an owner demoted to viewer why they cannot write, with no copy', async () => {
    me = { ...ada, role: 'member' };
    details['c-1'] = conversation({ canWrite: false });
    openChat();
    expect(screen.queryByTestId('composer-input')).toBeNull();
    expect(await screen.findByTestId('read-only-line')).toHaveTextContent(/Your conversation · read-only: your role in this project no longer lets you chat/);
    expect(screen.queryByTestId('continue-in-copy')).toBeNull();
    expect(screen.queryByTestId('composer-input')).toBeNull();
  });

  it("names an admin's look at a private conversation, and says why a copy was refused", async () => {
    me = { id: 'u-root', name: 'Root', role: 'admin' };
    details['c-1'] = conversation({ canWrite: false });
    copyAnswer = () => json(403, { success: false, error: 'Your role in project "shop" (viewer) does not allow this.', code: 'E_FORBIDDEN' });
    const h = openChat();
    expect(await screen.findByTestId('read-only-line')).toHaveTextContent('Ada’s private conversation · read-only');
    await userEvent.click(screen.getByTestId('continue-in-copy'));
    expect(await screen.findByRole('alert')).toHaveTextContent('does not allow this');
    expect(h.onOpenConversation).not.toHaveBeenCalled();
  });

  it("in one's own copy: the composer is back, one's words say You and the others' name their author", async () => {
    details['c-2'] = conversation({
      id: 'c-2',
      ownerId: bob.id,
      owner: bob,
      canWrite: true,
      messages: [
        { id: 'm1', role: 'user', content: 'Draft the PRD', timestamp: '2026-01-01T00:00:00Z', author: ada },
        { id: 'm2', role: 'assistant', content: 'Here is the draft.', timestamp: '2026-01-01T00:00:01Z' },
        { id: 'm3', role: 'user', content: 'Add a pricing section', timestamp: '2026-01-01T00:00:02Z', author: bob },
        { id: 'm4', role: 'assistant', content: 'Added.', timestamp: '2026-01-01T00:00:03Z' },
      ],
    });
    openChat('c-2');
    await screen.findAllByTestId('message-user');
    expect(screen.getByTestId('composer-input')).toBeTruthy();
    expect(screen.queryByTestId('read-only-line')).toBeNull();
    const users = screen.getAllByTestId('message-user');
    expect(users.map((m) => within(m).getByTestId('message-author').textContent)).toEqual(['Ada said:', 'You said:']);
    expect(screen.getAllByTestId('edit-message')).toHaveLength(2);
  });

  it('in a conversation of only one’s own words, nothing extra is shown', async () => {
    me = { ...ada, role: 'member' };
    details['c-1'] = conversation({ canWrite: true });
    openChat();
    await screen.findByTestId('message-user');
    expect(screen.getByTestId('composer-input')).toBeTruthy();
    expect(screen.queryByTestId('message-author')).toBeNull();
    expect(screen.getByTestId('message-user')).toHaveTextContent('You said:');
  });
});

describe('the conversation list', () => {
  const summary = (id: string, title: string, owner: { id: string; name: string }, canWrite: boolean): ConversationSummaryView => ({
    id,
    agentId: 'pm',
    bundleName: 'shop',
    projectId: 'shop',
    title,
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    status: 'idle',
    messageCount: 2,
    ownerId: owner.id,
    owner,
    canWrite,
  });

  it("names the owner of what is not one's own and offers Rename and Delete only on one's own", async () => {
    list = [summary('c-1', 'Ada’s PRD', ada, false), summary('c-2', 'My copy', bob, true)];
    render(
      <AuthGate>
        <Sidebar currentId={null} projectId="shop" agents={[agent]} refreshKey={0} onSelect={jest.fn()} onNew={jest.fn()} onDeleted={jest.fn()} />
      </AuthGate>,
    );
    const items = await screen.findAllByTestId('conversation-item');
    expect(within(items[0]!).getByTestId('conversation-owner')).toHaveTextContent('Ada’s');
    expect(within(items[0]!).queryByTestId('rename-conversation')).toBeNull();
    expect(within(items[0]!).queryByTestId('delete-conversation')).toBeNull();
    expect(within(items[1]!).queryByTestId('conversation-owner')).toBeNull();
    expect(within(items[1]!).getByTestId('rename-conversation')).toBeTruthy();
    expect(within(items[1]!).getByTestId('delete-conversation')).toBeTruthy();
  });

  it('marks the owner of a conversation who was deactivated', async () => {
    list = [summary('c-1', 'Ada’s PRD', { ...ada, status: 'deactivated' } as typeof ada, false)];
    render(
      <AuthGate>
        <Sidebar currentId={null} projectId="shop" agents={[agent]} refreshKey={0} onSelect={jest.fn()} onNew={jest.fn()} onDeleted={jest.fn()} />
      </AuthGate>,
    );
    const [item] = await screen.findAllByTestId('conversation-item');
    expect(within(item!).getByTestId('conversation-owner')).toHaveTextContent('Ada (deactivated)’s');
  });
});
