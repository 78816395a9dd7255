import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary, ProjectDetail, ProjectView } from '@/types/api';
import { AgentPicker, type ProjectChoice } from './AgentPicker';
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

function workspace(over: Partial<ProjectChoice> = {}): ProjectChoice {
  return { projects, loading: false, error: null, projectId: null, onChange: jest.fn(), onCreated: jest.fn(), onRetry: jest.fn(), ...over };
}

describe('AgentPicker with projects', () => {
  it('offers the bundles and every project (version, agent count) in one Workspace choice', async () => {
    const user = userEvent.setup();
    const ws = workspace();
    render(<AgentPicker agents={agents} loading={false} error={null} onPick={() => {}} onRetry={() => {}} workspace={ws} />);
    const select = screen.getByRole('combobox', { name: 'Project' });
    expect(select).toHaveValue('');
    // By folder id, with BMAD's project_name beside it where it differs.
    expect(within(select).getAllByRole('option').map((o) => o.textContent)).toEqual(['Bundles', 'acme (Acme) — BMAD 6.0.4, 9 agents', 'legacy — BMAD, 1 agent']);
    expect(screen.getAllByTestId('agent-card')).toHaveLength(3);
    await user.selectOptions(select, 'acme (Acme) — BMAD 6.0.4, 9 agents');
    expect(ws.onChange).toHaveBeenCalledWith('acme');
  });

  it("lists a chosen project's agents with their commands and picks one", async () => {
    const user = userEvent.setup();
    const onPick = jest.fn();
    const ws = workspace({ projectId: 'acme' });
    render(<AgentPicker agents={projectAgents} loading={false} error={null} onPick={onPick} onRetry={() => {}} workspace={ws} />);
    const select = screen.getByRole('combobox', { name: 'Project' });
    expect(select).toHaveValue('acme');
    expect(select).toHaveAccessibleDescription(/BMAD 6\.0\.4 · bmm · 9 agents · documents in \{project-root\}\/_bmad-output/);
    expect(select).toHaveAccessibleDescription(/Named “Acme” in its BMAD config/);
    const card = within(screen.getByRole('region', { name: 'acme' })).getByTestId('agent-card');
    expect(card).toHaveTextContent('John');
    expect(card).toHaveTextContent('2 commands');
    expect(screen.queryByTestId('project-problems')).toBeNull();
    await user.click(card);
    expect(onPick).toHaveBeenCalledWith(projectAgents[0]);
    await user.selectOptions(select, 'Bundles');
    expect(ws.onChange).toHaveBeenLastCalledWith(null);
  });

  it("keeps the doctor's lines about a project folded away for builders, counted as the CLI counts them", async () => {
    const user = userEvent.setup();
    const line = '_bmad/_config/agent-manifest.csv: error: agent qa: _bmad/bmm/agents/qa.md not found';
    const warning = '_bmad: warning: skill bmad-prd: listed in the skill manifest but installed in no skill folder';
    const detail: ProjectDetail = { ...projects[1], agents: [], notes: [], problems: [line, warning], doctor: { summary: '1 error, 1 warning', errors: 1, warnings: 1, notes: 0 }, usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 }, repository: null };
    const { rerender } = render(<AgentPicker agents={[]} loading={false} error={null} onPick={() => {}} onRetry={() => {}} workspace={workspace({ projectId: 'legacy' })} />);
    // The list's cheap checks are not the diagnosis: nothing is counted until the doctor answers.
    expect(screen.queryByTestId('project-problems')).toBeNull();
    expect(screen.getByTestId('project-doctor')).toHaveTextContent('Checking the project…');
    rerender(<AgentPicker agents={[]} loading={false} error={null} onPick={() => {}} onRetry={() => {}} workspace={workspace({ projectId: 'legacy', detail })} />);
    const problems = screen.getByTestId('project-problems');
    expect(problems).not.toHaveAttribute('open');
    await user.click(within(problems).getByText('1 error, 1 warning'));
    expect(problems).toHaveAttribute('open');
    expect(screen.getAllByTestId('doctor-line').map((li) => li.getAttribute('data-line'))).toEqual([line, warning]);
    expect(screen.getAllByTestId('doctor-line')[0]).toHaveTextContent('Error: agent qa: _bmad/bmm/agents/qa.md not found — in _bmad/_config/agent-manifest.csv');
    expect(screen.getByText(/This project has no agents/)).toBeInTheDocument();
  });

  it('never adds a project named only by the URL to the list, and shows a failed project list without hiding the bundles', () => {
    render(<AgentPicker agents={agents} loading={false} error={null} onPick={() => {}} onRetry={() => {}} workspace={workspace({ projects: [], projectId: 'ghost', error: 'boom' })} />);
    const options = [...screen.getByRole('combobox', { name: 'Project' }).querySelectorAll('option')].map((o) => o.value);
    expect(options).toEqual(['']);
    expect(screen.queryByRole('option', { name: 'ghost' })).toBeNull();
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
