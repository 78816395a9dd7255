import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { ToolActivity } from './ToolActivity';

describe('ToolActivity', () => {
  it('shows a running tool with a spinner and its target', () => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'read_file', input: { file_path: '{bundle-root}/workflows/plan/workflow.yaml' }, state: 'running' }} />);
    const el = screen.getByTestId('tool-activity');
    expect(el).toHaveAttribute('data-state', 'running');
    expect(el).toHaveTextContent('Reading {bundle-root}/workflows/plan/workflow.yaml');
    expect(el).toHaveTextContent('running');
    expect(el.querySelector('.spinner')).not.toBeNull();
  });

  it.each([
    ['list_files', { path: '{bundle-root}/data' }, 'Listing {bundle-root}/data'],
    ['search_files', { path: '.', pattern: 'goal' }, 'Searching . for “goal”'],
    ['save_output', { file_path: '{output_folder}/brief.md' }, 'Writing {output_folder}/brief.md'],
    ['edit_file', { file_path: '{output_folder}/brief.md' }, 'Editing {output_folder}/brief.md'],
    ['execute_workflow', { workflow_path: '{bundle-root}/workflows/plan/workflow.yaml' }, 'Running workflow {bundle-root}/workflows/plan/workflow.yaml'],
  ])('describes %s in plain words', (toolName, input, text) => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName, input, state: 'running' }} />);
    expect(screen.getByTestId('tool-activity')).toHaveTextContent(text);
  });

  it('shows done with a short result summary', () => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'read_file', input: { file_path: 'a.md' }, state: 'done', output: { ok: true, lines: 12, bytes: 300 } }} />);
    const el = screen.getByTestId('tool-activity');
    expect(el).toHaveAttribute('data-state', 'done');
    expect(el).toHaveTextContent('done');
    expect(el).toHaveTextContent('12 lines, 300 bytes');
  });

  it('shows failed with the error text', () => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'read_file', input: { file_path: 'x' }, state: 'failed', errorText: 'ENOENT: not found' }} />);
    const el = screen.getByTestId('tool-activity');
    expect(el).toHaveAttribute('data-state', 'failed');
    expect(el).toHaveTextContent('failed');
    expect(el).toHaveTextContent('ENOENT: not found');
  });

  it('is collapsed at first and shows arguments and result when expanded', async () => {
    const user = userEvent.setup();
    render(
      <ToolActivity
        part={{ type: 'tool', toolCallId: 'c', toolName: 'save_output', input: { file_path: '{output_folder}/brief.md', content: 'x'.repeat(5000) }, state: 'done', output: { ok: true, bytes_written: 5000 } }}
      />,
    );
    const details = screen.getByTestId('tool-activity');
    expect(details).not.toHaveAttribute('open');
    expect(screen.getByText(/"file_path": "\{output_folder\}\/brief.md"/)).not.toBeVisible();
    await user.click(screen.getByText('Writing', { exact: false }));
    expect(details).toHaveAttribute('open');
    const args = screen.getByText(/"file_path": "\{output_folder\}\/brief.md"/);
    expect(args).toBeVisible();
    // Long values are cut so a big write never floods the page.
    expect(args.textContent).toContain('more characters');
    expect(args.textContent!.length).toBeLessThan(2000);
    expect(screen.getByText(/"bytes_written": 5000/)).toBeVisible();
  });
});
