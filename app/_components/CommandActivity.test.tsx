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
    // Without a transcript: stdout, then stderr marked as such (and said to be out of order).
    const out = screen.getByTestId('command-output');
    expect(out).toHaveAttribute('data-ordered', 'false');
    expect(out.querySelector('[data-stream="stdout"]')).toHaveTextContent('FAIL src/sum.test.js');
    expect(out.querySelector('[data-stream="stderr"]')).toHaveTextContent('[stderr] npm ERR! Test failed.');
    expect(card).toHaveTextContent('lines marked at the left came on stderr (shown after stdout');
    expect(card).not.toHaveTextContent('Errors');
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
    expect(screen.getByTestId('command-output')).toHaveTextContent('(no output)');
  });

  it('shows the output in the order it came, stderr marked but never called errors, colours as spans and no HTML made of it', async () => {
    const transcript = [
      { stream: 'stdout', text: '> calc@1.0.0 test\n' },
      { stream: 'stderr', text: '\u001b[32mPASS\u001b[39m src/sum.test.js\n' },
      { stream: 'stdout', text: '<img src=x onerror=alert(1)> done\n' },
      { stream: 'stderr', text: 'Tests: \u001b[1m\u001b[32m1 passed\u001b[39m\u001b[22m \u001b]8;;http://x\u0007link\u001b]8;;\u0007\n' },
    ];
    render(
      <ToolActivity
        part={{
          type: 'tool',
          toolCallId: 'c',
          toolName: 'run_command',
          input: { command: 'npx jest' },
          state: 'done',
          output: { command: 'npx jest', exit_code: 0, stdout: '> calc@1.0.0 test\n<img src=x onerror=alert(1)> done\n', stderr: 'PASS src/sum.test.js\nTests: 1 passed\n', duration_ms: 900, stopped: null, transcript },
        }}
      />,
    );
    await userEvent.click(screen.getByTestId('tool-label'));
    const out = screen.getByTestId('command-output');
    expect(out).toHaveAttribute('data-ordered', 'true');
    expect([...out.querySelectorAll('[data-stream]')].map((e) => [e.getAttribute('data-stream'), e.textContent])).toEqual([
      ['stdout', '> calc@1.0.0 test\n'],
      ['stderr', '[stderr] PASS src/sum.test.js\n [end of stderr]'],
      ['stdout', '<img src=x onerror=alert(1)> done\n'],
      ['stderr', '[stderr] Tests: 1 passed link\n [end of stderr]'],
    ]);
    // Escape codes never reach the page; colours are classes; the text stays text.
    expect(out.textContent).not.toContain('\u001b');
    expect(out.querySelector('img')).toBeNull();
    expect(out.querySelector('.ansi-green')).toHaveTextContent('PASS');
    expect(out.querySelector('.ansi-green.ansi-bold')).toHaveTextContent('1 passed');
    expect(screen.getByTestId('tool-activity')).not.toHaveTextContent('Errors');
    expect(screen.getByTestId('command-outcome')).toHaveClass('command-ok');
  });

  it('keeps the command exactly as it ran, spaces and all, in the headline and the card', async () => {
    const command = "sed -n 's/^  1-1/X/p'   file.txt";
    render(
      <ToolActivity
        part={{ type: 'tool', toolCallId: 'c', toolName: 'run_command', input: { command }, state: 'done', output: { command, exit_code: 0, stdout: '', stderr: '', duration_ms: 5 } }}
      />,
    );
    expect(screen.getByTestId('tool-label').textContent).toBe(`Ran ${command}`);
    expect(screen.getByTestId('command-line').textContent).toBe(command);
    expect(screen.getByTestId('command-line')).toHaveClass('command-text');
  });

  it('says a command stopped at the disk quota, with the hint', () => {
    render(
      <ToolActivity
        part={{ type: 'tool', toolCallId: 'c', toolName: 'run_command', input: { command: 'dd' }, state: 'done', output: { exit_code: null, stdout: '', stderr: '', duration_ms: 2000, stopped: 'disk_quota', hint: 'The workspace is over its quota of 2048 MB.' } }}
      />,
    );
    expect(screen.getByTestId('command-outcome')).toHaveTextContent('stopped at the workspace’s disk quota · 2.0 s');
    expect(screen.getByTestId('command-outcome')).toHaveClass('command-bad');
    expect(screen.getByText('The workspace is over its quota of 2048 MB.')).toBeTruthy();
  });

  it('shows a refused command (a tool error) as failed with its message', () => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'run_command', input: { command: 'ls' }, state: 'failed', errorText: 'Build is off for this project.', errorCode: 'E_BUILD_DISABLED' }} />);
    expect(screen.getByTestId('tool-label')).toHaveTextContent('Could not run ls');
    expect(screen.getByText('failed')).toBeTruthy();
    expect(screen.getByText(/Build is off for this project/)).toBeTruthy();
  });
});
