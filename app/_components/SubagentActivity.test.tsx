import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { chatReducer, initialChatState, reduceChunks } from '../_lib/chatReducer';
import { historyToMessages } from '../_lib/history';
import type { StreamChunk, ToolPart } from '../_lib/types';
import { ToolActivity } from './ToolActivity';

const INPUT = { instructions: 'Research the competitors\nList three with one line each.' };

const nested = (seq: number, toolName: string, input: unknown, state: string, extra: Record<string, unknown> = {}): StreamChunk => ({
  type: 'data-subagent',
  id: `spawn_1:${seq}`,
  data: { parentToolCallId: 'spawn_1', toolCallId: `call_${seq}`, toolName, input, step: seq + 1, state, ...extra },
});

/** The live turn: the spawn call, its subagent's calls as they stream, then (optionally) its result. */
function liveTool(chunks: StreamChunk[]): ToolPart {
  const submitted = chatReducer(initialChatState, { type: 'submit', text: 'go', userMessageId: 'u1', assistantMessageId: 'a1' });
  const state = reduceChunks(submitted, [
    { type: 'start', messageId: 'a1' },
    { type: 'tool-input-available', toolCallId: 'spawn_1', toolName: 'spawn_subagent', input: INPUT, dynamic: true },
    ...chunks,
  ]);
  return state.messages[1].parts[0] as ToolPart;
}

describe('SubagentActivity', () => {
  it('is one collapsed line for the spawn call that opens onto the calls streaming in', async () => {
    const user = userEvent.setup();
    const part = liveTool([
      nested(0, 'read_file', { file_path: '{output_folder}/notes.md' }, 'running'),
      nested(1, 'search_files', { path: '{project-root}/docs', pattern: 'rival' }, 'running'),
      nested(0, 'read_file', { file_path: '{output_folder}/notes.md' }, 'done'),
    ]);
    render(<ToolActivity part={part} />);
    const card = screen.getByTestId('subagent-activity');
    expect(card).toHaveAttribute('data-state', 'running');
    expect(card).not.toHaveAttribute('open');
    expect(card.querySelector('summary')).toHaveTextContent('Subagent: Research the competitors — 2 steps');
    expect(card.querySelector('summary')).not.toHaveTextContent('List three');

    await user.click(screen.getByText(/Subagent: Research/));
    const items = within(screen.getByRole('list', { name: 'Subagent tool calls' })).getAllByRole('listitem');
    expect(items.map((li) => li.getAttribute('data-state'))).toEqual(['done', 'running']);
    expect(items[0]).toHaveTextContent('Read notes.md');
    expect(items[1]).toHaveTextContent('Searching docs for “rival”');
    expect(items[1]).toBeVisible();
  });

  it('shows the finished run from its result: steps, calls with failures, the answer', async () => {
    const user = userEvent.setup();
    const part = liveTool([
      nested(0, 'read_file', { file_path: 'a.md' }, 'done'),
      {
        type: 'tool-output-available',
        toolCallId: 'spawn_1',
        output: {
          ok: true,
          result: 'Acme, Globex, Initech.',
          steps: 3,
          usage: { promptTokens: 30, completionTokens: 5 },
          tool_calls: [
            { name: 'read_file', ok: true, args: { file_path: 'a.md' } },
            { name: 'read_file', ok: false, error: 'ENOENT', args: { file_path: 'b.md' } },
          ],
        },
      },
    ]);
    render(<ToolActivity part={part} />);
    const card = screen.getByTestId('subagent-activity');
    expect(card).toHaveAttribute('data-state', 'done');
    expect(card.querySelector('summary')).toHaveTextContent('Subagent: Research the competitors — 3 steps');
    await user.click(screen.getByText(/Subagent: Research/));
    const items = screen.getAllByRole('listitem');
    expect(items).toHaveLength(2);
    expect(items[1]).toHaveAttribute('data-state', 'failed');
    expect(items[1]).toHaveTextContent('Could not read b.md — ENOENT');
    expect(screen.getByText('Acme, Globex, Initech.')).toBeVisible();
  });

  it('shows the same after a reload, a run that hit its limit included', () => {
    const [, assistant] = historyToMessages([
      { id: 'u1', role: 'user', content: 'go', timestamp: '2026-01-01T00:00:00Z' },
      {
        id: 'm1',
        role: 'assistant',
        content: '',
        timestamp: '2026-01-01T00:00:01Z',
        functionCalls: [
          {
            id: 'spawn_1',
            name: 'spawn_subagent',
            arguments: JSON.stringify(INPUT),
            result: {
              ok: false,
              error: {
                code: 'E_SUBAGENT_LIMIT',
                message: 'The subagent used 2 model calls before it answered.',
                details: { result: 'Acme so far.', steps: 2, tool_calls: [{ name: 'list_files', ok: true, args: { path: '{project-root}' } }] },
              },
            },
          },
        ],
      },
    ]);
    render(<ToolActivity part={assistant.parts[0] as ToolPart} />);
    const card = screen.getByTestId('subagent-activity');
    expect(card).toHaveAttribute('data-state', 'failed');
    expect(card.querySelector('summary')).toHaveTextContent('Subagent: Research the competitors — 2 steps');
    expect(card).toHaveTextContent('The subagent used 2 model calls');
    expect(within(card).getByTestId('error-code')).toHaveTextContent('E_SUBAGENT_LIMIT');
    expect(screen.getByRole('listitem')).toHaveTextContent('Listed the project');
    expect(card).toHaveTextContent('Acme so far.');
  });

  it('a stopped turn leaves no nested call spinning', () => {
    const part = liveTool([nested(0, 'read_file', { file_path: 'a.md' }, 'running')]);
    render(<ToolActivity part={{ ...part, state: 'failed', errorText: 'Stopped.' }} />);
    const item = screen.getByRole('listitem', { hidden: true });
    expect(item).toHaveAttribute('data-state', 'failed');
    expect(item.querySelector('.spinner')).toBeNull();
  });

  it('ignores activity for a call it does not know', () => {
    const part = liveTool([{ type: 'data-subagent', id: 'x:0', data: { parentToolCallId: 'other', toolName: 'read_file', state: 'running' } }]);
    expect(part.nested).toBeUndefined();
  });
});
