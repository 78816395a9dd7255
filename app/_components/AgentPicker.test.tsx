import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary, ProjectView } from '@/types/api';
import { AgentPicker, type WorkspaceChoice } from './AgentPicker';
import { LlmNotice } from './LlmNotice';

const agents: AgentSummary[] = [
  { id: 'pm', name: 'John', title: 'Product Manager', icon: '📋', bundleName: 'bmm', description: 'Writes PRDs', commands: [{ cmd: '*prd', description: 'PRD' }] },
  { id: 'cw', name: 'Ada', title: 'Writer', bundleName: 'creative', commands: [] },
  { id: 'an', name: 'Mary', title: 'Analyst', bundleName: 'bmm', commands: [] },
];

describe('AgentPicker', () => {
  it('groups agents by bundle and picks one', async () => {
    const user = userEvent.setup();
    const onPick = jest.fn();
    render(<AgentPicker agents={agents} loading={false} error={null} onPick={onPick} onRetry={() => {}} />);
    const bmm = screen.getByRole('region', { name: 'bmm' });
    expect(within(bmm).getAllByTestId('agent-card').map((c) => c.getAttribute('data-agent-id'))).toEqual(['pm', 'an']);
    expect(within(screen.getByRole('region', { name: 'creative' })).getAllByTestId('agent-card')).toHaveLength(1);
    const card = screen.getAllByTestId('agent-card')[0];
    expect(card).toHaveTextContent('John');
    expect(card).toHaveTextContent('Product Manager');
    expect(card).toHaveTextContent('Writes PRDs');
    await user.click(card);
    expect(onPick).toHaveBeenCalledWith(agents[0]);
  });
});

const projects: ProjectView[] = [
  { id: 'acme', name: 'Acme', bmad: { version: '6.0.4', folder: '_bmad', modules: ['bmm'] }, agentCount: 9, outputFolder: '{project-root}/_bmad-output', writable: [], problems: [] },
  {
    id: 'legacy',
    name: 'legacy',
    bmad: { version: null, folder: 'bmad', modules: [] },
    agentCount: 1,
    outputFolder: '{project-root}/docs',
    writable: [],
    problems: ['agent-manifest.csv: row 3 has no path'],
  },
];

const projectAgents: AgentSummary[] = [
  { id: 'pm', name: 'John', title: 'Product Manager', bundleName: 'Acme', projectId: 'acme', commands: [{ cmd: '*create-prd', description: 'PRD' }, { cmd: '*help', description: 'Help' }] },
];

function workspace(over: Partial<WorkspaceChoice> = {}): WorkspaceChoice {
  return { projects, loading: false, error: null, projectId: null, onChange: jest.fn(), onCreated: jest.fn(), onRetry: jest.fn(), ...over };
}

describe('AgentPicker with projects', () => {
  it('offers the bundles and every project (version, agent count) in one Workspace choice', async () => {
    const user = userEvent.setup();
    const ws = workspace();
    render(<AgentPicker agents={agents} loading={false} error={null} onPick={() => {}} onRetry={() => {}} workspace={ws} />);
    const select = screen.getByRole('combobox', { name: 'Workspace' });
    expect(select).toHaveValue('');
    expect(within(select).getAllByRole('option').map((o) => o.textContent)).toEqual(['Bundles', 'Acme (BMAD 6.0.4, 9 agents)', 'legacy (BMAD, 1 agent)']);
    expect(screen.getAllByTestId('agent-card')).toHaveLength(3);
    await user.selectOptions(select, 'Acme (BMAD 6.0.4, 9 agents)');
    expect(ws.onChange).toHaveBeenCalledWith('acme');
  });

  it("lists a chosen project's agents with their commands and picks one", async () => {
    const user = userEvent.setup();
    const onPick = jest.fn();
    const ws = workspace({ projectId: 'acme' });
    render(<AgentPicker agents={projectAgents} loading={false} error={null} onPick={onPick} onRetry={() => {}} workspace={ws} />);
    const select = screen.getByRole('combobox', { name: 'Workspace' });
    expect(select).toHaveValue('acme');
    expect(select).toHaveAccessibleDescription(/BMAD 6\.0\.4 · bmm · 9 agents · documents in \{project-root\}\/_bmad-output/);
    const card = within(screen.getByRole('region', { name: 'Acme' })).getByTestId('agent-card');
    expect(card).toHaveTextContent('John');
    expect(card).toHaveTextContent('2 commands');
    expect(screen.queryByTestId('project-problems')).toBeNull();
    await user.click(card);
    expect(onPick).toHaveBeenCalledWith(projectAgents[0]);
    await user.selectOptions(select, 'Bundles');
    expect(ws.onChange).toHaveBeenLastCalledWith(null);
  });

  it("keeps a project's problems folded away for builders", async () => {
    const user = userEvent.setup();
    render(<AgentPicker agents={[]} loading={false} error={null} onPick={() => {}} onRetry={() => {}} workspace={workspace({ projectId: 'legacy' })} />);
    const problems = screen.getByTestId('project-problems');
    expect(problems).not.toHaveAttribute('open');
    await user.click(within(problems).getByText('1 setup problem'));
    expect(problems).toHaveAttribute('open');
    expect(problems).toHaveTextContent('agent-manifest.csv: row 3 has no path');
    expect(screen.getByText(/This project has no agents/)).toBeInTheDocument();
  });

  it('shows a project named by the URL before the list knows it, and a failed project list without hiding the bundles', () => {
    render(<AgentPicker agents={agents} loading={false} error={null} onPick={() => {}} onRetry={() => {}} workspace={workspace({ projects: [], projectId: 'ghost', error: 'boom' })} />);
    expect(screen.getByRole('combobox', { name: 'Workspace' })).toHaveValue('ghost');
    expect(screen.getByRole('alert')).toHaveTextContent('Could not load the projects: boom');
  });
});

describe('LlmNotice', () => {
  it('says what to set when no model is configured, and nothing otherwise', () => {
    const { rerender } = render(<LlmNotice health={{ status: 'ok', llm: { configured: false, model: 'gpt-4o-mini' } }} />);
    const notice = screen.getByTestId('llm-notice');
    expect(notice).toHaveTextContent('OPENAI_API_KEY');
    expect(notice).toHaveTextContent('OPENAI_BASE_URL');
    expect(notice).toHaveTextContent('OPENAI_MODEL');
    rerender(<LlmNotice health={{ status: 'ok', llm: { configured: true, model: 'm' } }} />);
    expect(screen.queryByTestId('llm-notice')).toBeNull();
  });
});
