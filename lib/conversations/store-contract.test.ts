import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ConversationStore, StoredMessage } from './types';
import { MemoryConversationStore } from './memory-store';
import { SqliteConversationStore } from './sqlite-store';
import { DEFAULT_TITLE } from './title';

// The same contract for both stores: the app must not behave differently under CONVERSATION_STORE=memory.
const tmpDirs: string[] = [];
afterAll(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

const factories: [string, () => ConversationStore][] = [
  ['MemoryConversationStore', () => new MemoryConversationStore()],
  [
    'SqliteConversationStore',
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conv-contract-'));
      tmpDirs.push(dir);
      return new SqliteConversationStore(path.join(dir, 'conversations.db'));
    },
  ],
];

const history = (): StoredMessage[] => [
  { id: 'sys_1', role: 'system', content: 'Loaded config: user_name=Ada', timestamp: '2025-01-01T00:00:00.000Z' },
  { id: 'msg_1', role: 'user', content: 'Plan a launch\nwith details ✨ and "quotes"', timestamp: '2025-01-01T00:00:01.000Z' },
  {
    id: 'msg_2',
    role: 'assistant',
    content: '',
    toolCalls: [
      { id: 'call_a', name: 'read_file', arguments: '{"file_path":"{bundle-root}/x.md"}' },
      { id: 'call_b', name: 'save_output', arguments: '{not json' },
    ],
    usage: { promptTokens: 120, completionTokens: 7 },
    timestamp: '2025-01-01T00:00:02.000Z',
  },
  {
    id: 'tool_1',
    role: 'tool',
    toolCallId: 'call_a',
    name: 'read_file',
    result: { ok: true, path: '{bundle-root}/x.md', content: 'line1\nline2', bytes: 11, lines: 2, truncated: false, nested: { a: [1, null, 'b'] } },
    timestamp: '2025-01-01T00:00:03.000Z',
  },
  {
    id: 'tool_2',
    role: 'tool',
    toolCallId: 'call_b',
    name: 'save_output',
    result: { ok: false, error: { code: 'E_INVALID_ARGS', message: 'arguments are not JSON' } },
    timestamp: '2025-01-01T00:00:04.000Z',
  },
  { id: 'msg_3', role: 'assistant', content: 'Here is the plan.', timestamp: '2025-01-01T00:00:05.000Z' },
  { id: 'msg_4', role: 'assistant', content: 'With tool calls but no usage', toolCalls: [], timestamp: '2025-01-01T00:00:06.000Z' },
];

describe.each(factories)('%s (ConversationStore contract)', (_name, make) => {
  let store: ConversationStore;
  beforeEach(() => {
    store = make();
  });
  afterEach(() => store.close?.());

  const newConv = (agentId = 'pm', extra: { id?: string; title?: string } = {}) => store.create({ agentId, bundleName: 'bmm', ...extra });

  describe('create / get', () => {
    it('creates an idle conversation with a UUID, the default title and zero usage', () => {
      const c = newConv();
      expect(c.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(c).toMatchObject({ agentId: 'pm', bundleName: 'bmm', title: DEFAULT_TITLE, status: 'idle', variables: {}, usage: { promptTokens: 0, completionTokens: 0 } });
      expect(Date.parse(c.createdAt)).not.toBeNaN();
      expect(c.updatedAt).toBe(c.createdAt);
      expect(store.get(c.id)).toEqual(c);
    });

    it('keeps a given id and title', () => {
      const c = newConv('pm', { id: 'conv_1', title: '  My   plan ' });
      expect(c.id).toBe('conv_1');
      expect(store.get('conv_1')?.title).toBe('My plan');
    });

    it('refuses a duplicate or unsafe id', () => {
      newConv('pm', { id: 'dup' });
      expect(() => newConv('pm', { id: 'dup' })).toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
      for (const bad of ['../x', 'a/b', 'a.b', '', 'con', 'x'.repeat(65)]) {
        expect(() => newConv('pm', { id: bad })).toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
      }
    });

    it('answers null for unknown and malformed ids', () => {
      expect(store.get('00000000-0000-4000-8000-000000000000')).toBeNull();
      expect(store.get('../../etc/passwd')).toBeNull();
      expect(store.get('')).toBeNull();
    });

    it('hands out copies, not its own state', () => {
      const c = newConv();
      store.setVariables(c.id, { user_name: 'Ada' });
      const got = store.get(c.id)!;
      got.variables.user_name = 'Mallory';
      got.usage.promptTokens = 99;
      expect(store.get(c.id)).toMatchObject({ variables: { user_name: 'Ada' }, usage: { promptTokens: 0 } });
    });
  });

  describe('list', () => {
    it('lists newest first, by activity, with counts and previews', () => {
      const a = newConv();
      const b = newConv();
      const c = newConv();
      expect(store.list().items.map((x) => x.id)).toEqual([c.id, b.id, a.id]);
      store.append(a.id, { id: 'm1', role: 'user', content: '  Hello\n  there  ', timestamp: 't' });
      store.append(a.id, { id: 'm2', role: 'tool', toolCallId: 'x', name: 'read_file', result: { ok: true }, timestamp: 't' });
      const page = store.list();
      expect(page.items.map((x) => x.id)).toEqual([a.id, c.id, b.id]);
      expect(page.items[0]).toMatchObject({ messageCount: 2, lastMessagePreview: 'Hello there' });
      expect(page.items[1]!.messageCount).toBe(0);
      expect(page.items[1]).not.toHaveProperty('lastMessagePreview');
      expect(page.nextCursor).toBeUndefined();
    });

    it('pages with a cursor without gaps or repeats', () => {
      const ids = Array.from({ length: 7 }, () => newConv().id).reverse();
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = store.list({ limit: 3, cursor });
        seen.push(...page.items.map((x) => x.id));
        cursor = page.nextCursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual(ids);
    });

    it('gives no next cursor when the last page is exactly full', () => {
      for (let i = 0; i < 4; i++) newConv();
      const first = store.list({ limit: 2 });
      const second = store.list({ limit: 2, cursor: first.nextCursor });
      expect(second.items).toHaveLength(2);
      expect(second.nextCursor).toBeUndefined();
    });

    it('filters by agent, paging included', () => {
      const pm = [newConv('pm'), newConv('pm'), newConv('pm')].map((c) => c.id).reverse();
      newConv('architect');
      const first = store.list({ agentId: 'pm', limit: 2 });
      const second = store.list({ agentId: 'pm', limit: 2, cursor: first.nextCursor });
      expect([...first.items, ...second.items].map((x) => x.id)).toEqual(pm);
      expect(second.nextCursor).toBeUndefined();
      expect(store.list({ agentId: 'nobody' }).items).toEqual([]);
    });

    it('clamps the page size and rejects a forged cursor', () => {
      for (let i = 0; i < 3; i++) newConv();
      expect(store.list({ limit: 0 }).items).toHaveLength(1);
      expect(store.list({ limit: 1000 }).items).toHaveLength(3);
      expect(() => store.list({ cursor: 'garbage' })).toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
    });
  });

  describe('rename / delete', () => {
    it('renames, and answers null for unknown ids', () => {
      const c = newConv();
      expect(store.rename(c.id, ' Launch\nplan ')).toMatchObject({ id: c.id, title: 'Launch plan' });
      expect(store.get(c.id)?.title).toBe('Launch plan');
      expect(store.rename('nope', 'x')).toBeNull();
      expect(() => store.rename(c.id, '   ')).toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
      expect(() => store.rename(c.id, 'x'.repeat(201))).toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
    });

    it('deletes a conversation with its messages', () => {
      const c = newConv();
      const other = newConv();
      for (const m of history()) store.append(c.id, m);
      store.append(other.id, { id: 'o', role: 'user', content: 'keep me', timestamp: 't' });
      expect(store.delete(c.id)).toBe(true);
      expect(store.get(c.id)).toBeNull();
      expect(store.messages(c.id)).toEqual([]);
      expect(store.list().items.map((x) => x.id)).toEqual([other.id]);
      expect(store.messages(other.id)).toHaveLength(1);
      expect(store.delete(c.id)).toBe(false);
      expect(store.delete('../x')).toBe(false);
    });
  });

  describe('messages', () => {
    it('returns every role in order, exactly as appended', () => {
      const c = newConv();
      const h = history();
      for (const m of h) store.append(c.id, m);
      expect(store.messages(c.id)).toStrictEqual(h);
      expect(store.list().items[0]).toMatchObject({ messageCount: h.length, lastMessagePreview: 'With tool calls but no usage' });
    });

    it('is not changed by mutating what was appended or returned', () => {
      const c = newConv();
      const m: StoredMessage = { id: 'm', role: 'user', content: 'a', timestamp: 't' };
      store.append(c.id, m);
      m.content = 'changed';
      store.messages(c.id)[0]!.id = 'changed';
      expect(store.messages(c.id)).toEqual([{ id: 'm', role: 'user', content: 'a', timestamp: 't' }]);
    });

    it('bumps updatedAt on append', () => {
      const c = newConv();
      store.append(c.id, { id: 'm', role: 'user', content: 'a', timestamp: 't' });
      expect(store.get(c.id)!.updatedAt > c.updatedAt).toBe(true);
    });

    it('refuses appends to unknown conversations and malformed messages', () => {
      expect(() => store.append('missing', { id: 'm', role: 'user', content: 'a', timestamp: 't' })).toThrow(
        expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }),
      );
      const c = newConv();
      expect(() => store.append(c.id, { id: 'm', role: 'robot', content: 'a', timestamp: 't' } as unknown as StoredMessage)).toThrow(TypeError);
      expect(() => store.append(c.id, { id: 'm', role: 'tool', toolCallId: 'x', name: 'n', timestamp: 't' } as unknown as StoredMessage)).toThrow(TypeError);
      expect(store.messages(c.id)).toEqual([]);
      expect(store.list().items[0]!.messageCount).toBe(0);
    });
  });

  describe('variables and usage', () => {
    it('stores variables and adds usage up', () => {
      const c = newConv();
      store.setVariables(c.id, { user_name: 'Ada', communication_language: 'English' });
      store.addUsage(c.id, { promptTokens: 100, completionTokens: 20 });
      store.addUsage(c.id, { promptTokens: 5, completionTokens: 1 });
      store.addUsage(c.id, { promptTokens: Number.NaN, completionTokens: -3 });
      expect(store.get(c.id)).toMatchObject({
        variables: { user_name: 'Ada', communication_language: 'English' },
        usage: { promptTokens: 105, completionTokens: 21 },
      });
      expect(store.list().items[0]!.usage).toEqual({ promptTokens: 105, completionTokens: 21 });
    });

    it('throws for unknown conversations', () => {
      expect(() => store.setVariables('missing', {})).toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
      expect(() => store.addUsage('missing', { promptTokens: 1, completionTokens: 1 })).toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
    });
  });

  describe('turn lock', () => {
    it('lets one turn run at a time', () => {
      const c = newConv();
      const lease = store.beginTurn(c.id)!;
      expect(lease).toEqual({ conversationId: c.id, token: expect.any(String) });
      expect(store.get(c.id)?.status).toBe('running');
      expect(store.beginTurn(c.id)).toBeNull();
      store.endTurn(lease, 'done');
      expect(store.get(c.id)?.status).toBe('idle');
      const again = store.beginTurn(c.id);
      expect(again).not.toBeNull();
      expect(again!.token).not.toBe(lease.token);
    });

    it('ignores a wrong or stale token', () => {
      const c = newConv();
      const first = store.beginTurn(c.id)!;
      store.endTurn({ conversationId: c.id, token: 'forged' }, 'done');
      expect(store.get(c.id)?.status).toBe('running');
      expect(store.beginTurn(c.id)).toBeNull();
      store.endTurn(first, 'done');
      const second = store.beginTurn(c.id)!;
      store.endTurn(first, 'interrupted'); // released twice: must not free the second turn
      expect(store.get(c.id)?.status).toBe('running');
      expect(store.beginTurn(c.id)).toBeNull();
      store.endTurn(second, 'done');
    });

    it('marks an interrupted turn and lets the conversation go on', () => {
      const c = newConv();
      store.endTurn(store.beginTurn(c.id)!, 'interrupted');
      expect(store.get(c.id)?.status).toBe('interrupted');
      const next = store.beginTurn(c.id)!;
      expect(store.get(c.id)?.status).toBe('running');
      store.endTurn(next, 'done');
      expect(store.get(c.id)?.status).toBe('idle');
    });

    it('locks per conversation', () => {
      const a = newConv();
      const b = newConv();
      expect(store.beginTurn(a.id)).not.toBeNull();
      expect(store.beginTurn(b.id)).not.toBeNull();
    });

    it('throws for unknown conversations', () => {
      expect(() => store.beginTurn('missing')).toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
      expect(() => store.endTurn({ conversationId: 'missing', token: 'x' }, 'done')).not.toThrow();
    });
  });

  describe('automatic title', () => {
    it('names an untitled conversation after its first user message, once', () => {
      const c = newConv();
      store.append(c.id, { id: 's', role: 'system', content: 'context', timestamp: 't' });
      expect(store.get(c.id)?.title).toBe(DEFAULT_TITLE);
      store.append(c.id, { id: 'u1', role: 'user', content: '\n  Write a PRD for a todo app  \nwith more lines', timestamp: 't' });
      expect(store.get(c.id)?.title).toBe('Write a PRD for a todo app');
      store.append(c.id, { id: 'u2', role: 'user', content: 'Something else', timestamp: 't' });
      expect(store.get(c.id)?.title).toBe('Write a PRD for a todo app');
      expect(store.list().items[0]!.title).toBe('Write a PRD for a todo app');
    });

    it('names a command conversation after the workflow it ran', () => {
      const c = newConv();
      store.append(c.id, { id: 'u1', role: 'user', content: '*create-prd', timestamp: 't' });
      expect(store.get(c.id)?.title).toBe('*create-prd');
      store.append(c.id, { id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'w', name: 'execute_workflow', arguments: '{}' }], timestamp: 't' });
      store.append(c.id, { id: 't1', role: 'tool', toolCallId: 'w', name: 'execute_workflow', result: { ok: true, workflow: { name: 'prd' } }, timestamp: 't' });
      expect(store.get(c.id)?.title).toBe('prd');
    });

    it('never overrides a given or renamed title', () => {
      const given = newConv('pm', { title: 'Mine' });
      store.append(given.id, { id: 'u', role: 'user', content: 'hello', timestamp: 't' });
      expect(store.get(given.id)?.title).toBe('Mine');
      const renamed = newConv();
      store.rename(renamed.id, 'Renamed');
      store.append(renamed.id, { id: 'u', role: 'user', content: 'hello', timestamp: 't' });
      expect(store.get(renamed.id)?.title).toBe('Renamed');
    });
  });
});
