import { buildSubagentPrompt, buildSystemPrompt, toModelMessages, type PromptAgent } from '.';
import type { StoredMessage } from '../../store/conversations/types';
import type { ToolResult } from '../../core/results';

const agent: PromptAgent = {
  id: 'pl',
  name: 'Maya',
  title: 'Product Lead',
  icon: '🧭',
  persona: { role: 'Product lead', identity: 'Ten years of product work', communication_style: 'Plain', principles: 'Users first' },
  commands: [
    { cmd: '*help', description: 'Show commands', kind: 'none', target: '' },
    { cmd: '*plan', description: 'Write a brief', kind: 'run-workflow', target: '{bundle-root}/workflows/brief/workflow.yaml' },
  ],
  raw: '<agent id="pl">…</agent>',
};

describe('buildSystemPrompt', () => {
  it('carries persona, commands with targets, tool rules and the whole agent text', () => {
    const p = buildSystemPrompt({ agent, bundleName: 'studio', toolNames: ['read_file', 'execute_workflow'] });
    expect(p).toContain('You are Maya, Product Lead');
    expect(p).toContain('- Role: Product lead');
    expect(p).toContain('*plan: Write a brief (run-workflow: {bundle-root}/workflows/brief/workflow.yaml)');
    expect(p).toMatch(/never pretend/i);
    expect(p).toContain('read_file, execute_workflow');
    expect(p).toContain(agent.raw);
  });

  it('lists a BMAD menu item by its code and its names', () => {
    const bmad: PromptAgent = {
      ...agent,
      commands: [
        { cmd: '*CP', code: 'CP', name: 'create-prd', description: 'Create PRD: Expert led facilitation', kind: 'exec', target: '{project-root}/_bmad/x/workflow.md' },
        { cmd: '*DA', code: 'DA', name: 'exit', aliases: ['leave', 'dismiss agent'], description: 'Dismiss Agent', kind: 'none', target: '' },
      ],
    };
    const p = buildSystemPrompt({ agent: bmad, bundleName: 'demo', toolNames: ['read_file'] });
    expect(p).toContain('- *CP create-prd: Create PRD: Expert led facilitation (exec: {project-root}/_bmad/x/workflow.md)');
    expect(p).toContain('- *DA exit (also: leave, dismiss agent): Dismiss Agent\n');
    expect(p).toContain('its code or its name');
    expect(buildSystemPrompt({ agent, bundleName: 'studio', toolNames: ['read_file'] })).not.toContain('its code or its name');
  });

  it('is byte-identical for the same agent, so providers can cache the prefix', () => {
    const a = buildSystemPrompt({ agent, bundleName: 'studio', toolNames: ['read_file'] });
    const b = buildSystemPrompt({ agent: { ...agent }, bundleName: 'studio', toolNames: ['read_file'] });
    expect(a).toBe(b);
  });
});

describe('toModelMessages', () => {
  const ts = '2026-01-01T00:00:00.000Z';
  it('merges leading server context into the one system message and keeps order', () => {
    const history: StoredMessage[] = [
      { id: 's', role: 'system', content: 'CRITICAL', timestamp: ts },
      { id: 'u', role: 'user', content: 'hi', timestamp: ts },
      { id: 'a', role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"file_path":"x"}' }], timestamp: ts },
      { id: 't', role: 'tool', toolCallId: 'c1', name: 'read_file', result: { ok: true, content: 'X' }, timestamp: ts },
      { id: 'a2', role: 'assistant', content: 'done', timestamp: ts },
    ];
    const out = toModelMessages('SYS', history);
    expect(out.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
    expect(out[0].content).toBe('SYS\n\nCRITICAL');
    expect(out[2]).toMatchObject({ content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"file_path":"x"}' } }] });
    expect(out[3]).toEqual({ role: 'tool', tool_call_id: 'c1', content: JSON.stringify({ ok: true, content: 'X' }) });
  });

  it('answers tool calls an interrupted turn left without results', () => {
    const history: StoredMessage[] = [
      { id: 'u', role: 'user', content: 'hi', timestamp: ts },
      { id: 'a', role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'a', arguments: '{}' }, { id: 'c2', name: 'b', arguments: '{}' }], timestamp: ts },
      { id: 't', role: 'tool', toolCallId: 'c1', name: 'a', result: { ok: true }, timestamp: ts },
      { id: 'u2', role: 'user', content: 'again', timestamp: ts },
    ];
    const out = toModelMessages('SYS', history);
    expect(out.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'user']);
    expect(out[4]).toMatchObject({ role: 'tool', tool_call_id: 'c2' });
    expect(String(out[4].content)).toContain('interrupted');
  });
});

describe('toModelMessages and repeated tool results', () => {
  const ts = '2026-01-01T00:00:00.000Z';
  const big: ToolResult = { ok: true, path: '{bundle-root}/big.md', content: 'x'.repeat(5000), sha256: 'abc' };
  const turn = (n: number, result: ToolResult): StoredMessage[] => [
    { id: `u${n}`, role: 'user', content: `read it ${n}`, timestamp: ts },
    { id: `a${n}`, role: 'assistant', content: '', toolCalls: [{ id: `c${n}`, name: 'read_file', arguments: '{}' }], timestamp: ts },
    { id: `t${n}`, role: 'tool', toolCallId: `c${n}`, name: 'read_file', result, timestamp: ts },
  ];

  it('sends a large unchanged result once and points later copies at it, keeping the prefix stable', () => {
    const one = toModelMessages('SYS', turn(1, big));
    const two = toModelMessages('SYS', [...turn(1, big), ...turn(2, big)]);
    expect(two.slice(0, one.length)).toEqual(one);
    expect(String(two[3].content)).toContain('x'.repeat(5000));
    expect(JSON.parse(String(two[6].content))).toMatchObject({ ok: true, path: '{bundle-root}/big.md', unchanged: true });
  });

  it('sends changed or small results in full', () => {
    const changed: ToolResult = { ...big, content: 'y'.repeat(5000), sha256: 'def' };
    const small: ToolResult = { ok: true, content: 'tiny' };
    const out = toModelMessages('SYS', [...turn(1, big), ...turn(2, changed), ...turn(3, small), ...turn(4, small)]);
    expect(String(out[6].content)).toContain('y'.repeat(5000));
    expect(JSON.parse(String(out[12].content))).toEqual(small);
  });
});

describe('buildSubagentPrompt', () => {
  it('is the task and how to work on it, with the mounts of the conversation and its step limit', () => {
    const p = buildSubagentPrompt({ instructions: '  Find the PRD.\nSay where it is.  ', toolNames: ['read_file', 'list_files'], maxSteps: 3, project: { writable: ['docs'] } });
    expect(p).toMatch(/^You are a subagent/);
    expect(p).toContain('do not ask any');
    expect(p).toContain('{project-root}/docs/...');
    expect(p).toContain('at most 3 model calls');
    expect(p).toContain('Your tools: read_file, list_files.');
    expect(p.endsWith('## Your task\nFind the PRD.\nSay where it is.')).toBe(true);
    expect(p).not.toContain('Persona');
    const bundle = buildSubagentPrompt({ instructions: 'x', toolNames: [], maxSteps: 1 });
    expect(bundle).toContain("{output_folder}/... is this conversation's output folder");
    expect(bundle).toContain('at most 1 model call;');
  });
});
