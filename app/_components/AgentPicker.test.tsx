import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AgentSummary } from '@/types/api';
import { AgentPicker } from './AgentPicker';
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
