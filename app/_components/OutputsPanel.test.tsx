import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { OutputFileEntry } from '@/types/api';
import { OutputsPanel } from './OutputsPanel';

const files: OutputFileEntry[] = [
  { path: 'brief.md', name: 'brief.md', type: 'file', size: 20, modifiedAt: '2025-01-01T00:00:00Z' },
  {
    path: 'notes',
    name: 'notes',
    type: 'directory',
    modifiedAt: '2025-01-01T00:00:00Z',
    children: [{ path: 'notes/data.json', name: 'data.json', type: 'file', size: 9, modifiedAt: '2025-01-01T00:00:00Z' }],
  },
];

let listCalls = 0;
beforeEach(() => {
  listCalls = 0;
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string) => {
    if (url === '/api/conversations/c1/files') {
      listCalls++;
      return { ok: true, status: 200, json: async () => ({ success: true, data: { files } }) };
    }
    const type = url.endsWith('.md') ? 'text/markdown; charset=utf-8' : 'application/json';
    const text = url.endsWith('.md') ? '# Brief\n\n| k | v |\n|---|---|\n| a | 1 |' : '{"a": 1}';
    return { ok: true, status: 200, headers: { get: () => type }, text: async () => text };
  });
});

describe('OutputsPanel', () => {
  it('lists the tree, refetches when the version changes, and reports the count', async () => {
    const onCount = jest.fn();
    const { rerender } = render(<OutputsPanel conversationId="c1" version={0} onCount={onCount} />);
    const items = await screen.findAllByTestId('output-file');
    expect(items.map((i) => i.getAttribute('data-path'))).toEqual(['brief.md', 'notes/data.json']);
    expect(onCount).toHaveBeenLastCalledWith(2);
    expect(screen.getByRole('link', { name: 'Download brief.md' })).toHaveAttribute('href', '/api/conversations/c1/files/brief.md?download=1');
    rerender(<OutputsPanel conversationId="c1" version={1} onCount={onCount} />);
    await waitFor(() => expect(listCalls).toBe(2));
  });

  it('opens markdown rendered and other text as pre, with a download link', async () => {
    const user = userEvent.setup();
    render(<OutputsPanel conversationId="c1" version={0} />);
    await user.click((await screen.findAllByTestId('output-file'))[0]);
    const viewer = await screen.findByTestId('document-panel');
    expect(await screen.findByRole('heading', { name: 'Brief' })).toBeInTheDocument();
    expect(screen.getByRole('table')).toBeInTheDocument();
    expect(screen.getByTestId('document-download')).toHaveAttribute('href', '/api/conversations/c1/files/brief.md?download=1');
    await user.keyboard('{Escape}');
    expect(viewer).not.toBeInTheDocument();

    await user.click(screen.getAllByTestId('output-file')[1]);
    await waitFor(() => expect(screen.getByTestId('document-content').querySelector('pre')).toHaveTextContent('{"a": 1}'));
    expect(screen.getByTestId('document-download')).toHaveAttribute('href', '/api/conversations/c1/files/notes/data.json?download=1');
  });
});
