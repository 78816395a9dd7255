import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ProjectJourney, ProjectView } from '@/types/api';
import { Home, journeyLine } from './Home';

const project = (id: string, name: string, extra: Partial<ProjectView> = {}): ProjectView => ({
  id,
  name,
  bmad: { version: '6.12.0', folder: '_bmad', modules: ['bmm'] },
  agentCount: 5,
  outputFolder: '{project-root}/_bmad-output',
  writable: [],
  problems: [],
  ...extra,
});

const journey: ProjectJourney = {
  phases: [
    { id: '1-analysis', name: 'Analysis', status: 'done', documents: [] },
    { id: '2-planning', name: 'Planning', status: 'started', documents: [] },
    { id: 'anytime', name: 'Anytime', status: 'not-started', documents: [] },
  ],
  next: [{ agentId: 'pm', command: '*CP', label: 'Create PRD', why: 'Required next.', required: true }],
  help: null,
};

beforeEach(() => {
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string) => ({
    ok: url.includes('/shop/'),
    status: url.includes('/shop/') ? 200 : 404,
    statusText: '',
    headers: { get: () => 'application/json' },
    json: async () => (url.includes('/shop/') ? { success: true, data: journey } : { success: false, error: 'No project', code: 'E_PROJECT_NOT_FOUND' }),
  }));
});

describe('Home', () => {
  it('lists each project as id (project_name), with its version, role, journey stage and last activity', async () => {
    const onOpen = jest.fn();
    const at = new Date(Date.now() - 3 * 3600_000).toISOString();
    render(<Home projects={[project('shop', 'v612', { role: 'viewer', lastActivity: at }), project('lab', 'lab', { role: 'owner', lastActivity: null })]} loading={false} error={null} onOpen={onOpen} onRetry={() => {}} />);
    const cards = screen.getAllByTestId('home-project');
    expect(cards).toHaveLength(2);
    const shop = cards[0];
    expect(within(shop).getByRole('link', { name: 'shop (v612)' })).toHaveAttribute('href', '/?p=shop');
    expect(shop).toHaveTextContent('BMAD 6.12.0 · 5 agents · Viewer (read only)');
    await waitFor(() => expect(within(shop).getByTestId('home-stage')).toHaveTextContent('Now: Planning · Next: Create PRD'));
    expect(within(shop).getByTestId('home-activity')).toHaveTextContent('Last activity 3 h ago');
    expect(within(cards[1]).getByRole('link', { name: 'lab' })).toBeInTheDocument();
    expect(within(cards[1]).getByTestId('home-activity')).toHaveTextContent('No conversations yet');
    await waitFor(() => expect(cards[1]).toHaveTextContent('Journey not available'));
    await userEvent.setup().click(within(shop).getByRole('link', { name: 'shop (v612)' }));
    expect(onOpen).toHaveBeenCalledWith('shop');
  });

  it('says what to do when there is no project', () => {
    render(<Home projects={[]} loading={false} error={null} onOpen={() => {}} onRetry={() => {}} />);
    expect(screen.getByTestId('home-empty')).toHaveTextContent('No projects yet');
  });

  it('sums a journey up: the phase under way and the required next step', () => {
    expect(journeyLine(journey)).toEqual({ phase: 'Planning', next: 'Create PRD' });
    expect(journeyLine({ ...journey, phases: journey.phases.map((p) => ({ ...p, status: 'done' as const })), next: [] })).toEqual({ phase: 'Every phase done', next: null });
  });
});
