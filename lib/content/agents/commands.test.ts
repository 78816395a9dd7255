import { describeAmbiguity, matchCommand, resolveCommand } from './commands';
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

const bmad = parseAgentFile(`<agent id="pm" name="John" title="PM"><menu>
  <item cmd="MH or fuzzy match on menu or help">[MH] Redisplay Menu Help</item>
  <item cmd="CH or fuzzy match on chat">[CH] Chat with the Agent about anything</item>
  <item type="multi">No trigger of its own<handler match="x" exec="x.md"></handler></item>
  <item cmd="CP or fuzzy match on create-prd" exec="prd.md">[CP] Create PRD</item>
  <item cmd="EP or fuzzy match on edit-prd" exec="edit.md">[EP] Edit PRD</item>
  <item cmd="CC or fuzzy match on correct-course" workflow="cc/workflow.yaml">[CC] Course Correction</item>
  <item cmd="DA or fuzzy match on exit, leave, goodbye or dismiss agent">[DA] Dismiss Agent</item>
</menu></agent>`);

describe('resolveCommand on a BMAD menu', () => {
  it.each([
    ['*CP', '*CP', 'code', undefined],
    ['CP', '*CP', 'code', undefined],
    ['cp', '*CP', 'code', undefined],
    ['/CP', '*CP', 'code', undefined],
    ['*create-prd', '*CP', 'name', undefined],
    ['create-prd', '*CP', 'name', undefined],
    ['CREATE-PRD', '*CP', 'name', undefined],
    ['/create-prd', '*CP', 'name', undefined],
    ['*CP my app idea', '*CP', 'code', 'my app idea'],
    ['*create-prd  a todo app\nfor teams', '*CP', 'name', 'a todo app\nfor teams'],
    ['4', '*CP', 'number', undefined],
    ['#6', '*CC', 'number', undefined],
    ['1', '*MH', 'number', undefined],
    ['7.', '*DA', 'number', undefined],
    ['help', '*MH', 'alias', undefined],
    ['*menu', '*MH', 'name', undefined],
    ['goodbye', '*DA', 'alias', undefined],
    ['dismiss agent', '*DA', 'alias', undefined],
    ['*dismiss   agent', '*DA', 'alias', undefined],
    ['*DA dismiss agent', '*DA', 'code', 'dismiss agent'],
    ['creat-prd', '*CP', 'near-miss', undefined],
    ['create-prdd', '*CP', 'near-miss', undefined],
    ['craete-prd', '*CP', 'near-miss', undefined],
    ['create-pxd', '*CP', 'near-miss', undefined],
    ['*corect-course now please', '*CC', 'near-miss', 'now please'],
    ['*goodby', '*DA', 'near-miss', undefined],
    ['/leavee', '*DA', 'near-miss', undefined],
  ])('%j → %s by %s', (message, cmd, by, userInput) => {
    const r = resolveCommand(bmad, message);
    expect(r.kind).toBe('command');
    if (r.kind !== 'command') return;
    expect(r.match.command.cmd).toBe(cmd);
    expect(r.match.by).toBe(by);
    expect(r.match.userInput).toBe(userInput);
    expect(matchCommand(bmad, message)?.command.cmd).toBe(cmd);
  });

  it('returns the position in the command list beside the menu number', () => {
    const m = matchCommand(bmad, '4');
    expect(m?.index).toBe(2);
    expect(m?.command.number).toBe(4);
  });

  it.each([
    ['3', 'the menu item without a trigger'],
    ['8', 'past the end'],
    ['C', 'part of a code'],
    ['CPX', 'a near miss of a code'],
    ['*CQ', 'a near miss of a code'],
    ['chet', 'a near miss of a short name'],
    ['hel', 'a near miss of a short alias'],
    ['create-prd for my app', 'a bare name followed by text'],
    ['CP please', 'a bare code followed by text'],
    ['crate-prod', 'two edits away'],
    ['* create-prd', 'a markdown bullet'],
    ['create', 'a prefix of a name'],
    ['goodby', 'a bare near miss of a single-word name'],
  ])('%j is not a command (%s)', (message) => {
    expect(resolveCommand(bmad, message)).toEqual({ kind: 'none' });
    expect(matchCommand(bmad, message)).toBeNull();
  });

  it('reports a near miss equally close to two names as ambiguous, and runs neither', () => {
    // One substitution from both "create-prd" and "crewte-prd".
    const twins = parseAgentFile(`<agent id="t"><menu>
      <item cmd="CP or fuzzy match on create-prd" exec="a.md">[CP] Create</item>
      <item cmd="CW or fuzzy match on crewte-prd" exec="b.md">[CW] Crew</item>
      <item cmd="XX or fuzzy match on elsewhere">[XX] Other</item>
    </menu></agent>`);
    const r = resolveCommand(twins, '*crexte-prd for my shop');
    expect(r.kind).toBe('ambiguous');
    if (r.kind !== 'ambiguous') return;
    expect(r.typed).toBe('crexte-prd');
    expect(r.userInput).toBe('for my shop');
    expect(r.candidates.map((c) => [c.command.cmd, c.index, c.by])).toEqual([
      ['*CP', 0, 'near-miss'],
      ['*CW', 1, 'near-miss'],
    ]);
    expect(matchCommand(twins, '*crexte-prd for my shop')).toBeNull();
    // An exact name wins over a near miss of another.
    expect(matchCommand(twins, 'create-prd')?.command.cmd).toBe('*CP');
    const note = describeAmbiguity(r);
    expect(note).toContain('"crexte-prd"');
    expect(note).toContain('1. *CP (create-prd): Create');
    expect(note).toContain('2. *CW (crewte-prd): Crew');
    expect(describeAmbiguity(resolveCommand(twins, 'CP'))).toBe('');
  });

  it('reports two items with the same name as ambiguous; a code outranks a name', () => {
    const same = parseAgentFile(`<agent id="s"><menu>
      <item cmd="AB or fuzzy match on review" exec="a.md">[AB] A</item>
      <item cmd="CD or fuzzy match on review" exec="b.md">[CD] B</item>
      <item cmd="EF or fuzzy match on ab" exec="c.md">[EF] C</item>
    </menu></agent>`);
    const r = resolveCommand(same, 'review');
    expect(r.kind === 'ambiguous' && r.candidates.map((c) => c.command.cmd)).toEqual(['*AB', '*CD']);
    expect(matchCommand(same, 'ab')?.command.cmd).toBe('*AB');
  });
});

describe('resolveCommand on alpha-style menus', () => {
  const alpha = parseAgentFile(`<agent id="sm"><menu>
    <item cmd="*help">Show numbered menu</item>
    <item cmd="*workflow-init" workflow="{project-root}/bmad/bmm/workflows/workflow-init/workflow.yaml">Start a new sequenced workflow path</item>
    <item cmd="*create-story" workflow="cs.yaml">Create a Draft Story</item>
    <item cmd="*trace" workflow="trace.yaml">Map requirements to tests</item>
    <item cmd="*exit">Exit with confirmation</item>
  </menu></agent>`);

  it.each([
    ['*workflow-init', '*workflow-init', 'name'],
    ['workflow-init', '*workflow-init', 'name'],
    ['/Workflow-Init', '*workflow-init', 'name'],
    ['workflow-inti', '*workflow-init', 'near-miss'],
    ['*create-stroy', '*create-story', 'near-miss'],
    ['2', '*workflow-init', 'number'],
    ['exit', '*exit', 'name'],
    ['*tarce', '*trace', 'near-miss'],
  ])('%j → %s by %s', (message, cmd, by) => {
    expect(matchCommand(alpha, message)).toMatchObject({ command: { cmd }, by });
  });

  it('has no codes', () => {
    expect(alpha.commands.every((c) => c.code === undefined)).toBe(true);
    expect(matchCommand(alpha, 'exi')).toBeNull();
  });

  it('leaves a bare word one edit from a single-word name to the workflow that asked', () => {
    expect(matchCommand(alpha, 'track')).toBeNull();
    expect(matchCommand(alpha, 'trace')?.command.cmd).toBe('*trace');
  });
});
