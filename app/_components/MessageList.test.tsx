import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { UIMessage } from '../_lib/types';
import { MessageList } from './MessageList';

jest.mock('../_lib/mermaid', () => ({
  renderMermaid: jest.fn(async (source: string) => {
    if (source.includes('broken')) throw new Error('Parse error');
    return '<svg data-fake="1"><text>diagram</text></svg>';
  }),
}));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { renderMermaid } = require('../_lib/mermaid') as { renderMermaid: jest.Mock };

const messages: UIMessage[] = [
  { id: 'u1', role: 'user', parts: [{ type: 'text', id: 'u1t', text: 'Make a *plan*', state: 'done' }] },
  {
    id: 'a1',
    role: 'assistant',
    parts: [
      { type: 'text', id: 't0', text: 'First I read the workflow.', state: 'done' },
      { type: 'tool', toolCallId: 'c1', toolName: 'read_file', input: { file_path: '{bundle-root}/w.yaml' }, state: 'done', output: { ok: true } },
      { type: 'tool', toolCallId: 'c2', toolName: 'save_output', input: { file_path: '{output_folder}/brief.md' }, state: 'running' },
      { type: 'text', id: 't1', text: '## Result\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```js\nconst x = 1;\n```\n', state: 'streaming' },
    ],
  },
];

describe('MessageList', () => {
  it('renders user text verbatim and assistant text as markdown with GFM tables', () => {
    render(<MessageList messages={messages} activeMessageId={null} agentName="Analyst" />);
    expect(screen.getByTestId('message-user')).toHaveTextContent('Make a *plan*');
    const assistant = screen.getByTestId('message-assistant');
    expect(within(assistant).getByRole('heading', { name: 'Result' })).toBeInTheDocument();
    const table = within(assistant).getByRole('table');
    expect(within(table).getAllByRole('columnheader').map((c) => c.textContent)).toEqual(['a', 'b']);
    expect(within(assistant).getByText('const x = 1;')).toBeInTheDocument();
    expect(within(assistant).getByRole('button', { name: 'Copy code' })).toBeInTheDocument();
  });

  it('keeps text and tool parts in the order they arrived', () => {
    render(<MessageList messages={messages} activeMessageId={null} agentName="Analyst" />);
    const body = screen.getByTestId('message-assistant').querySelector('.msg-body')!;
    const order = Array.from(body.children).map((el) => {
      const tool = el.querySelector('[data-testid="tool-activity"]');
      return tool ? `tool:${tool.getAttribute('data-state')}` : el.className;
    });
    expect(order).toEqual(['markdown', 'tool:done', 'tool:running', 'markdown', 'msg-footer']);
  });

  it('shows a thinking line for an answer that has not started, and the greeting first', () => {
    render(
      <MessageList
        greeting="Hello, I am **Mary**."
        messages={[messages[0], { id: 'a2', role: 'assistant', parts: [] }]}
        activeMessageId="a2"
        agentName="Analyst"
      />,
    );
    expect(screen.getByTestId('message-greeting')).toHaveTextContent('Hello, I am Mary.');
    expect(within(screen.getByTestId('message-assistant')).getByText('Thinking…')).toBeInTheDocument();
  });

  it('copies a code block to the clipboard', async () => {
    const writeText = jest.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    render(<MessageList messages={messages} activeMessageId={null} agentName="Analyst" />);
    screen.getByRole('button', { name: 'Copy code' }).click();
    await screen.findByText('Copied');
    expect(writeText).toHaveBeenCalledWith('const x = 1;\n');
  });
});

const tool = (id: string, toolName: string, input: unknown, state: 'running' | 'done' | 'failed' = 'done', output: unknown = { ok: true }) => ({ type: 'tool' as const, toolCallId: id, toolName, input, state, output: state === 'running' ? undefined : output });

describe('MessageList: rich answers and actions', () => {
  const answer = (text: string, extra: Partial<UIMessage> = {}): UIMessage => ({ id: 'a', role: 'assistant', parts: [{ type: 'text', id: 't', text, state: 'done' }], ...extra });

  it('folds a long run of tool calls under one line with a counter, keeping written files in sight', async () => {
    const user = userEvent.setup();
    const onOpenFile = jest.fn();
    const parts: UIMessage['parts'] = [
      { type: 'text', id: 't0', text: 'Looking around.', state: 'done' },
      ...Array.from({ length: 11 }, (_, i) => tool(`r${i}`, 'read_file', { file_path: `{bundle-root}/f${i}.md` })),
      tool('bad', 'read_file', { file_path: '{bundle-root}/nope.md' }, 'failed'),
      tool('w', 'save_output', { file_path: '{output_folder}/brief.md' }, 'done', { ok: true, path: '{output_folder}/brief.md', bytes_written: 9 }),
      { type: 'text', id: 't1', text: 'Done.', state: 'done' },
    ];
    render(<MessageList messages={[{ id: 'a', role: 'assistant', parts }]} activeMessageId={null} agentName="Analyst" actions={{ canAct: true, onOpenFile }} />);
    const group = screen.getByTestId('tool-group');
    expect(group).toHaveAttribute('data-count', '13');
    expect(group.querySelector(':scope > summary')).toHaveTextContent('13 tool calls · 1 failed');
    expect(group).not.toHaveAttribute('open');
    const files = document.querySelector<HTMLElement>('.tool-group-files')!;
    await user.click(within(files).getByRole('button', { name: 'Open brief.md' }));
    expect(onOpenFile).toHaveBeenCalledWith('{output_folder}/brief.md');
  });

  it('keeps two tool calls as cards, and names the running one in a group', () => {
    const { rerender } = render(
      <MessageList messages={[{ id: 'a', role: 'assistant', parts: [tool('1', 'list_files', { path: '.' }), tool('2', 'list_files', { path: '.' })] }]} activeMessageId={null} agentName="A" />,
    );
    expect(screen.queryByTestId('tool-group')).toBeNull();
    rerender(
      <MessageList
        messages={[{ id: 'a', role: 'assistant', parts: [tool('1', 'list_files', { path: '.' }), tool('2', 'list_files', { path: '.' }), tool('3', 'read_file', { file_path: '{bundle-root}/x.md' }, 'running')] }]}
        activeMessageId="a"
        agentName="A"
      />,
    );
    expect(screen.getByTestId('tool-group').querySelector(':scope > summary')).toHaveTextContent('3 tool calls · Reading x.md…');
  });

  it('labels code blocks with their language and task-list boxes with their text', () => {
    render(<MessageList messages={[answer('```yaml\nkey: value\n```\n\n- [x] Write the brief\n- [ ] Review it\n')]} activeMessageId={null} agentName="A" />);
    const block = screen.getByTestId('codeblock');
    expect(block).toHaveAttribute('data-language', 'yaml');
    expect(within(block).getByText('yaml')).toHaveClass('codeblock-lang');
    const done = screen.getByRole('checkbox', { name: 'Write the brief (done)' });
    expect(done).toBeChecked();
    expect(screen.getByRole('checkbox', { name: 'Review it (to do)' })).not.toBeChecked();
  });

  it('draws mermaid diagrams once the text is complete, and shows the source when one cannot be drawn', async () => {
    renderMermaid.mockClear();
    const diagram = '```mermaid\nflowchart LR\n  A --> B\n```';
    const { rerender } = render(<MessageList messages={[{ id: 'a', role: 'assistant', parts: [{ type: 'text', id: 't', text: diagram, state: 'streaming' }] }]} activeMessageId="a" agentName="A" />);
    expect(screen.getByTestId('mermaid')).toHaveAttribute('data-state', 'pending');
    expect(renderMermaid).not.toHaveBeenCalled();
    rerender(<MessageList messages={[answer(diagram)]} activeMessageId={null} agentName="A" />);
    await waitFor(() => expect(screen.getByTestId('mermaid')).toHaveAttribute('data-state', 'rendered'));
    expect(renderMermaid).toHaveBeenCalledWith('flowchart LR\n  A --> B', false);
    expect(screen.getByRole('img', { name: 'Diagram (flowchart)' })).toBeInTheDocument();

    rerender(<MessageList messages={[answer('```mermaid\nbroken\n```')]} activeMessageId={null} agentName="A" />);
    await waitFor(() => expect(screen.getByTestId('mermaid')).toHaveAttribute('data-state', 'error'));
    expect(screen.getByText('This diagram could not be drawn; its source is below.')).toBeInTheDocument();
  });

  it('keeps short table cells on one line', () => {
    render(<MessageList messages={[answer('| Owner | Notes |\n|---|---|\n| Ada | ' + 'a long note that goes on and on past any short cell '.repeat(2) + '|')]} activeMessageId={null} agentName="A" />);
    expect(screen.getByRole('columnheader', { name: 'Owner' })).toHaveClass('cell-short');
    expect(screen.getByRole('cell', { name: 'Ada' })).toHaveClass('cell-short');
    expect(screen.getAllByRole('cell')[1]).not.toHaveClass('cell-short');
    expect(screen.getByTestId('table-wrap')).toHaveAttribute('tabindex', '0');
  });

  it('copies a whole message, user or assistant', async () => {
    // userEvent brings its own clipboard; ours goes in after it.
    const user = userEvent.setup();
    const writeText = jest.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    render(<MessageList messages={messages} activeMessageId={null} agentName="Analyst" />);
    await user.click(within(screen.getByTestId('message-user')).getByRole('button', { name: 'Copy message' }));
    expect(writeText).toHaveBeenLastCalledWith('Make a *plan*');
    await user.click(within(screen.getByTestId('message-assistant')).getByRole('button', { name: 'Copy message' }));
    expect(writeText).toHaveBeenLastCalledWith(expect.stringContaining('First I read the workflow.\n\n## Result'));
  });

  it('offers Regenerate on the last answer only and Edit only when a turn can start', () => {
    const two: UIMessage[] = [messages[0], { ...messages[1], id: 'a0' }, { id: 'u2', role: 'user', parts: [{ type: 'text', id: 'x', text: 'More', state: 'done' }] }, answer('Last')];
    const { rerender } = render(<MessageList messages={two} activeMessageId={null} agentName="A" actions={{ canAct: true, onRegenerate: jest.fn(), onEdit: jest.fn() }} />);
    expect(screen.getAllByTestId('regenerate')).toHaveLength(1);
    expect(within(screen.getAllByTestId('message-assistant')[1]).getByTestId('regenerate')).toBeInTheDocument();
    expect(screen.getAllByTestId('edit-message')).toHaveLength(2);
    rerender(<MessageList messages={two} activeMessageId={null} agentName="A" actions={{ canAct: false, onRegenerate: jest.fn(), onEdit: jest.fn() }} />);
    expect(screen.queryByTestId('regenerate')).toBeNull();
    expect(screen.queryByTestId('edit-message')).toBeNull();
  });

  it('shows usage and model under an answer', () => {
    render(<MessageList messages={[answer('Hi', { usage: { promptTokens: 5, completionTokens: 1 }, model: { profile: 'fast', model: 'gpt-4o-mini' } })]} activeMessageId={null} agentName="A" />);
    expect(screen.getByTestId('answer-meta')).toHaveTextContent('fast · 6 tokens');
  });
});
