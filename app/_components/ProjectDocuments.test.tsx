import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary, ProjectDocument, ProjectDocumentVersion } from '@/types/api';
import { OutputsPanel } from './OutputsPanel';
import { hasChanges, toTree } from './ProjectDocuments';

const agents: AgentSummary[] = [
  { id: 'pm', name: 'John', title: 'Product Manager', bundleName: 'Acme', projectId: 'acme', commands: [] },
  { id: 'analyst', name: 'Mary', title: 'Analyst', bundleName: 'Acme', projectId: 'acme', commands: [] },
];

const now = new Date().toISOString();
const files: ProjectDocument[] = [
  { path: 'prd.md', name: 'prd.md', size: 2048, modifiedAt: now, lastWriter: { agentId: 'pm', conversationId: 'c-2', at: now } },
  { path: 'planning/brief.md', name: 'brief.md', size: 40, modifiedAt: now, lastWriter: { agentId: 'analyst', conversationId: 'c-1', at: now } },
];

let versions: ProjectDocumentVersion[];
const v = (version: string, agentId: string | null, conversationId: string | null, size: number, kind: ProjectDocumentVersion['kind'] = 'write'): ProjectDocumentVersion => ({
  version,
  at: '2025-03-01T10:00:00Z',
  agentId,
  conversationId,
  size,
  kind,
});

let calls: Array<{ url: string; init?: RequestInit }>;
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });
const text = (body: string) => ({ ok: true, status: 200, headers: { get: () => 'text/markdown; charset=utf-8' }, text: async () => body });

beforeEach(() => {
  calls = [];
  versions = [v('ccc333', 'pm', 'c-2', 30), v('bbb222', 'analyst', 'c-1', 20), v('aaa111', null, null, 10, 'untracked')];
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init?: RequestInit) => {
    calls.push({ url, init });
    if (url === '/api/projects/acme/files') return json(200, { success: true, data: { files } });
    if (url === '/api/projects/acme/files/planning/brief.md?versions') return json(200, { success: true, data: { path: 'planning/brief.md', versions } });
    if (url === '/api/projects/acme/files/planning/brief.md?diff=bbb222') return json(200, { success: true, data: { diff: '--- a\n+++ b\n@@ -1 +1 @@\n-# Old brief\n+# Brief\n' } });
    if (url === '/api/projects/acme/files/planning/brief.md?version=bbb222') return text('# Old brief');
    if (url === '/api/projects/acme/files/planning/brief.md') return text(versions.length > 3 ? '# Old brief' : '# Brief');
    if (url === '/api/projects/acme/restore' && init?.method === 'POST') {
      const body = JSON.parse(String(init.body));
      // As the server credits it: to the person who asked, with no conversation.
      versions = [{ ...v('ddd444', null, null, 20, 'restore'), person: 'local' }, ...versions];
      return json(200, { success: true, data: body });
    }
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

function renderPanel(onCount = jest.fn()) {
  const onOpenConversation = jest.fn();
  // An editor of the project: saves and restores are offered.
  const onSave = jest.fn(async () => undefined);
  render(<OutputsPanel conversationId="c-1" projectId="acme" agents={agents} version={0} onCount={onCount} onOpenConversation={onOpenConversation} onSave={onSave} />);
  return { onCount, onOpenConversation };
}

async function openHistory(user: ReturnType<typeof userEvent.setup>) {
  await user.click(await screen.findByRole('button', { name: /^brief\.md/ }));
  const viewer = screen.getByRole('dialog', { name: 'planning/brief.md' });
  expect(await within(viewer).findByRole('heading', { name: 'Brief' })).toBeInTheDocument();
  await user.click(within(viewer).getByRole('tab', { name: 'History' }));
  return { viewer, list: await within(viewer).findByRole('list', { name: 'Versions of planning/brief.md' }) };
}

describe('Project documents', () => {
  it("lists the project's documents, not the conversation's, each with its last writer", async () => {
    const { onCount } = renderPanel();
    expect(screen.getByRole('heading', { name: 'Project documents' })).toBeInTheDocument();
    const items = await screen.findAllByTestId('output-file');
    expect(items.map((i) => i.getAttribute('data-path'))).toEqual(['planning/brief.md', 'prd.md']);
    expect(within(items[0]).getByTestId('last-writer')).toHaveTextContent('Mary, this conversation · just now');
    expect(within(items[1]).getByTestId('last-writer')).toHaveTextContent('John · just now');
    expect(onCount).toHaveBeenLastCalledWith(2);
    expect(screen.getByRole('link', { name: 'Download prd.md' })).toHaveAttribute('href', '/api/projects/acme/files/prd.md?download=1');
    expect(calls.some((c) => c.url.startsWith('/api/conversations/'))).toBe(false);
  });

  it('lists the versions of a document: when, which agent, which conversation, size', async () => {
    const user = userEvent.setup();
    const { onOpenConversation } = renderPanel();
    const { list } = await openHistory(user);
    const items = within(list).getAllByTestId('version-item');
    expect(items.map((i) => i.getAttribute('data-version'))).toEqual(['ccc333', 'bbb222', 'aaa111']);
    expect(items[0]).toHaveTextContent(/Version 3\s*latest/);
    expect(items[0]).toHaveTextContent('by John in another conversation · 30 B');
    expect(items[1]).toHaveTextContent('by Mary in this conversation · 20 B');
    expect(items[2]).toHaveTextContent('changed outside the agents · 10 B');
    expect(within(items[0]).getByRole('time')).toHaveAttribute('datetime', '2025-03-01T10:00:00Z');
    // The newest version is the current file: nothing to diff or restore.
    expect(within(items[0]).queryByRole('button', { name: /Restore/ })).toBeNull();
    const link = within(items[0]).getByRole('link', { name: 'another conversation' });
    expect(link).toHaveAttribute('href', '/?p=acme&c=c-2');
    await user.click(link);
    expect(onOpenConversation).toHaveBeenCalledWith('c-2');
  });

  it('shows a version and its diff against the current file, then returns to the list', async () => {
    const user = userEvent.setup();
    renderPanel();
    const { viewer } = await openHistory(user);
    await user.click(within(viewer).getByRole('button', { name: 'View version 2' }));
    expect(await within(viewer).findByRole('heading', { name: 'Old brief' })).toBeInTheDocument();
    const back = within(viewer).getByRole('button', { name: '← All versions' });
    expect(back).toHaveFocus();
    await user.click(back);
    const diffButton = within(viewer).getByRole('button', { name: 'Diff version 2 against the current file' });
    expect(within(viewer).getByRole('button', { name: 'View version 2' })).toHaveFocus();
    await user.click(diffButton);
    expect(within(viewer).getByRole('heading', { name: /Changes from version 2 to the current file/ })).toBeInTheDocument();
    const diff = await within(viewer).findByTestId('version-diff');
    expect(diff.querySelector('.diff-del')).toHaveTextContent('-# Old brief');
    expect(diff.querySelector('.diff-add')).toHaveTextContent('+# Brief');
  });

  it('restores a version only after confirming, then shows the restored content and the new history', async () => {
    const user = userEvent.setup();
    renderPanel();
    const { viewer } = await openHistory(user);
    await user.click(within(viewer).getByRole('button', { name: 'Restore version 2' }));
    const confirm = screen.getByRole('alertdialog', { name: 'Restore version 2?' });
    expect(confirm).toHaveTextContent('planning/brief.md will be replaced by version 2');
    expect(within(confirm).getByRole('button', { name: 'Cancel' })).toHaveFocus();
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(viewer).toBeInTheDocument();
    expect(calls.some((c) => c.url.endsWith('/restore'))).toBe(false);

    await user.click(within(viewer).getByRole('button', { name: 'Restore version 2' }));
    await user.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Restore' }));
    const restore = calls.find((c) => c.url === '/api/projects/acme/restore')!;
    expect(restore.init?.method).toBe('POST');
    expect(JSON.parse(String(restore.init!.body))).toEqual({ path: 'planning/brief.md', version: 'bbb222' });
    await waitFor(() => expect(within(viewer).getByTestId('document-status')).toHaveTextContent('Restored version 2.'));
    await waitFor(() => expect(within(viewer).getAllByTestId('version-item')).toHaveLength(4));
    const restored = within(viewer).getAllByTestId('version-item')[0];
    expect(restored).toHaveTextContent('restored by local · 20 B');
    expect(within(restored).queryByRole('link')).toBeNull();
    expect(within(viewer).getByRole('tab', { name: 'History' })).toHaveFocus();
    // The list of documents is read again: the restore rewrote one.
    expect(calls.filter((c) => c.url === '/api/projects/acme/files').length).toBeGreaterThanOrEqual(2);
    await user.click(within(viewer).getByRole('tab', { name: 'Document' }));
    expect(await within(viewer).findByRole('heading', { name: 'Old brief' })).toBeInTheDocument();
  });

  it('switches tabs with the arrow keys', async () => {
    const user = userEvent.setup();
    renderPanel();
    await user.click(await screen.findByRole('button', { name: /^prd\.md/ }));
    const tab = screen.getByRole('tab', { name: 'Document' });
    expect(tab).toHaveAttribute('aria-selected', 'true');
    tab.focus();
    await user.keyboard('{ArrowRight}');
    expect(screen.getByRole('tab', { name: 'History' })).toHaveFocus();
    expect(screen.getByRole('tab', { name: 'History' })).toHaveAttribute('aria-selected', 'true');
    expect(screen.getByRole('tabpanel', { name: 'History' })).toBeVisible();
  });
});

describe('toTree', () => {
  it('nests paths into folders, folders first', () => {
    const tree = toTree([
      { path: 'z.md', name: 'z.md', size: 1, modifiedAt: now },
      { path: 'a/b/c.md', name: 'c.md', size: 1, modifiedAt: now },
      { path: 'a/a.md', name: 'a.md', size: 1, modifiedAt: now },
    ]);
    expect(tree.dirs.map((d) => d.path)).toEqual(['a']);
    expect(tree.dirs[0].dirs[0].path).toBe('a/b');
    expect(tree.dirs[0].files.map((f) => f.name)).toEqual(['a.md']);
    expect(tree.files.map((f) => f.name)).toEqual(['z.md']);
  });
});

describe('hasChanges', () => {
  it('sees no differences in a diff of headers alone, or an empty one', () => {
    expect(hasChanges('')).toBe(false);
    expect(hasChanges('===================================================================\n--- a/prd.md\tv1\n+++ b/prd.md\tcurrent\n')).toBe(false);
    expect(hasChanges('--- a/prd.md\n+++ b/prd.md\n@@ -1 +1 @@\n-a\n+b\n')).toBe(true);
    expect(hasChanges('Binary files a/x.png (1) and b/x.png (2) differ\n')).toBe(true);
  });
});
