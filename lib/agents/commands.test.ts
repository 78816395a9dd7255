import { matchCommand } from './commands';
import { parseAgentFile } from './parser';

const agent = parseAgentFile(`<agent id="a" name="A" title="T"><cmds>
  <c cmd="*help">Help</c>
  <c cmd="*plan" run-workflow="{bundle-root}/workflows/plan/workflow.yaml">Plan</c>
  <c cmd="*create-prd" workflow="x">PRD</c>
</cmds></agent>`);

describe('matchCommand', () => {
  it.each([
    ['*plan', '*plan', undefined],
    ['plan', '*plan', undefined],
    ['/plan', '*plan', undefined],
    ['  *PLAN  ', '*plan', undefined],
    ['*Plan a todo app\nfor teams', '*plan', 'a todo app\nfor teams'],
    ['/plan   quick one ', '*plan', 'quick one'],
    ['*create-prd', '*create-prd', undefined],
    ['1', '*help', undefined],
    ['2', '*plan', undefined],
    ['3.', '*create-prd', undefined],
  ])('%j → %s', (message, cmd, userInput) => {
    const m = matchCommand(agent, message);
    expect(m?.command.cmd).toBe(cmd);
    expect(m?.userInput).toBe(userInput);
  });

  it('returns the 0-based index', () => {
    expect(matchCommand(agent, '*plan')?.index).toBe(1);
    expect(matchCommand(agent, '1')?.index).toBe(0);
  });

  it.each(['plan my trip', '2 users', '0', '4', '*unknown', 'hello', '', '   ', '*', 'planning'])('%j is not a command', (message) => {
    expect(matchCommand(agent, message)).toBeNull();
  });

  it('handles agents without commands', () => {
    expect(matchCommand({ commands: [] }, '*plan')).toBeNull();
    expect(matchCommand(null, '1')).toBeNull();
  });
});
