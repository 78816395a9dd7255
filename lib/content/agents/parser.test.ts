import { isWorkflowCommand, normalizeCmd, parseAgentFile, parseTrigger } from './parser';

const CMDS_STYLE = `# Analyst

Some intro text with a stray < sign and Array<string> in prose.

\`\`\`xml
<agent id="analyst" name="Mary" title="Business Analyst" icon="📊">
  <persona>
    <role>Strategic analyst</role>
    <identity>Ten years of market research.
      Loves data &amp; stories.</identity>
    <communication_style>Curious &lt;and&gt; precise</communication_style>
    <principles>
      - Evidence first
      - Say &quot;unknown&quot; when unsure
    </principles>
  </persona>
  <critical-actions>
    <i>Load into memory {bundle-root}/config.yaml and set variables: user_name, communication_language</i>
    <i>Remember the user's name is {user_name}</i>
  </critical-actions>
  <cmds>
    <c cmd="*help">Show numbered cmd list</c>
    <c cmd="*plan" run-workflow="{bundle-root}/workflows/plan/workflow.yaml">Create a plan</c>
    <c cmd="research" exec='{bundle-root}/tasks/research.md' tmpl="{bundle-root}/templates/r.md">Run   research
      on a topic</c>
    <c cmd="*todo" run-workflow="todo">Not built yet</c>
    <c cmd="*brainstorm" action="#brain">Brainstorm</c>
    <c cmd="*exit">Exit</c>
  </cmds>
  <prompts>
    <prompt id="brain">Generate ten ideas about {topic}.</prompt>
  </prompts>
  <custom-thing mode="x">kept as is</custom-thing>
</agent>
\`\`\`
`;

const MENU_STYLE = `<!-- header comment with <agent id="fake"> inside -->
<agent id='pm' name='John' title='Product Manager'>
<persona><role>PM</role><identity>Ships things</identity><communication_style>Terse</communication_style><principles>Users first</principles></persona>
<activation critical="MANDATORY">
  <step n="1">Load persona</step>
  <step n="2">Show menu</step>
</activation>
<greeting>
  <message>Hello {user_name}, I am John.</message>
</greeting>
<menu>
  <item cmd="*help">Help</item>
  <item cmd="*prd" workflow="{bundle-root}/workflows/prd/workflow.yaml">Create PRD</item>
  <item cmd="*validate" validate-workflow="{bundle-root}/workflows/prd/workflow.yaml">Validate PRD</item>
  <item cmd="*data" data="{bundle-root}/data/x.csv">Data &amp; more</item>
  <item cmd="*tmpl" tmpl="{bundle-root}/templates/t.md">Template only</item>
  <item cmd="*act" action="Summarise the doc">Inline action</item>
  <item cmd="/slash">Slash style</item>
  <item cmd="*prd" workflow="dup">Duplicate is dropped</item>
</menu>
</agent>`;

describe('parseAgentFile', () => {
  it('parses the <cmds><c> style inside an xml fence', () => {
    const a = parseAgentFile(CMDS_STYLE);
    expect(a).toMatchObject({ id: 'analyst', name: 'Mary', title: 'Business Analyst', icon: '📊' });
    expect(a.persona.role).toBe('Strategic analyst');
    expect(a.persona.identity).toBe('Ten years of market research.\nLoves data & stories.');
    expect(a.persona.communication_style).toBe('Curious <and> precise');
    expect(a.persona.principles).toBe('- Evidence first\n- Say "unknown" when unsure');
    expect(a.criticalActions).toEqual([
      'Load into memory {bundle-root}/config.yaml and set variables: user_name, communication_language',
      "Remember the user's name is {user_name}",
    ]);
    expect(a.commands.map((c) => [c.cmd, c.kind, c.target])).toEqual([
      ['*help', 'none', ''],
      ['*plan', 'run-workflow', '{bundle-root}/workflows/plan/workflow.yaml'],
      ['*research', 'exec', '{bundle-root}/tasks/research.md'],
      ['*todo', 'run-workflow', 'todo'],
      ['*brainstorm', 'prompt', '#brain'],
      ['*exit', 'none', ''],
    ]);
    expect(a.commands[2].description).toBe('Run research on a topic');
    expect(a.commands[2].attrs.tmpl).toBe('{bundle-root}/templates/r.md');
    expect(a.prompts).toEqual([{ id: 'brain', content: 'Generate ten ideas about {topic}.' }]);
    expect(a.extra).toEqual([{ name: 'custom-thing', attrs: { mode: 'x' }, text: 'kept as is' }]);
    expect(a.greeting).toBeUndefined();
    expect(a.activation).toBeUndefined();
    expect(a.raw).toBe(CMDS_STYLE);
    expect(a.problems).toEqual([]);
  });

  it('parses the <menu><item> style with single quotes, greeting and activation', () => {
    const a = parseAgentFile(MENU_STYLE);
    expect(a).toMatchObject({ id: 'pm', name: 'John', title: 'Product Manager' });
    expect(a.icon).toBeUndefined();
    expect(a.persona).toEqual({ role: 'PM', identity: 'Ships things', communication_style: 'Terse', principles: 'Users first' });
    expect(a.greeting).toBe('Hello {user_name}, I am John.');
    expect(a.activation?.steps).toEqual(['Load persona', 'Show menu']);
    expect(a.activation?.text).toContain('<step n="2">Show menu</step>');
    expect(a.commands.map((c) => [c.cmd, c.kind])).toEqual([
      ['*help', 'none'],
      ['*prd', 'workflow'],
      ['*validate', 'validate-workflow'],
      ['*data', 'data'],
      ['*tmpl', 'tmpl'],
      ['*act', 'action'],
      ['*slash', 'none'],
    ]);
    expect(a.commands[1].target).toBe('{bundle-root}/workflows/prd/workflow.yaml');
    expect(a.commands[3].description).toBe('Data & more');
    expect(a.commands[5].target).toBe('Summarise the doc');
  });

  it('decodes numeric entities in attributes and text', () => {
    const a = parseAgentFile('<agent id="x" name="A &amp; B" title="&#84;&#x69;tle"><cmds><c cmd="*go">Go &gt; now</c></cmds></agent>');
    expect(a.name).toBe('A & B');
    expect(a.title).toBe('Title');
    expect(a.commands[0].description).toBe('Go > now');
  });

  it('tolerates missing parts, unclosed tags and attributes containing ">"', () => {
    const a = parseAgentFile('<agent id="loose" name="L" title="T">\n<persona><role>Only a role <b>bold</persona>\n<cmds><c cmd="*go" action="a > b">Go</c>\n');
    expect(a.id).toBe('loose');
    expect(a.persona).toEqual({ role: 'Only a role <b>bold', identity: '', communication_style: '', principles: '' });
    expect(a.criticalActions).toEqual([]);
    expect(a.commands).toEqual([{ cmd: '*go', name: 'go', number: 1, description: 'Go', kind: 'action', target: 'a > b', attrs: { cmd: '*go', action: 'a > b' } }]);
    expect(a.greeting).toBeUndefined();
    expect(a.prompts).toBeUndefined();
  });

  it('finds commands without a <cmds>/<menu> wrapper and critical actions written as a list', () => {
    const a = parseAgentFile('<agent id="w" name="W" title="T"><critical-actions>\n- First\n- Second\n</critical-actions><c cmd="one">1</c><item cmd="two" exec="x">2</item></agent>');
    expect(a.criticalActions).toEqual(['First', 'Second']);
    expect(a.commands.map((c) => c.cmd)).toEqual(['*one', '*two']);
  });

  it('ignores comments and CDATA markers, keeping CDATA text', () => {
    const a = parseAgentFile('<agent id="c" name="C" title="T"><persona><role><!-- hidden -->Visible <![CDATA[a < b & c]]></role></persona><cmds><c cmd="*x">X</c></cmds></agent>');
    expect(a.persona.role).toBe('Visible a < b & c');
  });

  it('reports a file without an <agent> element but keeps the raw text', () => {
    const a = parseAgentFile('# Just markdown\n\nNo agent here.');
    expect(a.problems).toEqual(['no <agent> element found']);
    expect(a.raw).toBe('# Just markdown\n\nNo agent here.');
    expect(a.commands).toEqual([]);
    expect(parseAgentFile('').problems).toEqual(['no <agent> element found']);
  });

  it('reports an agent without id or commands', () => {
    const a = parseAgentFile('<agent name="N"><persona/></agent>');
    expect(a.problems).toHaveLength(2);
    expect(a.id).toBe('');
  });

  it('prefers the <agent> that has an id when prose mentions another', () => {
    const a = parseAgentFile('Write an <agent> tag like below.\n\n<agent id="real" name="R" title="T"><cmds><c cmd="*a">A</c></cmds></agent>');
    expect(a.id).toBe('real');
  });

  it('joins several greeting messages and falls back to plain greeting text', () => {
    expect(parseAgentFile('<agent id="g"><greeting><message>One</message><message>Two</message></greeting></agent>').greeting).toBe('One\n\nTwo');
    expect(parseAgentFile('<agent id="g"><greeting>Plain hello</greeting></agent>').greeting).toBe('Plain hello');
  });

  it('is fast on a large file', () => {
    const big = MENU_STYLE.replace('<menu>', '<menu>' + '<item cmd="*x">x</item>'.repeat(2000) + '\n' + 'text '.repeat(50_000));
    const t = performance.now();
    const a = parseAgentFile(big);
    expect(a.commands.length).toBeGreaterThan(5);
    expect(performance.now() - t).toBeLessThan(500);
  });
});

describe('isWorkflowCommand', () => {
  it('accepts run-workflow and workflow with a real target', () => {
    expect(isWorkflowCommand({ kind: 'run-workflow', target: '{bundle-root}/w/workflow.yaml' })).toBe(true);
    expect(isWorkflowCommand({ kind: 'workflow', target: 'x.yaml' })).toBe(true);
  });
  it('rejects other kinds, empty and todo targets', () => {
    expect(isWorkflowCommand({ kind: 'workflow', target: 'TODO' })).toBe(false);
    expect(isWorkflowCommand({ kind: 'run-workflow', target: '  ' })).toBe(false);
    expect(isWorkflowCommand({ kind: 'validate-workflow', target: 'x.yaml' })).toBe(false);
    expect(isWorkflowCommand({ kind: 'exec', target: 'x.md' })).toBe(true);
    expect(isWorkflowCommand({ kind: 'exec', target: 'skill:bmad-create-prd' })).toBe(true);
    expect(isWorkflowCommand({ kind: 'exec', target: 'Summarise the brief' })).toBe(false);
    expect(isWorkflowCommand(null)).toBe(false);
  });
});

describe('normalizeCmd', () => {
  it('always yields one leading star', () => {
    expect(normalizeCmd('help')).toBe('*help');
    expect(normalizeCmd('*help')).toBe('*help');
    expect(normalizeCmd(' /plan ')).toBe('*plan');
    expect(normalizeCmd('**x')).toBe('*x');
    expect(normalizeCmd('')).toBe('');
  });
});

describe('parseTrigger', () => {
  it.each([
    ['CP or fuzzy match on create-prd', { cmd: '*CP', code: 'CP', name: 'create-prd' }],
    ['MH or fuzzy match on menu or help', { cmd: '*MH', code: 'MH', name: 'menu', aliases: ['help'] }],
    [
      'DA or fuzzy match on exit, leave, goodbye or dismiss agent',
      { cmd: '*DA', code: 'DA', name: 'exit', aliases: ['leave', 'goodbye', 'dismiss agent'] },
    ],
    ['  qd   OR fuzzy match on\n quick-dev ', { cmd: '*qd', code: 'qd', name: 'quick-dev' }],
    ['*CP or fuzzy match on *create-prd', { cmd: '*CP', code: 'CP', name: 'create-prd' }],
    ['*workflow-init', { cmd: '*workflow-init', name: 'workflow-init' }],
    ['/plan', { cmd: '*plan', name: 'plan' }],
    ['plan', { cmd: '*plan', name: 'plan' }],
  ])('%j', (raw, expected) => {
    expect(parseTrigger(raw)).toEqual(expected);
  });

  it('keeps a code whose names are missing, and rejects an empty trigger', () => {
    expect(parseTrigger('XY or fuzzy match on ')).toEqual({ cmd: '*XY', code: 'XY', name: 'XY' });
    expect(parseTrigger('  ')).toBeNull();
    expect(parseTrigger('*')).toBeNull();
  });

  it('does not read a longer first word as a code', () => {
    expect(parseTrigger('plans or fuzzy match on x')?.code).toBeUndefined();
  });
});

describe('BMAD menus', () => {
  const BMAD = `<agent id="pm.agent.yaml" name="John" title="Product Manager">
<activation critical="MANDATORY">
  <step n="1">Load persona</step>
  <step n="2">Show greeting, then display numbered list of
      ALL menu items from menu section</step>
  <step n="3">Accept a number or a trigger <example>\`*CP\`</example></step>
  <menu-handlers><handlers><handler type="exec">Read fully and follow the file</handler></handlers></menu-handlers>
  <rules><r>Stay in character</r></rules>
</activation>
<menu>
  <item cmd="MH or fuzzy match on menu or help">[MH] Redisplay Menu Help</item>
  <item type="multi">Several things<handler match="one" exec="x.md"></handler></item>
  <item cmd="CP or fuzzy match on create-prd" exec="{project-root}/_bmad/bmm/workflows/create-prd/workflow.md" data="{project-root}/_bmad/bmm/data/ctx.md">[CP] Create PRD: Expert led facilitation</item>
  <item cmd="CP or fuzzy match on create-prd-again" exec="dup.md">[CP] A duplicate code</item>
  <item cmd="XY or fuzzy match on other">[ZZ] Keeps a prefix that is not its code</item>
  <item cmd="DA or fuzzy match on exit, leave, goodbye or dismiss agent">[DA] Dismiss Agent</item>
</menu>
</agent>`;

  it('reads code, names, clean descriptions, data and menu numbers counting every item', () => {
    const a = parseAgentFile(BMAD);
    expect(a.problems).toEqual([]);
    expect(a.commands.map(({ cmd, code, name, aliases, number, description, kind }) => ({ cmd, code, name, aliases, number, description, kind }))).toEqual([
      { cmd: '*MH', code: 'MH', name: 'menu', aliases: ['help'], number: 1, description: 'Redisplay Menu Help', kind: 'none' },
      { cmd: '*CP', code: 'CP', name: 'create-prd', aliases: undefined, number: 3, description: 'Create PRD: Expert led facilitation', kind: 'exec' },
      { cmd: '*XY', code: 'XY', name: 'other', aliases: undefined, number: 5, description: '[ZZ] Keeps a prefix that is not its code', kind: 'none' },
      {
        cmd: '*DA',
        code: 'DA',
        name: 'exit',
        aliases: ['leave', 'goodbye', 'dismiss agent'],
        number: 6,
        description: 'Dismiss Agent',
        kind: 'none',
      },
    ]);
    expect(a.commands[1]).toMatchObject({
      target: '{project-root}/_bmad/bmm/workflows/create-prd/workflow.md',
      data: '{project-root}/_bmad/bmm/data/ctx.md',
      attrs: { cmd: 'CP or fuzzy match on create-prd' },
    });
    expect(a.commands[0].data).toBeUndefined();
  });

  it('exposes the activation steps in order, whitespace collapsed, and keeps the handlers in the text and raw', () => {
    const a = parseAgentFile(BMAD);
    expect(a.activation?.steps).toEqual([
      'Load persona',
      'Show greeting, then display numbered list of ALL menu items from menu section',
      'Accept a number or a trigger <example>`*CP`</example>',
    ]);
    expect(a.activation?.text).toContain('<menu-handlers>');
    expect(a.raw).toContain('<handler type="exec">Read fully and follow the file</handler>');
    expect(a.criticalActions).toEqual([]);
  });

  it('numbers the items of a bundle menu by their place, duplicates and items without a trigger included', () => {
    const a = parseAgentFile(MENU_STYLE);
    expect(a.commands.map((c) => c.number)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const b = parseAgentFile('<agent id="b"><menu><item>no trigger</item><item cmd="*one">One</item><item cmd="*one">Again</item><item cmd="*two">Two</item></menu></agent>');
    expect(b.commands.map((c) => [c.cmd, c.number])).toEqual([
      ['*one', 2],
      ['*two', 4],
    ]);
  });
});
