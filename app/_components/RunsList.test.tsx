import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { RunItem } from '../_lib/runs';
import { RunsList } from './RunsList';

const base: RunItem = {
  id: 'run_a',
  projectId: 'p1',
  skill: 'bmad-prd',
  agentId: 'bmad-agent-pm',
  intent: 'create',
  status: 'complete',
  result: { status: 'complete', intent: 'create', prd: '{output_folder}/planning-artifacts/prd.md' },
  error: null,
  artifacts: [{ path: '_bmad-output/planning-artifacts/prd.md', version: 'abcdef0123456789abcdef0123456789abcdef01' }],
  conversationId: 'c1',
  answers: 0,
  createdAt: new Date().toISOString(),
  startedAt: null,
  endedAt: null,
};
let runs: RunItem[];

beforeEach(() => {
  runs = [base, { ...base, id: 'run_b', status: 'running', result: null, artifacts: [], conversationId: null }];
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string) => {
    const data =
      url === '/api/runs?projectId=p1&limit=20'
        ? { items: runs }
        : url.startsWith('/api/runs/')
          ? runs.find((r) => url.endsWith(r.id))
          : url === '/api/conversations/c1'
            ? { messages: [{ id: 'm1', role: 'user', content: '*PRD headless: true', timestamp: '' }, { id: 'm2', role: 'assistant', content: 'The PRD is written.', timestamp: '' }] }
            : undefined;
    return data ? { ok: true, status: 200, json: async () => ({ success: true, data }) } : { ok: false, status: 404, json: async () => ({ success: false, error: 'no', code: 'E_NOT_FOUND' }) };
  });
});

describe('RunsList', () => {
  it("lists the project's runs with their status and opens one read-only with its result", async () => {
    const user = userEvent.setup();
    render(<RunsList projectId="p1" pollMs={20} />);
    const items = await screen.findAllByTestId('run-item');
    expect(items.map((i) => i.getAttribute('data-status'))).toEqual(['complete', 'running']);
    // A running run is asked about again until it ends.
    runs = [base, { ...base, id: 'run_b', status: 'failed', result: null, artifacts: [], error: { code: 'E_NO_RESULT', message: 'no JSON' } }];
    await waitFor(() => expect(screen.getAllByTestId('run-status').map((s) => s.textContent)).toEqual(['complete', 'failed']));

    await user.click(within(items[0]!).getByRole('button'));
    const dialog = await screen.findByTestId('run-dialog');
    expect(within(dialog).getByTestId('run-dialog-status')).toHaveTextContent('complete');
    expect(within(dialog).getByTestId('run-result')).toHaveTextContent('"prd": "{output_folder}/planning-artifacts/prd.md"');
    expect(within(dialog).getByText('_bmad-output/planning-artifacts/prd.md')).toBeInTheDocument();
    expect(await within(dialog).findAllByTestId('run-message')).toHaveLength(2);
    // Read-only: nothing to type into.
    expect(within(dialog).queryByRole('textbox')).toBeNull();
    await user.keyboard('{Escape}');
    expect(screen.queryByTestId('run-dialog')).toBeNull();
  });

  it('shows nothing for a project without runs', async () => {
    runs = [];
    const { container } = render(<RunsList projectId="p1" />);
    await waitFor(() => expect((globalThis.fetch as jest.Mock).mock.calls.length).toBeGreaterThan(0));
    expect(container).toBeEmptyDOMElement();
  });
});
