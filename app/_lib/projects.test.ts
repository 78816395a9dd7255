import type { AgentSummary } from '@/types/api';
import { commandOfMessage } from './commands';
import { projectLabel, projectSubtitle, withCommandMarks } from './projects';

describe('project names', () => {
  it('name a project by its folder id, with its project_name beside it where it differs', () => {
    expect(projectLabel({ id: 'shop2', name: 'v612' })).toBe('shop2 (v612)');
    expect(projectLabel({ id: 'shop', name: 'shop' })).toBe('shop');
    expect(projectSubtitle({ id: 'shop', name: ' ' })).toBeUndefined();
  });
});

describe('broken commands', () => {
  const pm: AgentSummary = {
    id: 'pm',
    name: 'John',
    title: 'PM',
    bundleName: 'shop',
    projectId: 'shop',
    commands: [
      { cmd: '*PRD', description: 'PRD', code: 'PRD', name: 'prd' },
      { cmd: '*CE', description: 'Epics', problem: 'from the catalog' },
    ],
  };

  it("take the doctor's marks onto a list read without them, keeping the catalog's", () => {
    const marked = withCommandMarks([pm], [{ ...pm, commands: [{ ...pm.commands[0], problem: 'Broken: gone' }, { ...pm.commands[1], problem: 'other' }] }]);
    expect(marked[0].commands.map((c) => c.problem)).toEqual(['Broken: gone', 'from the catalog']);
    expect(withCommandMarks([pm], undefined)[0]).toBe(pm);
  });

  it('are recognised in a message that runs them, by their text, code or name', () => {
    expect(commandOfMessage(pm.commands, '*prd')?.cmd).toBe('*PRD');
    expect(commandOfMessage(pm.commands, ' PRD ')?.cmd).toBe('*PRD');
    expect(commandOfMessage(pm.commands, '*PRD plant shop')?.cmd).toBe('*PRD');
    expect(commandOfMessage(pm.commands, 'PRD plant shop')).toBeUndefined();
    expect(commandOfMessage(pm.commands, 'hello')).toBeUndefined();
  });
});
