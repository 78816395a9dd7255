import { render, screen, within } from '@testing-library/react';
import type { UIMessage } from '../_lib/types';
import { MessageList } from './MessageList';

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
