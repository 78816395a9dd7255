import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { ToolActivity } from './ToolActivity';

describe('run_command card', () => {
  it('shows the command running, then its exit code and duration, with the output on demand', async () => {
    const part = { type: 'tool' as const, toolCallId: 'c1', toolName: 'run_command', input: { command: 'npm test -- --watch=false' } };
    const { rerender } = render(<ToolActivity part={{ ...part, state: 'running' }} />);
    expect(screen.getByTestId('tool-label')).toHaveTextContent('Running npm test -- --watch=false…');
    expect(screen.queryByTestId('command-outcome')).toBeNull();

    rerender(
      <ToolActivity
        part={{
          ...part,
          state: 'done',
          output: { exit_code: 1, stdout: 'FAIL src/sum.test.js\n1 failed', stderr: 'npm ERR! Test failed.', duration_ms: 2345, stopped: null, files_changed: ['src/sum.js', { path: 'coverage/out.json', status: 'added' }] },
        }}
      />,
    );
    const card = screen.getByTestId('tool-activity');
    expect(screen.getByTestId('tool-label')).toHaveTextContent('Ran npm test -- --watch=false');
    expect(screen.getByTestId('command-outcome')).toHaveTextContent('exit code 1 · 2.3 s');
    expect(screen.getByTestId('command-outcome')).toHaveClass('command-bad');
    // The output is behind the card's disclosure until asked for.
    const details = card as HTMLDetailsElement;
    expect(details.open).toBe(false);
    await userEvent.click(within(card).getByTestId('tool-label'));
    expect(details.open).toBe(true);
    expect(screen.getByTestId('command-stdout')).toHaveTextContent('FAIL src/sum.test.js');
    expect(screen.getByTestId('command-stderr')).toHaveTextContent('npm ERR! Test failed.');
    expect(screen.getByTestId('command-line')).toHaveTextContent('npm test -- --watch=false');
    expect(within(card).getByText('src/sum.js')).toBeTruthy();
    expect(within(card).getByText('coverage/out.json')).toBeTruthy();
  });

  it('says a command stopped at a limit instead of an exit code, and a successful one is marked ok', () => {
    const { rerender } = render(
      <ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'run_command', input: { command: 'sleep 999' }, state: 'done', output: { exit_code: null, stdout: '', stderr: '', duration_ms: 600000, stopped: 'time_limit' } }} />,
    );
    expect(screen.getByTestId('command-outcome')).toHaveTextContent('stopped at the time limit · 10 min 0 s');
    rerender(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'run_command', input: { command: 'true' }, state: 'done', output: { exit_code: 0, stdout: '', stderr: '', duration_ms: 12 } }} />);
    expect(screen.getByTestId('command-outcome')).toHaveTextContent('exit code 0 · 12 ms');
    expect(screen.getByTestId('command-outcome')).toHaveClass('command-ok');
    expect(screen.getByTestId('command-stdout')).toHaveTextContent('(no output)');
  });

  it('shows a refused command (a tool error) as failed with its message', () => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'run_command', input: { command: 'ls' }, state: 'failed', errorText: 'Build is off for this project.', errorCode: 'E_BUILD_DISABLED' }} />);
    expect(screen.getByTestId('tool-label')).toHaveTextContent('Could not run ls');
    expect(screen.getByText('failed')).toBeTruthy();
    expect(screen.getByText(/Build is off for this project/)).toBeTruthy();
  });
});
