import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary } from '@/types/api';
import { ConflictError } from '../_lib/api';
import { DocumentPanel } from './DocumentPanel';
import { changedByText, composeMerge, mergeParts } from './DocumentEditor';
import { TextDecoder as NodeTextDecoder, TextEncoder as NodeTextEncoder } from 'node:util';

// jsdom has no TextEncoder/TextDecoder; the browser's editor decodes the raw bytes with them.
Object.assign(globalThis, { TextEncoder: globalThis.TextEncoder ?? NodeTextEncoder, TextDecoder: globalThis.TextDecoder ?? NodeTextDecoder });

const agents: AgentSummary[] = [{ id: 'pm', name: 'John', title: 'Product Manager', bundleName: 'Acme', projectId: 'acme', commands: [] }];
const URL_ = '/api/projects/acme/files/planning/brief.md';

let current: string;
const doc = (body: string) => {
  const bytes = new TextEncoder().encode(body);
  return {
    ok: true,
    status: 200,
    headers: { get: (h: string) => (h.toLowerCase() === 'content-type' ? 'text/markdown; charset=utf-8' : h.toLowerCase() === 'x-content-sha256' ? `sha-of-${body.length}` : null) },
    text: async () => body,
    arrayBuffer: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
  };
};
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });

beforeEach(() => {
  current = '# Brief\n\nPlants, weekly.\n';
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string) => {
    if (url === URL_) return doc(current);
    if (url === `${URL_}?versions`) return json(200, { success: true, data: { path: 'planning/brief.md', versions: [
      { version: 'bbb', at: '2025-03-01T10:00:00Z', agentId: 'pm', conversationId: 'c-1', size: 20, kind: 'write' },
      { version: 'aaa', at: '2025-03-01T09:00:00Z', agentId: 'pm', conversationId: 'c-1', size: 10, kind: 'write' },
    ] } });
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

const history = { projectId: 'acme', conversationId: null, agents };

function renderViewer(props: Partial<React.ComponentProps<typeof DocumentPanel>> = {}) {
  const onClose = jest.fn();
  render(<DocumentPanel path="planning/brief.md" url={URL_} downloadUrl={`${URL_}?download=1`} version={0} docked history={history} onClose={onClose} {...props} />);
  return { onClose };
}

describe('the one document viewer', () => {
  it('gives an editor the document, its History with Restore, and Edit', async () => {
    const user = userEvent.setup();
    renderViewer({ onSave: jest.fn(async () => undefined) });
    const panel = screen.getByTestId('document-panel');
    expect(await within(panel).findByRole('heading', { name: 'Brief' })).toBeInTheDocument();
    expect(within(panel).getByTestId('document-edit')).toBeInTheDocument();
    await user.click(within(panel).getByRole('tab', { name: 'History' }));
    await waitFor(() => expect(within(panel).getAllByTestId('version-item')).toHaveLength(2));
    expect(within(panel).getByRole('button', { name: 'Restore version 1' })).toBeInTheDocument();
  });

  it('gives a viewer the document and its History, with no Edit and no Restore', async () => {
    const user = userEvent.setup();
    renderViewer();
    const panel = screen.getByTestId('document-panel');
    expect(await within(panel).findByRole('heading', { name: 'Brief' })).toBeInTheDocument();
    expect(within(panel).queryByTestId('document-edit')).toBeNull();
    await user.click(within(panel).getByRole('tab', { name: 'History' }));
    await waitFor(() => expect(within(panel).getAllByTestId('version-item')).toHaveLength(2));
    expect(within(panel).getByRole('button', { name: 'Diff version 1 against the current file' })).toBeInTheDocument();
    expect(within(panel).queryByRole('button', { name: /^Restore/ })).toBeNull();
  });

  it('a conversation’s file without versions has no History tab', async () => {
    renderViewer({ history: undefined, docked: false });
    const dialog = screen.getByRole('dialog', { name: 'planning/brief.md' });
    expect(await within(dialog).findByRole('heading', { name: 'Brief' })).toBeInTheDocument();
    expect(within(dialog).queryByRole('tab')).toBeNull();
  });

  it('on a save conflict names who changed it and when, and keeps the draft beside their version to take lines from', async () => {
    const user = userEvent.setup();
    const at = new Date(Date.now() - 120_000).toISOString();
    const onSave = jest.fn(async (_text: string, sha: string | undefined) => {
      if (sha !== `sha-of-${current.length}`) throw new ConflictError('changed', `sha-of-${current.length}`, { at, person: 'Grace', agentId: null });
    });
    renderViewer({ onSave });
    const panel = screen.getByTestId('document-panel');
    await within(panel).findByRole('heading', { name: 'Brief' });
    await user.click(within(panel).getByTestId('document-edit'));
    const source = await within(panel).findByTestId('document-source');
    await waitFor(() => expect(source).toHaveValue(current));
    await user.clear(source);
    await user.type(source, '# Brief{Enter}{Enter}Plants, weekly.{Enter}Mine: in recycled pots.{Enter}');
    const mine = (source as HTMLTextAreaElement).value;
    current = '# Brief\n\nPlants, weekly.\nTheirs: delivered by bike.\n';
    await user.click(within(panel).getByTestId('document-save'));
    const notice = await within(panel).findByTestId('document-conflict');
    expect(within(notice).getByTestId('conflict-author')).toHaveTextContent('Grace');
    expect(notice).toHaveTextContent('2 min ago');
    expect(notice).toHaveTextContent('Your draft is still here');
    expect(source).toHaveValue(mine);

    await user.click(within(notice).getByRole('button', { name: 'Load their version' }));
    await waitFor(() => expect(within(panel).getByTestId('document-source')).toHaveValue(current));
    const merge = within(panel).getByTestId('document-merge');
    expect(within(merge).getByTestId('merge-draft')).toHaveTextContent('Mine: in recycled pots.');
    const change = within(merge).getAllByTestId('merge-change');
    expect(change).toHaveLength(1);
    expect(within(change[0]).getByTestId('merge-mine')).toHaveTextContent('Mine: in recycled pots.');
    await user.click(within(change[0]).getByRole('button', { name: 'Keep both' }));
    expect(within(panel).getByTestId('document-source')).toHaveValue('# Brief\n\nPlants, weekly.\nTheirs: delivered by bike.\nMine: in recycled pots.\n');
    // Saved over their version now: the sha it was loaded with.
    await user.click(within(panel).getByTestId('document-save'));
    await waitFor(() => expect(onSave).toHaveBeenLastCalledWith('# Brief\n\nPlants, weekly.\nTheirs: delivered by bike.\nMine: in recycled pots.\n', `sha-of-${current.length}`));
    await waitFor(() => expect(within(panel).queryByTestId('document-editor')).toBeNull());
  });

  it('Escape closes it with the focus on the page body; with unsaved edits it asks first', async () => {
    const user = userEvent.setup();
    const { onClose } = renderViewer({ onSave: jest.fn(async () => undefined) });
    const panel = screen.getByTestId('document-panel');
    await within(panel).findByRole('heading', { name: 'Brief' });
    await user.click(within(panel).getByTestId('document-edit'));
    const source = await within(panel).findByTestId('document-source');
    await waitFor(() => expect(source).toHaveValue(current));
    await user.type(source, 'more');
    (document.activeElement as HTMLElement | null)?.blur();
    expect(document.activeElement).toBe(document.body);
    await user.keyboard('{Escape}');
    const ask = screen.getByRole('alertdialog', { name: 'Discard your changes?' });
    expect(onClose).not.toHaveBeenCalled();
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(ask).not.toBeInTheDocument();
    expect(within(panel).getByTestId('document-source')).toHaveValue(`${current}more`);
    act(() => (document.activeElement as HTMLElement | null)?.blur());
    await user.keyboard('{Escape}');
    await user.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Discard' }));
    expect(onClose).toHaveBeenCalledTimes(1);
  });

  it('Escape with nothing unsaved closes it at once, wherever the focus is', async () => {
    const user = userEvent.setup();
    const { onClose } = renderViewer();
    await screen.findByRole('heading', { name: 'Brief' });
    (document.activeElement as HTMLElement | null)?.blur();
    await user.keyboard('{Escape}');
    expect(onClose).toHaveBeenCalledTimes(1);
  });
});

describe('merging a draft with their version', () => {
  it('finds each place that differs once and composes the text from the chosen sides', () => {
    const theirs = 'a\nb\nc\n';
    const mine = 'a\nB\nc\nd\n';
    const parts = mergeParts(theirs, mine);
    expect(parts.filter((p) => p.kind === 'change')).toEqual([
      { kind: 'change', theirs: 'b\n', mine: 'B\n' },
      { kind: 'change', theirs: '', mine: 'd\n' },
    ]);
    expect(composeMerge(parts, {})).toBe(theirs);
    const idx = parts.map((p, i) => (p.kind === 'change' ? i : -1)).filter((i) => i >= 0);
    expect(composeMerge(parts, { [idx[0]]: 'mine', [idx[1]]: 'mine' })).toBe(mine);
    expect(composeMerge(parts, { [idx[0]]: 'both' })).toBe('a\nb\nB\nc\n');
  });

  it('names a person, an agent in someone’s turn, or someone outside the app', () => {
    expect(changedByText({ at: 'x', person: 'Grace', agentId: null }, agents)).toBe('Grace');
    expect(changedByText({ at: 'x', person: 'Grace', agentId: 'pm' }, agents)).toBe('John (an agent, in Grace’s conversation)');
    expect(changedByText(null, agents)).toBe('Someone (outside this app)');
  });
});
