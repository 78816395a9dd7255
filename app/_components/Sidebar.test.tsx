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
