import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { ToolActivity } from './ToolActivity';

const label = () => screen.getByTestId('tool-label');

describe('ToolActivity', () => {
  it('shows a running tool with a spinner and the file by its name', () => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'read_file', input: { file_path: '{bundle-root}/workflows/plan/workflow.yaml' }, state: 'running' }} />);
    const el = screen.getByTestId('tool-activity');
    expect(el).toHaveAttribute('data-state', 'running');
    expect(label()).toHaveTextContent('Reading workflow.yaml…');
    expect(el.querySelector('.spinner')).not.toBeNull();
  });

  it.each([
    ['list_files', { path: '{bundle-root}/data' }, 'running', 'Listing data…'],
    ['list_files', { path: '{bundle-root}' }, 'done', 'Listed the bundle'],
    ['search_files', { path: '.', pattern: 'goal' }, 'done', 'Searched the outputs for “goal”'],
    ['save_output', { file_path: '{output_folder}/brief.md' }, 'running', 'Writing brief.md…'],
    ['save_output', { file_path: '{output_folder}/brief.md' }, 'done', 'Wrote brief.md'],
    ['edit_file', { file_path: '{output_folder}/docs/brief.md' }, 'done', 'Edited brief.md'],
    ['read_file', { file_path: '{bundle-root}/x.md' }, 'failed', 'Could not read x.md'],
    ['execute_workflow', { workflow_path: '{bundle-root}/workflows/plan/workflow.yaml' }, 'running', 'Running workflow plan…'],
    ['execute_workflow', { workflow_path: '{bundle-root}/workflows/plan/workflow.yaml' }, 'done', 'Ran workflow plan'],
    ['execute_workflow', { workflow_path: '{bundle-root}/tasks/shard-doc.xml' }, 'done', 'Ran workflow shard-doc'],
  ] as const)('describes %s (%j, %s) in plain words: %s', (toolName, input, state, text) => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName, input, state }} />);
    expect(label()).toHaveTextContent(new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    // Raw virtual paths are for the details, never the headline.
    expect(label().textContent).not.toMatch(/\{[a-z_-]+\}/);
  });

  it('says what a finished workflow did, with the name the workflow gives itself', () => {
    render(
      <ToolActivity
        part={{ type: 'tool', toolCallId: 'c', toolName: 'execute_workflow', input: { workflow_path: '{bundle-root}/workflows/plan/workflow.yaml' }, state: 'done', output: { ok: true, workflow: { name: 'product-brief' } } }}
      />,
    );
    expect(label()).toHaveTextContent('Ran workflow product-brief');
    expect(label()).not.toHaveTextContent(/running|done/i);
  });

  it('shows done with a short result summary and the full path in the details', () => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'read_file', input: { file_path: '{bundle-root}/a.md' }, state: 'done', output: { ok: true, lines: 12, bytes: 300 } }} />);
    const el = screen.getByTestId('tool-activity');
    expect(el).toHaveAttribute('data-state', 'done');
    expect(label()).toHaveTextContent('Read a.md');
    expect(el).toHaveTextContent('12 lines, 300 bytes');
    expect(within(el).getByText('{bundle-root}/a.md')).toBeInTheDocument();
  });

  it('shows failed with the message, and the code small after it', () => {
    render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'read_file', input: { file_path: 'x' }, state: 'failed', errorText: 'not found', errorCode: 'ENOENT' }} />);
    const el = screen.getByTestId('tool-activity');
    expect(el).toHaveAttribute('data-state', 'failed');
    expect(el).toHaveTextContent('failed');
    expect(screen.getByTestId('error-message')).toHaveTextContent('not found ENOENT');
    expect(screen.getByTestId('error-code').tagName).toBe('SMALL');
  });

  it('offers to open a file it wrote', async () => {
    const user = userEvent.setup();
    const onOpenFile = jest.fn();
    render(
      <ToolActivity
        part={{ type: 'tool', toolCallId: 'c', toolName: 'save_output', input: { file_path: '{output_folder}/brief.md' }, state: 'done', output: { ok: true, path: '{output_folder}/brief.md', bytes_written: 10 } }}
        onOpenFile={onOpenFile}
      />,
    );
    await user.click(screen.getByRole('button', { name: 'Open brief.md' }));
    expect(onOpenFile).toHaveBeenCalledWith('{output_folder}/brief.md');
  });

  it('offers no Open for reads, running writes, or files outside the output folder', () => {
    const onOpenFile = jest.fn();
    const { rerender } = render(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'read_file', input: { file_path: '{output_folder}/a.md' }, state: 'done', output: { ok: true } }} onOpenFile={onOpenFile} />);
    expect(screen.queryByTestId('tool-open')).toBeNull();
    rerender(<ToolActivity part={{ type: 'tool', toolCallId: 'c', toolName: 'save_output', input: { file_path: '{output_folder}/a.md' }, state: 'running' }} onOpenFile={onOpenFile} />);
    expect(screen.queryByTestId('tool-open')).toBeNull();
    rerender(
      <ToolActivity
        part={{ type: 'tool', toolCallId: 'c', toolName: 'save_output', input: { file_path: '{project-root}/docs/a.md' }, state: 'done', output: { ok: true, path: '{project-root}/docs/a.md' } }}
        onOpenFile={onOpenFile}
        canOpenFile={(p) => p.startsWith('{output_folder}/')}
      />,
    );
    expect(screen.queryByTestId('tool-open')).toBeNull();
  });

  it('is collapsed at first and shows arguments and result when expanded; long results scroll and take focus', async () => {
    const user = userEvent.setup();
    render(
      <ToolActivity
        part={{ type: 'tool', toolCallId: 'c', toolName: 'save_output', input: { file_path: '{output_folder}/brief.md', content: 'x'.repeat(5000) }, state: 'done', output: { ok: true, bytes_written: 5000 } }}
      />,
    );
    const details = screen.getByTestId('tool-activity');
    expect(details).not.toHaveAttribute('open');
    expect(screen.getByText(/"file_path": "\{output_folder\}\/brief.md"/)).not.toBeVisible();
    await user.click(screen.getByText('Wrote', { exact: false }));
    expect(details).toHaveAttribute('open');
    const args = screen.getByText(/"file_path": "\{output_folder\}\/brief.md"/);
    expect(args).toBeVisible();
    expect(args).toHaveAttribute('tabindex', '0');
    // Long values are cut so a big write never floods the page.
    expect(args.textContent).toContain('more characters');
    expect(args.textContent!.length).toBeLessThan(2000);
    expect(screen.getByText(/"bytes_written": 5000/)).toBeVisible();
  });
});
