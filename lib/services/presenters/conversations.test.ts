import { toDetailView, toMessageViews, toSummaryView } from './conversations';
import type { Conversation, StoredMessage } from '../../store/conversations/types';

const ts = '2026-01-01T00:00:00.000Z';

it('folds a turn into one assistant view keeping text and tool calls in order, hiding server context', () => {
  const history: StoredMessage[] = [
    { id: 's', role: 'system', content: 'critical', timestamp: ts },
    { id: 'u', role: 'user', content: '*plan', timestamp: ts },
    { id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'execute_workflow', arguments: '{"workflow_path":"w"}' }], timestamp: ts },
    { id: 't1', role: 'tool', toolCallId: 'c1', name: 'execute_workflow', result: { ok: true }, timestamp: ts },
    { id: 'a2', role: 'assistant', content: 'Reading the template.', toolCalls: [{ id: 'c2', name: 'read_file', arguments: 'not json' }], timestamp: ts },
    { id: 't2', role: 'tool', toolCallId: 'c2', name: 'read_file', result: { ok: false, error: { code: 'ENOENT', message: 'x' } }, timestamp: ts },
    { id: 'a3', role: 'assistant', content: 'What is your idea?', timestamp: ts },
  ];
  const views = toMessageViews(history);
  expect(views.map((v) => v.role)).toEqual(['user', 'assistant']);
  const a = views[1];
  expect(a.id).toBe('a3');
  expect(a.content).toBe('Reading the template.\n\nWhat is your idea?');
  expect(a.functionCalls).toEqual([
    { id: 'c1', name: 'execute_workflow', arguments: { workflow_path: 'w' }, result: { ok: true } },
    { id: 'c2', name: 'read_file', arguments: 'not json', result: { ok: false, error: { code: 'ENOENT', message: 'x' } } },
  ]);
  expect(a.parts).toEqual([
    { type: 'tool', toolCallId: 'c1' },
    { type: 'text', text: 'Reading the template.' },
    { type: 'tool', toolCallId: 'c2' },
    { type: 'text', text: 'What is your idea?' },
  ]);
});

it('names the project of a project conversation in its views, and no project for a bundle one', () => {
  const base: Conversation = {
    id: 'c',
    agentId: 'pm',
    bundleName: 'bmm',
    title: 'Plan',
    createdAt: ts,
    updatedAt: ts,
    status: 'idle',
    variables: {},
    usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 },
  };
  const project = { ...base, projectId: 'acme' };
  expect(toSummaryView({ ...project, messageCount: 0 })).toMatchObject({ id: 'c', projectId: 'acme' });
  expect(toDetailView(project, [])).toMatchObject({ id: 'c', projectId: 'acme', messages: [] });
  expect(toSummaryView({ ...base, messageCount: 0 })).not.toHaveProperty('projectId');
  expect(toDetailView(base, [])).not.toHaveProperty('projectId');
});

it('shows how the last turn ended in the summary and the detail, and nothing for an idle conversation', () => {
  const base: Conversation = {
    id: 'c',
    agentId: 'pm',
    bundleName: 'bmm',
    title: 'Plan',
    createdAt: ts,
    updatedAt: ts,
    status: 'failed',
    lastTurn: { status: 'failed', error: { code: 'E_LLM_UPSTREAM', message: 'The model endpoint failed (500).' }, at: ts },
    variables: {},
    usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 },
  };
  expect(toSummaryView({ ...base, messageCount: 1 })).toMatchObject({ status: 'failed', lastTurn: base.lastTurn });
  expect(toDetailView(base, [])).toMatchObject({ status: 'failed', lastTurn: base.lastTurn });
  const { lastTurn: _, ...idle } = { ...base, status: 'idle' as const };
  expect(toDetailView(idle, [])).not.toHaveProperty('lastTurn');
});

it("names a user message's author by their current name, the stored one for a person gone, and nobody without accounts", () => {
  const history: StoredMessage[] = [
    { id: 'u1', role: 'user', content: 'one', timestamp: ts, author: { id: 'p-ada', name: 'Ada' } },
    { id: 'a1', role: 'assistant', content: 'ok', timestamp: ts },
    { id: 'u2', role: 'user', content: 'two', timestamp: ts, author: { id: 'p-gone', name: 'Gone Person' } },
    { id: 'u3', role: 'user', content: 'three', timestamp: ts },
  ];
  const named = toMessageViews(history, { names: new Map([['p-ada', 'Ada Lovelace']]) }).filter((m) => m.role === 'user');
  expect(named.map((m) => m.author ?? null)).toEqual([{ id: 'p-ada', name: 'Ada Lovelace' }, { id: 'p-gone', name: 'Gone Person' }, null]);
  expect(toMessageViews(history).some((m) => m.author)).toBe(false);
});
