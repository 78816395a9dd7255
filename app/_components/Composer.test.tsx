import { fireEvent, render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { CommandSummary } from '@/types/api';
import { Composer } from './Composer';

const commands: CommandSummary[] = [
  { cmd: '*help', description: 'Show the menu' },
  { cmd: 'brainstorm', description: 'Run a brainstorming session' },
  { cmd: '*plan', description: 'Create a product brief' },
  { cmd: '*exit', description: 'Leave the agent' },
];

function setup(props: Partial<Parameters<typeof Composer>[0]> = {}) {
  const onSend = jest.fn().mockReturnValue(true);
  const onStop = jest.fn();
  const user = userEvent.setup();
  render(<Composer commands={commands} busy={false} onSend={onSend} onStop={onStop} {...props} />);
  const input = screen.getByTestId('composer-input') as HTMLTextAreaElement;
  return { onSend, onStop, user, input };
}

describe('Composer', () => {
  it('sends on Enter, clears, and keeps focus', async () => {
    const { onSend, user, input } = setup();
    await user.click(input);
    await user.type(input, 'Hello there{Enter}');
    expect(onSend).toHaveBeenCalledWith('Hello there');
    expect(input).toHaveValue('');
    expect(input).toHaveFocus();
  });

  it('adds a newline on Shift+Enter instead of sending', async () => {
    const { onSend, user, input } = setup();
    await user.type(input, 'line one{Shift>}{Enter}{/Shift}line two');
    expect(onSend).not.toHaveBeenCalled();
    expect(input).toHaveValue('line one\nline two');
  });

  it('never sends while an IME composition is active', () => {
    const { onSend, input } = setup();
    fireEvent.change(input, { target: { value: 'にほんご' } });
    fireEvent.keyDown(input, { key: 'Enter', isComposing: true });
    fireEvent.keyDown(input, { key: 'Enter', keyCode: 229 });
    expect(onSend).not.toHaveBeenCalled();
    fireEvent.keyDown(input, { key: 'Enter' });
    expect(onSend).toHaveBeenCalledWith('にほんご');
  });

  it('does not send empty text', async () => {
    const { onSend, user, input } = setup();
    await user.type(input, '   {Enter}');
    expect(onSend).not.toHaveBeenCalled();
    expect(screen.getByTestId('send-button')).toBeDisabled();
  });

  it('grows with its content up to a limit', () => {
    const { input } = setup();
    let height = 40;
    Object.defineProperty(input, 'scrollHeight', { configurable: true, get: () => height });
    height = 96;
    fireEvent.change(input, { target: { value: 'a\nb\nc\nd' } });
    expect(input.style.height).toBe('96px');
    height = 900;
    fireEvent.change(input, { target: { value: 'a\n'.repeat(60) } });
    expect(input.style.height).toBe('240px');
    expect(input.style.overflowY).toBe('auto');
  });

  it('shows Stop while busy and does not send', async () => {
    const { onSend, onStop, user, input } = setup({ busy: true });
    expect(screen.queryByTestId('send-button')).toBeNull();
    await user.type(input, 'next question{Enter}');
    expect(onSend).not.toHaveBeenCalled();
    await user.click(screen.getByTestId('stop-button'));
    expect(onStop).toHaveBeenCalled();
  });
});

describe('Command menu', () => {
  it('opens on / and on * at the start, listing every command', async () => {
    const { user, input } = setup();
    await user.type(input, '/');
    expect(screen.getByRole('listbox', { name: 'Commands' })).toBeInTheDocument();
    expect(screen.getAllByRole('option').map((o) => o.querySelector('.command-name')!.textContent)).toEqual(['*help', '*brainstorm', '*plan', '*exit']);
    expect(input).toHaveAttribute('aria-controls', screen.getByTestId('command-menu').id);
    await user.clear(input);
    await user.type(input, '*');
    expect(screen.getByRole('listbox')).toBeInTheDocument();
  });

  it('does not open for / in the middle of text', async () => {
    const { user, input } = setup();
    await user.type(input, 'a/b');
    expect(screen.queryByRole('listbox')).toBeNull();
  });

  it('filters as you type (name first, then description)', async () => {
    const { user, input } = setup();
    await user.type(input, '/pl');
    expect(screen.getAllByRole('option').map((o) => o.querySelector('.command-name')!.textContent)).toEqual(['*plan']);
    await user.clear(input);
    await user.type(input, '/brief');
    expect(screen.getAllByRole('option')).toHaveLength(1);
    expect(screen.getByRole('option')).toHaveTextContent('*plan');
  });

  it('moves with arrow keys (wrapping) and Enter picks into the box without sending', async () => {
    const { onSend, user, input } = setup();
    await user.type(input, '/');
    expect(screen.getAllByRole('option')[0]).toHaveAttribute('aria-selected', 'true');
    await user.keyboard('{ArrowDown}{ArrowDown}');
    expect(screen.getAllByRole('option')[2]).toHaveAttribute('aria-selected', 'true');
    expect(input.getAttribute('aria-activedescendant')).toBe(screen.getAllByRole('option')[2].id);
    await user.keyboard('{ArrowUp}{ArrowUp}{ArrowUp}');
    expect(screen.getAllByRole('option')[3]).toHaveAttribute('aria-selected', 'true');
    await user.keyboard('{ArrowDown}{ArrowDown}{Enter}');
    expect(input).toHaveValue('*brainstorm ');
    expect(screen.queryByRole('listbox')).toBeNull();
    expect(onSend).not.toHaveBeenCalled();
    await user.keyboard('{Enter}');
    expect(onSend).toHaveBeenCalledWith('*brainstorm ');
  });

  it('closes on Escape and then Enter sends what was typed', async () => {
    const { onSend, user, input } = setup();
    await user.type(input, '/he');
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('listbox')).toBeNull();
    expect(input).toHaveValue('/he');
    await user.keyboard('{Enter}');
    expect(onSend).toHaveBeenCalledWith('/he');
  });

  it('picks with the mouse', async () => {
    const { user, input } = setup();
    await user.type(input, '/');
    await user.click(screen.getByText('Leave the agent'));
    expect(input).toHaveValue('*exit ');
    expect(input).toHaveFocus();
  });

  it('closes when nothing matches so Enter sends the text', async () => {
    const { onSend, user, input } = setup();
    await user.type(input, '/zzz');
    expect(screen.queryByRole('listbox')).toBeNull();
    await user.keyboard('{Enter}');
    expect(onSend).toHaveBeenCalledWith('/zzz');
  });
});

describe('a command typed out in full', () => {
  it('is sent by Enter instead of being completed again', async () => {
    const onSend = jest.fn().mockResolvedValue(true);
    const user = userEvent.setup();
    render(<Composer commands={[{ cmd: '*CP', description: 'Create PRD' }, { cmd: '*VP', description: 'Validate PRD' }]} onSend={onSend} onStop={() => undefined} busy={false} />);
    await user.type(screen.getByTestId('composer-input'), '*CP{Enter}');
    expect(onSend).toHaveBeenCalledWith('*CP');
  });
});
