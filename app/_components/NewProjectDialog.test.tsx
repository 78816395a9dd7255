import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ProjectView } from '@/types/api';
import { NewProjectDialog } from './NewProjectDialog';

const created: ProjectView = { id: 'acme', name: 'acme', bmad: { version: '6.0.4', folder: '_bmad', modules: ['bmm'] }, agentCount: 9, outputFolder: '{project-root}/_bmad-output', writable: [], problems: [] };

const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });

let posts: Array<Record<string, unknown>>;
let reply: () => Promise<unknown>;

beforeEach(() => {
  posts = [];
  reply = async () => json(201, { success: true, data: created });
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    if (url === '/api/projects' && init.method === 'POST') {
      posts.push(JSON.parse(String(init.body)));
      return reply();
    }
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

function setup() {
  const props = { onCreated: jest.fn(), onCancel: jest.fn() };
  render(<NewProjectDialog {...props} />);
  return { ...props, dialog: screen.getByRole('dialog', { name: 'New project' }) };
}

describe('NewProjectDialog', () => {
  it('starts on the name, asks for one before sending anything, and cancels with Escape', async () => {
    const user = userEvent.setup();
    const p = setup();
    const name = screen.getByRole('textbox', { name: 'Project name' });
    expect(name).toHaveFocus();
    await user.click(screen.getByRole('button', { name: 'Create project' }));
    expect(posts).toHaveLength(0);
    expect(name).toHaveAttribute('aria-invalid', 'true');
    expect(name).toHaveAccessibleDescription(expect.stringContaining('Enter a name for the project.'));
    await user.keyboard('{Escape}');
    expect(p.onCancel).toHaveBeenCalled();
  });

  it('says "Installing BMAD 6.12.0…" while the installer runs, sends only what was filled in, and hands over the project', async () => {
    let finish!: (v: unknown) => void;
    reply = () => new Promise((r) => (finish = r));
    const user = userEvent.setup();
    const p = setup();
    await user.type(screen.getByRole('textbox', { name: 'Project name' }), ' acme ');
    await user.type(screen.getByRole('textbox', { name: 'Your name (optional)' }), 'Ada');
    await user.type(screen.getByRole('textbox', { name: 'Document language (optional)' }), 'French{Enter}');
    expect(posts).toEqual([{ name: 'acme', userName: 'Ada', documentLanguage: 'French', bmadVersion: '6.12.0', tools: ['claude-code'] }]);
    expect(within(p.dialog).getByRole('status')).toHaveTextContent('Installing BMAD 6.12.0…');
    expect(screen.getByRole('button', { name: 'Creating…' })).toHaveAttribute('aria-disabled', 'true');
    expect(screen.getByRole('button', { name: 'Cancel' })).toBeDisabled();
    // A second submit while installing does nothing.
    await user.click(screen.getByRole('button', { name: 'Creating…' }));
    expect(posts).toHaveLength(1);
    await act(async () => finish(json(201, { success: true, data: created })));
    await waitFor(() => expect(p.onCreated).toHaveBeenCalledWith(created));
  });

  it('shows the field a 400 names beside that field', async () => {
    reply = async () => json(400, { success: false, error: 'Invalid name: use letters, digits, ".", "_" or "-" (at most 64, starting with a letter or digit).', code: 'E_VALIDATION' });
    const user = userEvent.setup();
    const p = setup();
    const name = screen.getByRole('textbox', { name: 'Project name' });
    await user.type(name, 'my project{Enter}');
    await waitFor(() => expect(name).toHaveAttribute('aria-invalid', 'true'));
    expect(screen.getByTestId('name-error')).toHaveTextContent('Invalid name: use letters, digits');
    expect(name).toHaveAccessibleDescription(expect.stringContaining('Invalid name'));
    await waitFor(() => expect(name).toHaveFocus());
    expect(within(p.dialog).getByRole('status')).toHaveTextContent('');
    expect(p.onCreated).not.toHaveBeenCalled();
  });

  it('uses the field the envelope names, when it names one', async () => {
    reply = async () => json(400, { success: false, error: 'Bad value.', code: 'E_VALIDATION', field: 'communicationLanguage' });
    const user = userEvent.setup();
    setup();
    await user.type(screen.getByRole('textbox', { name: 'Project name' }), 'acme{Enter}');
    const lang = screen.getByRole('textbox', { name: 'Chat language (optional)' });
    await waitFor(() => expect(lang).toHaveAttribute('aria-invalid', 'true'));
    expect(lang).toHaveAccessibleDescription(expect.stringContaining('Bad value.'));
  });

  it('says a 409 name already exists, and lets another name through', async () => {
    reply = async () => json(409, { success: false, error: 'A project named "acme" already exists.', code: 'E_PROJECT_EXISTS' });
    const user = userEvent.setup();
    const p = setup();
    const name = screen.getByRole('textbox', { name: 'Project name' });
    await user.type(name, 'acme{Enter}');
    expect(await screen.findByTestId('name-error')).toHaveTextContent('A project named “acme” already exists. Choose another name.');
    reply = async () => json(201, { success: true, data: { ...created, id: 'acme-2', name: 'acme-2' } });
    await user.type(name, '-2{Enter}');
    await waitFor(() => expect(p.onCreated).toHaveBeenCalledWith(expect.objectContaining({ id: 'acme-2' })));
    expect(posts.map((b) => b.name)).toEqual(['acme', 'acme-2']);
  });

  it('shows an install failure as an alert in the form', async () => {
    reply = async () => json(500, { success: false, error: "BMAD's installer could not set up \"acme\": exit 1.", code: 'E_INSTALL_FAILED' });
    const user = userEvent.setup();
    setup();
    await user.type(screen.getByRole('textbox', { name: 'Project name' }), 'acme{Enter}');
    expect(await screen.findByRole('alert')).toHaveTextContent("BMAD's installer could not set up");
    expect(screen.getByRole('button', { name: 'Create project' })).not.toHaveAttribute('aria-disabled');
  });
});
