import { isWorkflowCommand, normalizeCmd, parseAgentFile } from './parser';

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
    expect(a.activation).toContain('<step n="2">Show menu</step>');
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
    expect(a.commands).toEqual([{ cmd: '*go', description: 'Go', kind: 'action', target: 'a > b', attrs: { cmd: '*go', action: 'a > b' } }]);
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
    expect(isWorkflowCommand({ kind: 'exec', target: 'x.md' })).toBe(false);
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
