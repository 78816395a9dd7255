import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ConversationSummaryView } from '@/types/api';
import { Sidebar } from './Sidebar';

const conv = (id: string, title: string): ConversationSummaryView => ({
  id,
  agentId: 'analyst',
  bundleName: 'bmm',
  title,
  createdAt: new Date().toISOString(),
  updatedAt: new Date().toISOString(),
  status: 'idle',
  messageCount: 2,
});

let calls: Array<{ url: string; init?: RequestInit }>;

beforeEach(() => {
  calls = [];
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init?: RequestInit) => {
    calls.push({ url, init });
    const json = (body: unknown) => ({ ok: true, status: 200, json: async () => body });
    if (url.startsWith('/api/conversations?')) return json({ success: true, data: { items: [conv('a', 'First'), conv('b', 'Second')] } });
    if (init?.method === 'PATCH') return json({ success: true, data: { ...conv('a', JSON.parse(String(init.body)).title) } });
    if (init?.method === 'DELETE') return json({ success: true, data: { id: 'b', deleted: true } });
    return { ok: false, status: 404, json: async () => ({ success: false, error: 'nope', code: 'E_X' }) };
  });
});

function setup() {
  const props = { onSelect: jest.fn(), onNew: jest.fn(), onDeleted: jest.fn() };
  render(<Sidebar currentId="a" agents={[]} refreshKey={0} {...props} />);
  return props;
}

describe('Sidebar', () => {
  it('lists conversations, marks the current one and switches on click', async () => {
    const user = userEvent.setup();
    const p = setup();
    const items = await screen.findAllByTestId('conversation-item');
    expect(items).toHaveLength(2);
    expect(within(items[0]).getByRole('button', { name: /^First/ })).toHaveAttribute('aria-current', 'page');
    await user.click(within(items[1]).getByRole('button', { name: /^Second/ }));
    expect(p.onSelect).toHaveBeenCalledWith('b');
    await user.click(screen.getByTestId('new-conversation'));
    expect(p.onNew).toHaveBeenCalled();
  });

  it('renames inline with Enter and cancels with Escape', async () => {
    const user = userEvent.setup();
    setup();
    await screen.findAllByTestId('conversation-item');
    await user.click(screen.getByRole('button', { name: 'Rename “First”' }));
    const input = screen.getByRole('textbox', { name: 'Conversation title' });
    expect(input).toHaveFocus();
    await user.clear(input);
    await user.type(input, 'Launch plan{Enter}');
    await waitFor(() => expect(screen.getAllByTestId('conversation-item')[0]).toHaveTextContent('Launch plan'));
    const patch = calls.find((c) => c.init?.method === 'PATCH')!;
    expect(patch.url).toBe('/api/conversations/a');
    expect(JSON.parse(String(patch.init!.body))).toEqual({ title: 'Launch plan' });

    await user.click(screen.getByRole('button', { name: 'Rename “Second”' }));
    await user.type(screen.getByRole('textbox', { name: 'Conversation title' }), ' changed{Escape}');
    expect(screen.getAllByTestId('conversation-item')[1]).toHaveTextContent('Second');
    expect(calls.filter((c) => c.init?.method === 'PATCH')).toHaveLength(1);
  });

  it('deletes only after confirming in a dialog', async () => {
    const user = userEvent.setup();
    const p = setup();
    await screen.findAllByTestId('conversation-item');
    await user.click(screen.getByRole('button', { name: 'Delete “Second”' }));
    const dialog = screen.getByRole('alertdialog', { name: 'Delete conversation?' });
    expect(within(dialog).getByRole('button', { name: 'Cancel' })).toHaveFocus();
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(calls.some((c) => c.init?.method === 'DELETE')).toBe(false);

    await user.click(screen.getByRole('button', { name: 'Delete “Second”' }));
    await user.click(screen.getByTestId('confirm-button'));
    await waitFor(() => expect(screen.getAllByTestId('conversation-item')).toHaveLength(1));
    expect(calls.find((c) => c.init?.method === 'DELETE')!.url).toBe('/api/conversations/b');
    expect(p.onDeleted).toHaveBeenCalledWith('b');
  });
});

describe('Sidebar: status, search, date groups', () => {
  const day = 86_400_000;
  const at = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();
  let lists: Array<Array<Omit<ConversationSummaryView, 'status'> & { status: string }>>;

  beforeEach(() => {
    lists = [];
    (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string) => {
      calls.push({ url });
      const q = new URLSearchParams(url.split('?')[1] ?? '');
      const items = lists.length > 1 ? lists.shift()! : lists[0];
      const filtered = q.get('q') ? items.filter((c) => c.title.toLowerCase().includes(q.get('q')!.toLowerCase())) : items;
      return { ok: true, status: 200, json: async () => ({ success: true, data: { items: filtered } }) };
    });
  });

  it('asks again while a conversation says it is running, until it no longer does', async () => {
    lists = [[{ ...conv('a', 'Stopped one'), status: 'running' }], [{ ...conv('a', 'Stopped one'), status: 'running' }], [{ ...conv('a', 'Stopped one'), status: 'stopped' }]];
    render(<Sidebar currentId="a" agents={[]} refreshKey={1} onSelect={jest.fn()} onNew={jest.fn()} onDeleted={jest.fn()} pollMs={20} />);
    const item = await screen.findByTestId('conversation-item');
    expect(item).toHaveTextContent('running');
    await waitFor(() => expect(screen.getByTestId('conversation-item')).toHaveAttribute('data-status', 'stopped'));
    expect(screen.getByTestId('conversation-item')).not.toHaveTextContent('running');
    const asked = calls.length;
    await new Promise((r) => setTimeout(r, 100));
    // Nothing runs any more: no more polling.
    expect(calls.length).toBe(asked);
  });

  it('groups conversations under Today, Yesterday, Previous 7 days, Previous 30 days and Older', async () => {
    const now = new Date();
    const midday = (daysAgo: number) => new Date(now.getFullYear(), now.getMonth(), now.getDate() - daysAgo, 12).toISOString();
    lists = [[
      { ...conv('t', 'Today talk'), updatedAt: at(0) },
      { ...conv('y', 'Yesterday talk'), updatedAt: midday(1) },
      { ...conv('w', 'Week talk'), updatedAt: midday(4) },
      { ...conv('m', 'Month talk'), updatedAt: midday(20) },
      { ...conv('o', 'Old talk'), updatedAt: at(90 * day) },
    ]];
    render(<Sidebar currentId={null} agents={[]} refreshKey={0} onSelect={jest.fn()} onNew={jest.fn()} onDeleted={jest.fn()} />);
    await screen.findAllByTestId('conversation-item');
    const groups = screen.getAllByTestId('conversation-group');
    expect(groups.map((g) => within(g).getByRole('heading').textContent)).toEqual(['Today', 'Yesterday', 'Previous 7 days', 'Previous 30 days', 'Older']);
    expect(groups.map((g) => within(g).getAllByTestId('conversation-item').length)).toEqual([1, 1, 1, 1, 1]);
  });

  it('searches with ?q= as the person types, and says when nothing matches', async () => {
    const user = userEvent.setup();
    lists = [[conv('a', 'Zebra plan'), conv('b', 'Lion plan')]];
    render(<Sidebar currentId={null} agents={[]} refreshKey={0} projectId="acme" onSelect={jest.fn()} onNew={jest.fn()} onDeleted={jest.fn()} />);
    await screen.findAllByTestId('conversation-item');
    await user.type(screen.getByRole('searchbox', { name: 'Search conversations' }), 'zebra');
    await waitFor(() => expect(screen.getAllByTestId('conversation-item')).toHaveLength(1));
    expect(screen.getByTestId('conversation-item')).toHaveTextContent('Zebra plan');
    const last = new URLSearchParams(calls.at(-1)!.url.split('?')[1]);
    expect(last.get('q')).toBe('zebra');
    expect(last.get('projectId')).toBe('acme');
    await user.clear(screen.getByRole('searchbox'));
    await user.type(screen.getByRole('searchbox'), 'tiger');
    expect(await screen.findByTestId('sidebar-empty')).toHaveTextContent('No conversations match “tiger”.');
  });

  it('shows the agent as a letter where its icon cannot be drawn, and the full title on hover', async () => {
    lists = [[conv('a', 'A title that is much longer than nineteen characters')]];
    render(<Sidebar currentId={null} agents={[{ id: 'analyst', name: 'Mary', title: 'Analyst', icon: '📊', bundleName: 'bmm', commands: [] }]} refreshKey={0} onSelect={jest.fn()} onNew={jest.fn()} onDeleted={jest.fn()} />);
    const item = await screen.findByTestId('conversation-item');
    expect(within(item).getByTestId('avatar')).toHaveTextContent(/^M$/);
    expect(within(item).getByRole('button', { name: /^A title that is much longer/ })).toHaveAttribute('title', 'A title that is much longer than nineteen characters');
  });
});
