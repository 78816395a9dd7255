import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary, ProjectView } from '@/types/api';
import { App } from './App';

const acme: ProjectView = { id: 'acme', name: 'Acme', bmad: { version: '6.0.4', folder: '_bmad', modules: ['bmm'] }, agentCount: 1, outputFolder: '{project-root}/_bmad-output', writable: [], problems: [] };
const bundleAgents: AgentSummary[] = [{ id: 'pm', name: 'Maya', title: 'Product Lead', bundleName: 'sample', commands: [] }];
const acmeAgents: AgentSummary[] = [{ id: 'pm', name: 'John', title: 'Product Manager', bundleName: 'Acme', projectId: 'acme', commands: [{ cmd: '*prd', description: 'PRD' }] }];
const summary = (id: string, projectId?: string) => ({
  id,
  agentId: 'pm',
  bundleName: projectId ? 'Acme' : 'sample',
  ...(projectId ? { projectId } : {}),
  title: `Talk ${id}`,
  createdAt: '2025-01-01T00:00:00Z',
  updatedAt: '2025-01-01T00:00:00Z',
  status: 'idle',
  messageCount: 2,
});

let urls: string[];
let projects: ProjectView[];
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });
const ok = (data: unknown) => json(200, { success: true, data });

beforeEach(() => {
  urls = [];
  projects = [acme];
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init?: RequestInit) => {
    urls.push(url);
    const [path, qs = ''] = url.split('?');
    const q = new URLSearchParams(qs);
    if (path === '/api/health') return ok({ status: 'ok', llm: { configured: true, model: 'm' } });
    if (path === '/api/projects' && init?.method === 'POST') {
      const p = { ...acme, id: 'beta', name: 'beta' };
      projects = [...projects, p];
      return json(201, { success: true, data: p });
    }
    if (path === '/api/projects') return ok(projects);
    if (path === '/api/agents') return ok(q.get('projectId') === 'acme' ? acmeAgents : q.get('projectId') ? [] : bundleAgents);
    if (path === '/api/conversations') return ok({ items: q.get('projectId') ? [summary('c-1', 'acme')] : [summary('c-0'), summary('c-1', 'acme')] });
    if (path === '/api/conversations/c-1') return ok({ ...summary('c-1', 'acme'), messages: [], usage: { promptTokens: 0, completionTokens: 0 } });
    if (path === '/api/projects/acme/files') return ok({ files: [] });
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

const at = (href: string) => window.history.replaceState(null, '', href);
const here = () => `${window.location.pathname}${window.location.search}`;

describe('App with projects', () => {
  it("reloads into the project the URL names: its agents, its conversations, and a new chat keeps it", async () => {
    at('/?p=acme');
    const user = userEvent.setup();
    render(<App />);
    const select = await screen.findByRole('combobox', { name: 'Project' });
    await waitFor(() => expect(select).toHaveValue('acme'));
    const card = await screen.findByTestId('agent-card');
    expect(card).toHaveTextContent('John');
    expect(urls).toContain('/api/agents?projectId=acme');
    expect(urls).toContain('/api/conversations?projectId=acme&limit=30');
    const nav = screen.getByRole('navigation', { name: 'Conversations' });
    // Named by its folder id, with its BMAD project_name beside it where it differs.
    expect(within(nav).getByRole('heading', { name: 'Conversations · acme (Acme)' })).toBeInTheDocument();
    // The project's documents are one click away even before a conversation exists.
    expect(screen.getByRole('heading', { name: 'Project documents', hidden: true })).toBeInTheDocument();

    await user.click(card);
    expect(here()).toBe('/?p=acme&agent=pm');
    expect(screen.getByRole('region', { name: 'Conversation with John' })).toBeInTheDocument();

    await user.click(screen.getByTestId('new-conversation'));
    expect(here()).toBe('/?p=acme');
    await user.selectOptions(await screen.findByRole('combobox', { name: 'Project' }), 'Bundles');
    expect(here()).toBe('/');
    await waitFor(() => expect(screen.getByTestId('agent-card')).toHaveTextContent('Maya'));
  });

  it("opening a project's conversation from the full list restores its project", async () => {
    at('/');
    const user = userEvent.setup();
    render(<App />);
    const items = await screen.findAllByTestId('conversation-item');
    expect(items).toHaveLength(2);
    expect(items[1]).toHaveTextContent('acme');
    await user.click(within(items[1]).getByRole('button', { name: /^Talk c-1/ }));
    expect(here()).toBe('/?p=acme&c=c-1');
    await waitFor(() => expect(urls).toContain('/api/agents?projectId=acme'));
    await waitFor(() => expect(screen.getByRole('region', { name: 'Conversation with John' })).toBeInTheDocument());
  });

  it('a conversation link without its project gets it back from the conversation', async () => {
    at('/?c=c-1');
    render(<App />);
    await waitFor(() => expect(here()).toBe('/?p=acme&c=c-1'));
    await waitFor(() => expect(screen.getByRole('region', { name: 'Conversation with John' })).toBeInTheDocument());
  });

  it('selects a project once it is created', async () => {
    at('/');
    const user = userEvent.setup();
    render(<App />);
    await user.click(await screen.findByRole('button', { name: 'New project' }));
    const dialog = screen.getByRole('dialog', { name: 'New project' });
    await user.type(within(dialog).getByRole('textbox', { name: 'Project name' }), 'beta{Enter}');
    await waitFor(() => expect(here()).toBe('/?p=beta'));
    expect(screen.queryByRole('dialog', { name: 'New project' })).toBeNull();
    expect(screen.getByRole('combobox', { name: 'Project' })).toHaveValue('beta');
    await waitFor(() => expect(urls).toContain('/api/agents?projectId=beta'));
  });
});

describe('App: chat screen', () => {
  const conv0 = {
    ...summary('c-0'),
    messages: [
      { id: 'u1', role: 'user', content: 'Write it', timestamp: 't' },
      {
        id: 'a1',
        role: 'assistant',
        content: 'Saved.',
        timestamp: 't',
        functionCalls: [{ id: 'w', name: 'save_output', arguments: { file_path: '{output_folder}/brief.md' }, result: { ok: true, path: '{output_folder}/brief.md', bytes_written: 7 } }],
      },
    ],
    usage: { promptTokens: 0, completionTokens: 0 },
  };
  let fileCount: number;

  beforeEach(() => {
    fileCount = 1;
    const base = (globalThis as unknown as { fetch: jest.Mock }).fetch.getMockImplementation()!;
    (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init?: RequestInit) => {
      urls.push(url);
      if (url === '/api/conversations/c-0') return ok(conv0);
      if (url === '/api/conversations/c-0/files') {
        const files = Array.from({ length: fileCount }, (_, i) => ({ path: `f${i}.md`, name: `f${i}.md`, type: 'file', size: 3, modifiedAt: 't' }));
        return ok({ files });
      }
      if (url === '/api/conversations/c-0/files/brief.md') return { ok: true, status: 200, headers: { get: () => 'text/markdown' }, text: async () => '# Brief\n\nFirst draft.' };
      if (url === '/api/models') return ok([{ name: 'fast', model: 'a', contextWindow: 8192, maxOutputTokens: 1024, configured: true, default: true }, { name: 'deep', model: 'b', contextWindow: 8192, maxOutputTokens: 1024, configured: true, default: false }]);
      return base(url, init);
    });
  });

  it('names the outputs button by its content, with the right plural, and labels both side panels', async () => {
    at('/?c=c-0');
    render(<App />);
    const toggle = await screen.findByTestId('outputs-toggle');
    await waitFor(() => expect(toggle).toHaveAccessibleName('Show outputs, 1 file'));
    expect(toggle).not.toHaveAttribute('aria-label');
    expect(screen.getByRole('complementary', { name: 'Conversation list' })).toBeInTheDocument();
    expect(document.getElementById('outputs')).toHaveAttribute('aria-label', 'Outputs');
    expect(screen.getByRole('heading', { level: 1 })).toHaveTextContent('Talk c-0 — Maya');
  });

  it('says "2 files" for two', async () => {
    fileCount = 2;
    at('/?c=c-0');
    render(<App />);
    const toggle = await screen.findByTestId('outputs-toggle');
    await waitFor(() => expect(toggle).toHaveAccessibleName('Show outputs, 2 files'));
  });

  it('offers the export of the conversation as Markdown and JSON', async () => {
    at('/?c=c-0');
    render(<App />);
    const menu = await screen.findByTestId('export-menu');
    expect(within(menu).getByRole('link', { name: 'Markdown (.md)' })).toHaveAttribute('href', '/api/conversations/c-0/export?format=md');
    expect(within(menu).getByRole('link', { name: 'JSON (.json)' })).toHaveAttribute('href', '/api/conversations/c-0/export?format=json');
    const user = userEvent.setup();
    await user.click(within(menu).getByLabelText('Export conversation'));
    expect(menu).toHaveAttribute('open');
    await user.keyboard('{Escape}');
    expect(menu).not.toHaveAttribute('open');
    await user.click(within(menu).getByLabelText('Export conversation'));
    await user.click(document.body);
    expect(menu).not.toHaveAttribute('open');
  });

  it('opens a written file from its tool card, and offers the model picker when there is a choice', async () => {
    at('/?c=c-0');
    const user = userEvent.setup();
    render(<App />);
    await user.click(await screen.findByRole('button', { name: 'Open brief.md' }));
    const panel = await screen.findByTestId('document-panel');
    expect(panel).toHaveAttribute('data-path', 'brief.md');
    await waitFor(() => expect(within(panel).getByRole('heading', { name: 'Brief' })).toBeInTheDocument());
    // Narrow (jsdom has no media queries): a dialog over the chat.
    expect(panel).toHaveAttribute('role', 'dialog');
    await user.keyboard('{Escape}');
    expect(screen.queryByTestId('document-panel')).toBeNull();
    expect(screen.getByRole('combobox', { name: 'Model' })).toBeInTheDocument();
  });
});
