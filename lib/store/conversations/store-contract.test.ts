import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { ConversationStore, StoredMessage } from './types';
import { MemoryConversationStore } from './memory-store';
import { SqliteConversationStore } from './sqlite-store';
import { PgConversationStore } from './pg-store';
import { DEFAULT_TITLE } from './title';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';

// The same contract for every store: the app must not behave differently under
// CONVERSATION_STORE=memory or DATABASE_URL=postgres://….
const tmpDirs: string[] = [];
let pgDatabase: Promise<TestDatabase> | null = null;
afterAll(async () => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
  if (pgDatabase) await (await pgDatabase).drop();
});

const factories: [string, () => ConversationStore | Promise<ConversationStore>][] = [
  ['MemoryConversationStore', () => new MemoryConversationStore()],
  [
    'SqliteConversationStore',
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conv-contract-'));
      tmpDirs.push(dir);
      return new SqliteConversationStore(path.join(dir, 'conversations.db'));
    },
  ],
  [
    'PgConversationStore',
    // One fresh database for the run; each case starts from empty tables.
    async () => {
      pgDatabase ??= createTestDatabase('contract');
      const store = new PgConversationStore((await pgDatabase).url, { leaseMs: 5000 });
      await store.ready;
      await truncateAll((await pgDatabase).url);
      return store;
    },
  ],
];

async function truncateAll(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('TRUNCATE conversations CASCADE').finally(() => client.end());
}

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
  beforeEach(async () => {
    store = await make();
  });
  afterEach(() => store.close());

  const newConv = (agentId = 'pm', extra: { id?: string; title?: string; projectId?: string } = {}) => store.create({ agentId, bundleName: 'bmm', ...extra });

  describe('create / get', () => {
    it('creates an idle conversation with a UUID, the default title and zero usage', async () => {
      const c = await newConv();
      expect(c.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(c).toMatchObject({ agentId: 'pm', bundleName: 'bmm', title: DEFAULT_TITLE, status: 'idle', variables: {}, usage: { promptTokens: 0, completionTokens: 0 } });
      expect(Date.parse(c.createdAt)).not.toBeNaN();
      expect(c.updatedAt).toBe(c.createdAt);
      expect(await store.get(c.id)).toEqual(c);
    });

    it('keeps a given id and title', async () => {
      const c = await newConv('pm', { id: 'conv_1', title: '  My   plan ' });
      expect(c.id).toBe('conv_1');
      expect((await store.get('conv_1'))?.title).toBe('My plan');
    });

    it('refuses a duplicate or unsafe id', async () => {
      await newConv('pm', { id: 'dup' });
      await expect(newConv('pm', { id: 'dup' })).rejects.toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
      for (const bad of ['../x', 'a/b', 'a.b', '', 'con', 'x'.repeat(65)]) {
        await expect(newConv('pm', { id: bad })).rejects.toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
      }
    });

    it('answers null for unknown and malformed ids', async () => {
      expect(await store.get('00000000-0000-4000-8000-000000000000')).toBeNull();
      expect(await store.get('../../etc/passwd')).toBeNull();
      expect(await store.get('')).toBeNull();
    });

    it('hands out copies, not its own state', async () => {
      const c = await newConv();
      await store.setVariables(c.id, { user_name: 'Ada' });
      const got = (await store.get(c.id))!;
      got.variables.user_name = 'Mallory';
      got.usage.promptTokens = 99;
      expect(await store.get(c.id)).toMatchObject({ variables: { user_name: 'Ada' }, usage: { promptTokens: 0 } });
    });
  });

  describe('list', () => {
    it('lists newest first, by activity, with counts and previews', async () => {
      const a = await newConv();
      const b = await newConv();
      const c = await newConv();
      expect((await store.list()).items.map((x) => x.id)).toEqual([c.id, b.id, a.id]);
      await store.append(a.id, { id: 'm1', role: 'user', content: '  Hello\n  there  ', timestamp: 't' });
      await store.append(a.id, { id: 'm2', role: 'tool', toolCallId: 'x', name: 'read_file', result: { ok: true }, timestamp: 't' });
      const page = await store.list();
      expect(page.items.map((x) => x.id)).toEqual([a.id, c.id, b.id]);
      expect(page.items[0]).toMatchObject({ messageCount: 2, lastMessagePreview: 'Hello there' });
      expect(page.items[1]!.messageCount).toBe(0);
      expect(page.items[1]).not.toHaveProperty('lastMessagePreview');
      expect(page.nextCursor).toBeUndefined();
    });

    it('pages with a cursor without gaps or repeats', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push((await newConv()).id);
      ids.reverse();
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.list({ limit: 3, cursor });
        seen.push(...page.items.map((x) => x.id));
        cursor = page.nextCursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual(ids);
    });

    it('gives no next cursor when the last page is exactly full', async () => {
      for (let i = 0; i < 4; i++) await newConv();
      const first = await store.list({ limit: 2 });
      const second = await store.list({ limit: 2, cursor: first.nextCursor });
      expect(second.items).toHaveLength(2);
      expect(second.nextCursor).toBeUndefined();
    });

    it('filters by agent, paging included', async () => {
      const pm = [await newConv('pm'), await newConv('pm'), await newConv('pm')].map((c) => c.id).reverse();
      await newConv('architect');
      const first = await store.list({ agentId: 'pm', limit: 2 });
      const second = await store.list({ agentId: 'pm', limit: 2, cursor: first.nextCursor });
      expect([...first.items, ...second.items].map((x) => x.id)).toEqual(pm);
      expect(second.nextCursor).toBeUndefined();
      expect((await store.list({ agentId: 'nobody' })).items).toEqual([]);
    });

    it('clamps the page size and rejects a forged cursor', async () => {
      for (let i = 0; i < 3; i++) await newConv();
      expect((await store.list({ limit: 0 })).items).toHaveLength(1);
      expect((await store.list({ limit: 1000 })).items).toHaveLength(3);
      await expect(store.list({ cursor: 'garbage' })).rejects.toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
    });
  });

  describe('projects', () => {
    it('keeps the project a conversation belongs to, in create, get, list and rename', async () => {
      const c = await newConv('pm', { projectId: 'acme.web_2-0' });
      expect(c).toMatchObject({ agentId: 'pm', bundleName: 'bmm', projectId: 'acme.web_2-0', title: DEFAULT_TITLE, status: 'idle' });
      expect(await store.get(c.id)).toEqual(c);
      expect((await store.list()).items[0]).toMatchObject({ id: c.id, projectId: 'acme.web_2-0' });
      expect(await store.rename(c.id, 'Renamed')).toMatchObject({ projectId: 'acme.web_2-0' });
    });

    it('gives a bundle conversation no projectId at all', async () => {
      const c = await newConv();
      expect(c).not.toHaveProperty('projectId');
      expect(await store.get(c.id)).not.toHaveProperty('projectId');
      expect((await store.list()).items[0]).not.toHaveProperty('projectId');
    });

    it('filters by project, paging included', async () => {
      const acme = [await newConv('pm', { projectId: 'acme' }), await newConv('dev', { projectId: 'acme' }), await newConv('pm', { projectId: 'acme' })];
      await newConv('pm', { projectId: 'other' });
      await newConv('pm');
      const first = await store.list({ projectId: 'acme', limit: 2 });
      const second = await store.list({ projectId: 'acme', limit: 2, cursor: first.nextCursor });
      expect([...first.items, ...second.items].map((x) => x.id)).toEqual(acme.map((c) => c.id).reverse());
      expect(second.nextCursor).toBeUndefined();
      expect((await store.list({ projectId: 'nowhere' })).items).toEqual([]);
    });

    it('filters by project and agent together, since agent ids repeat between projects', async () => {
      const pm = [await newConv('pm', { projectId: 'acme' }), await newConv('pm', { projectId: 'acme' })].map((c) => c.id).reverse();
      await newConv('dev', { projectId: 'acme' });
      const elsewhere = await newConv('pm', { projectId: 'other' });
      const bundle = await newConv('pm');
      const first = await store.list({ projectId: 'acme', agentId: 'pm', limit: 1 });
      const second = await store.list({ projectId: 'acme', agentId: 'pm', limit: 1, cursor: first.nextCursor });
      expect([...first.items, ...second.items].map((x) => x.id)).toEqual(pm);
      expect(second.nextCursor).toBeUndefined();
      expect((await store.list({ projectId: 'other', agentId: 'dev' })).items).toEqual([]);
      // The agent filter alone still spans projects and bundles.
      expect((await store.list({ agentId: 'pm' })).items.map((x) => x.id)).toEqual([bundle.id, elsewhere.id, ...pm]);
    });

    it('refuses an unsafe project id and stores nothing', async () => {
      for (const bad of ['', '.', '..', '../x', 'a/b', '.hidden', '-x', 'a b', 'x'.repeat(65), null, 7]) {
        await expect(newConv('pm', { projectId: bad as string })).rejects.toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
      }
      expect((await store.list()).items).toEqual([]);
      expect(await newConv('pm', { projectId: 'x'.repeat(64) })).toMatchObject({ projectId: 'x'.repeat(64) });
    });
  });

  describe('rename / delete', () => {
    it('renames, and answers null for unknown ids', async () => {
      const c = await newConv();
      expect(await store.rename(c.id, ' Launch\nplan ')).toMatchObject({ id: c.id, title: 'Launch plan' });
      expect((await store.get(c.id))?.title).toBe('Launch plan');
      expect(await store.rename('nope', 'x')).toBeNull();
      await expect(store.rename(c.id, '   ')).rejects.toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
      await expect(store.rename(c.id, 'x'.repeat(201))).rejects.toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
    });

    it('deletes a conversation with its messages', async () => {
      const c = await newConv();
      const other = await newConv();
      for (const m of history()) await store.append(c.id, m);
      await store.append(other.id, { id: 'o', role: 'user', content: 'keep me', timestamp: 't' });
      expect(await store.delete(c.id)).toBe(true);
      expect(await store.get(c.id)).toBeNull();
      expect(await store.messages(c.id)).toEqual([]);
      expect((await store.list()).items.map((x) => x.id)).toEqual([other.id]);
      expect(await store.messages(other.id)).toHaveLength(1);
      expect(await store.delete(c.id)).toBe(false);
      expect(await store.delete('../x')).toBe(false);
    });
  });

  describe('messages', () => {
    it('returns every role in order, exactly as appended', async () => {
      const c = await newConv();
      const h = history();
      for (const m of h) await store.append(c.id, m);
      expect(await store.messages(c.id)).toStrictEqual(h);
      expect((await store.list()).items[0]).toMatchObject({ messageCount: h.length, lastMessagePreview: 'With tool calls but no usage' });
    });

    it('is not changed by mutating what was appended or returned', async () => {
      const c = await newConv();
      const m: StoredMessage = { id: 'm', role: 'user', content: 'a', timestamp: 't' };
      await store.append(c.id, m);
      m.content = 'changed';
      (await store.messages(c.id))[0]!.id = 'changed';
      expect(await store.messages(c.id)).toEqual([{ id: 'm', role: 'user', content: 'a', timestamp: 't' }]);
    });

    it('bumps updatedAt on append', async () => {
      const c = await newConv();
      await store.append(c.id, { id: 'm', role: 'user', content: 'a', timestamp: 't' });
      expect((await store.get(c.id))!.updatedAt > c.updatedAt).toBe(true);
    });

    it('refuses appends to unknown conversations and malformed messages', async () => {
      await expect(store.append('missing', { id: 'm', role: 'user', content: 'a', timestamp: 't' })).rejects.toThrow(
        expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }),
      );
      const c = await newConv();
      await expect(store.append(c.id, { id: 'm', role: 'robot', content: 'a', timestamp: 't' } as unknown as StoredMessage)).rejects.toThrow(TypeError);
      await expect(store.append(c.id, { id: 'm', role: 'tool', toolCallId: 'x', name: 'n', timestamp: 't' } as unknown as StoredMessage)).rejects.toThrow(TypeError);
      expect(await store.messages(c.id)).toEqual([]);
      expect((await store.list()).items[0]!.messageCount).toBe(0);
    });
  });

  describe('variables and usage', () => {
    it('stores variables and adds usage up', async () => {
      const c = await newConv();
      await store.setVariables(c.id, { user_name: 'Ada', communication_language: 'English' });
      await store.addUsage(c.id, { promptTokens: 100, completionTokens: 20 });
      await store.addUsage(c.id, { promptTokens: 5, completionTokens: 1 });
      await store.addUsage(c.id, { promptTokens: Number.NaN, completionTokens: -3 });
      expect(await store.get(c.id)).toMatchObject({
        variables: { user_name: 'Ada', communication_language: 'English' },
        usage: { promptTokens: 105, completionTokens: 21, cachedTokens: 0 },
      });
      expect((await store.list()).items[0]!.usage).toEqual({ promptTokens: 105, completionTokens: 21, cachedTokens: 0 });
    });

    it('throws for unknown conversations', async () => {
      await expect(store.setVariables('missing', {})).rejects.toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
      await expect(store.addUsage('missing', { promptTokens: 1, completionTokens: 1 })).rejects.toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
    });
  });

  describe('owner and sharing', () => {
    it('keeps who started a conversation, and whether it is shared, in create, get, list and setShared', async () => {
      const c = await store.create({ agentId: 'pm', bundleName: 'b', projectId: 'shop', ownerId: 'user-1' });
      expect(c).toMatchObject({ ownerId: 'user-1' });
      expect(c.shared).toBeUndefined();
      expect(await store.setShared(c.id, true)).toMatchObject({ id: c.id, ownerId: 'user-1', shared: true });
      expect(await store.get(c.id)).toMatchObject({ ownerId: 'user-1', shared: true });
      expect((await store.list()).items.find((x) => x.id === c.id)).toMatchObject({ ownerId: 'user-1', shared: true });
      expect((await store.setShared(c.id, false))?.shared).toBeUndefined();
      expect(await store.setShared('missing', true)).toBeNull();
      const legacy = await store.create({ agentId: 'pm', bundleName: 'b' });
      expect(legacy.ownerId).toBeUndefined();
      expect((await store.get(legacy.id))?.ownerId).toBeUndefined();
    });

    it("keeps a user message's author through append, beginTurn, commit and truncateFrom; none when not given", async () => {
      const c = await store.create({ agentId: 'pm', bundleName: 'b', projectId: 'shop', ownerId: 'user-1' });
      const ada = { id: 'user-1', name: 'Ada \u00e9' };
      await store.append(c.id, { id: 'u1', role: 'user', content: 'one', timestamp: '2025-01-01T00:00:00.000Z', author: ada });
      const lease = await store.beginTurn(c.id, [{ id: 'u2', role: 'user', content: 'two', timestamp: '2025-01-01T00:00:00.000Z', author: { id: 'user-2', name: 'Bob' } }]);
      await store.commit(c.id, { messages: [{ id: 'u3', role: 'user', content: 'three', timestamp: '2025-01-01T00:00:00.000Z' }], end: { lease: lease!, outcome: 'done' } });
      const authors = async () => (await store.messages(c.id)).map((m) => (m.role === 'user' ? (m.author ?? null) : 'other'));
      expect(await authors()).toEqual([ada, { id: 'user-2', name: 'Bob' }, null]);
      const held = await store.beginTurn(c.id);
      await store.truncateFrom(c.id, 'u3');
      await store.endTurn(held!, 'done');
      expect(await authors()).toEqual([ada, { id: 'user-2', name: 'Bob' }]);
      await expect(store.append(c.id, { id: 'u4', role: 'user', content: 'x', timestamp: '2025-01-01T00:00:00.000Z', author: { id: '', name: 'x' } })).rejects.toThrow(/author/);
    });
  });

  describe('model profiles, cached tokens, cost', () => {
    it('keeps the profile a conversation is set to, in create, get, list and setModel; null forgets it', async () => {
      const c = await store.create({ agentId: 'pm', bundleName: 'bmm', model: 'strong' });
      expect(c.model).toBe('strong');
      expect(await store.get(c.id)).toMatchObject({ model: 'strong' });
      expect((await store.list()).items[0]).toMatchObject({ model: 'strong' });
      expect(await store.setModel(c.id, 'fast')).toMatchObject({ id: c.id, model: 'fast' });
      const cleared = await store.setModel(c.id, null);
      expect(cleared).not.toHaveProperty('model');
      expect(await store.get(c.id)).not.toHaveProperty('model');
      expect(await store.setModel('missing', 'fast')).toBeNull();
      await expect(store.setModel(c.id, 'no spaces allowed')).rejects.toThrow(expect.objectContaining({ code: 'E_VALIDATION' }));
      expect((await newConv())).not.toHaveProperty('model');
    });

    it('adds cached tokens and cost up; no cost until a priced call', async () => {
      const c = await newConv();
      await store.addUsage(c.id, { promptTokens: 100, completionTokens: 20, cachedTokens: 60 });
      expect(await store.get(c.id)).not.toHaveProperty('cost');
      await store.addUsage(c.id, { promptTokens: 10, completionTokens: 2, cachedTokens: 50 }, 0.25);
      await store.addUsage(c.id, { promptTokens: 1, completionTokens: 1 }, 0.5);
      await store.addUsage(c.id, { promptTokens: 1, completionTokens: 1 }, Number.NaN);
      const got = await store.get(c.id);
      // Cached tokens are part of the prompt tokens, never more.
      expect(got!.usage).toEqual({ promptTokens: 112, completionTokens: 24, cachedTokens: 70 });
      expect(got!.cost).toBeCloseTo(0.75, 9);
    });

    it('keeps per message the profile, model, cached tokens and cost', async () => {
      const c = await newConv();
      const m: StoredMessage = {
        id: 'a_1',
        role: 'assistant',
        content: 'hi',
        usage: { promptTokens: 10, completionTokens: 2, cachedTokens: 8 },
        profile: 'fast',
        model: 'qwen2.5:7b',
        cost: 0.000123,
        timestamp: '2025-01-01T00:00:00.000Z',
      };
      await store.append(c.id, m);
      expect(await store.messages(c.id)).toEqual([m]);
      await expect(store.append(c.id, { ...m, id: 'a_2', cost: 'x' as unknown as number })).rejects.toThrow(TypeError);
    });
  });

  describe('compaction', () => {
    it('marks messages for the model and hands them back with every read; the message itself is kept', async () => {
      const c = await newConv();
      for (const m of history()) await store.append(c.id, m);
      await store.compact(c.id, [
        { messageId: 'tool_1', compacted: { kind: 'elided', content: '{"ok":true,"compacted":true}' } },
        { messageId: 'msg_1', compacted: { kind: 'dropped' } },
        { messageId: 'msg_2', compacted: { kind: 'elided', toolArguments: { call_a: '{}' } } },
      ]);
      const got = await store.messages(c.id);
      const byId = new Map(got.map((m) => [m.id, m]));
      expect(byId.get('tool_1')).toEqual({ ...history()[3], compacted: { kind: 'elided', content: '{"ok":true,"compacted":true}' } });
      expect(byId.get('msg_1')!.compacted).toEqual({ kind: 'dropped' });
      expect(byId.get('msg_2')!.compacted).toEqual({ kind: 'elided', toolArguments: { call_a: '{}' } });
      expect(byId.get('msg_3')).not.toHaveProperty('compacted');
    });

    it('writes all marks or none, and refuses unknown messages, conversations and shapes', async () => {
      const c = await newConv();
      for (const m of history()) await store.append(c.id, m);
      await expect(
        store.compact(c.id, [
          { messageId: 'tool_1', compacted: { kind: 'dropped' } },
          { messageId: 'nope', compacted: { kind: 'dropped' } },
        ]),
      ).rejects.toThrow(/no message "nope"/);
      expect((await store.messages(c.id)).some((m) => m.compacted)).toBe(false);
      await expect(store.compact('missing', [])).rejects.toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
      await expect(store.compact(c.id, [{ messageId: 'tool_1', compacted: { kind: 'gone' } as never }])).rejects.toThrow(TypeError);
      await expect(store.compact(c.id, [{ messageId: 'tool_1', compacted: { kind: 'elided' } }])).rejects.toThrow(TypeError);
    });
  });

  describe('turn lock', () => {
    it('lets one turn run at a time', async () => {
      const c = await newConv();
      const lease = (await store.beginTurn(c.id))!;
      expect(lease).toEqual({ conversationId: c.id, token: expect.any(String) });
      expect((await store.get(c.id))?.status).toBe('running');
      expect(await store.beginTurn(c.id)).toBeNull();
      await store.endTurn(lease, 'done');
      expect((await store.get(c.id))?.status).toBe('idle');
      const again = await store.beginTurn(c.id);
      expect(again).not.toBeNull();
      expect(again!.token).not.toBe(lease.token);
    });

    it('ignores a wrong or stale token', async () => {
      const c = await newConv();
      const first = (await store.beginTurn(c.id))!;
      await store.endTurn({ conversationId: c.id, token: 'forged' }, 'done');
      expect((await store.get(c.id))?.status).toBe('running');
      expect(await store.beginTurn(c.id)).toBeNull();
      await store.endTurn(first, 'done');
      const second = (await store.beginTurn(c.id))!;
      await store.endTurn(first, 'interrupted'); // released twice: must not free the second turn
      expect((await store.get(c.id))?.status).toBe('running');
      expect(await store.beginTurn(c.id)).toBeNull();
      await store.endTurn(second, 'done');
    });

    it('marks an interrupted turn and lets the conversation go on', async () => {
      const c = await newConv();
      await store.endTurn((await store.beginTurn(c.id))!, 'interrupted');
      expect((await store.get(c.id))?.status).toBe('interrupted');
      const next = (await store.beginTurn(c.id))!;
      expect((await store.get(c.id))?.status).toBe('running');
      await store.endTurn(next, 'done');
      expect((await store.get(c.id))?.status).toBe('idle');
    });

    it('gives the lock to exactly one of two turns begun at once', async () => {
      const c = await newConv();
      const leases = await Promise.all([store.beginTurn(c.id), store.beginTurn(c.id)]);
      expect(leases.filter((l) => l !== null)).toHaveLength(1);
    });

    it('locks per conversation', async () => {
      const a = await newConv();
      const b = await newConv();
      expect(await store.beginTurn(a.id)).not.toBeNull();
      expect(await store.beginTurn(b.id)).not.toBeNull();
    });

    it('throws for unknown conversations', async () => {
      await expect(store.beginTurn('missing')).rejects.toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
      await expect(store.endTurn({ conversationId: 'missing', token: 'x' }, 'done')).resolves.toBeUndefined();
    });
  });

  describe('stop requests', () => {
    const heard = (lease: { conversationId: string; token: string }) => {
      const signals: string[] = [];
      const unwatch = store.watchTurn(lease, (signal) => signals.push(signal));
      return { signals, unwatch };
    };
    const until = async (cond: () => boolean, ms = 3000) => {
      const end = Date.now() + ms;
      while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    };

    it('tells the running turn, once, and answers whether a turn was running', async () => {
      const c = await newConv();
      expect(await store.requestStop(c.id)).toBe(false);
      const lease = (await store.beginTurn(c.id))!;
      const w = heard(lease);
      expect(await store.requestStop(c.id)).toBe(true);
      await until(() => w.signals.length > 0);
      expect(await store.requestStop(c.id)).toBe(true);
      await new Promise((r) => setTimeout(r, 50));
      expect(w.signals).toEqual(['stop']);
      // Asking is not stopping: the turn ends itself, as a local Stop would.
      expect((await store.get(c.id))?.status).toBe('running');
      await store.endTurn(lease, 'stopped');
      expect(await store.requestStop(c.id)).toBe(false);
      w.unwatch();
    });

    it('reaches a watch that starts after the request, and never the next turn', async () => {
      const c = await newConv();
      const first = (await store.beginTurn(c.id))!;
      await store.requestStop(c.id);
      const late = heard(first);
      await until(() => late.signals.length > 0);
      expect(late.signals).toEqual(['stop']);
      await store.endTurn(first, 'stopped');
      const second = (await store.beginTurn(c.id))!;
      const next = heard(second);
      await new Promise((r) => setTimeout(r, 700));
      expect(next.signals).toEqual([]);
      next.unwatch();
      await store.endTurn(second, 'done');
    });

    it('stops only the conversation asked for; an ended watch hears nothing', async () => {
      const a = await newConv();
      const b = await newConv();
      const la = (await store.beginTurn(a.id))!;
      const lb = (await store.beginTurn(b.id))!;
      const wa = heard(la);
      const wb = heard(lb);
      wa.unwatch();
      await store.requestStop(a.id);
      await new Promise((r) => setTimeout(r, 700));
      expect(wa.signals).toEqual([]);
      expect(wb.signals).toEqual([]);
      wb.unwatch();
    });

    it('throws for unknown conversations', async () => {
      await expect(store.requestStop('missing')).rejects.toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
      await expect(store.requestStop('../x')).rejects.toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
    });
  });

  describe('health', () => {
    it('answers, with its schema current', async () => {
      const h = await store.health();
      expect(h).toMatchObject({ ok: true, migrations: { current: true } });
      expect(['memory', 'sqlite', 'postgres']).toContain(h.kind);
      expect(h.migrations.applied).toBe(h.migrations.latest);
    });
  });

  describe('a turn written in few commits', () => {
    it('stores the user message with the lock, only when the lock is taken', async () => {
      const c = await newConv();
      const user: StoredMessage = { id: 'u1', role: 'user', content: 'hello there', timestamp: 't' };
      const lease = (await store.beginTurn(c.id, [user]))!;
      expect(lease).not.toBeNull();
      expect(await store.messages(c.id)).toEqual([user]);
      expect((await store.get(c.id))?.status).toBe('running');
      // Refused: a turn runs, and its message is not stored either.
      expect(await store.beginTurn(c.id, [{ id: 'u2', role: 'user', content: 'again', timestamp: 't' }])).toBeNull();
      expect((await store.messages(c.id)).map((m) => m.id)).toEqual(['u1']);
      await store.endTurn(lease, 'done');
    });

    it('commits a message, its usage and the turn end together', async () => {
      const c = await newConv();
      const lease = (await store.beginTurn(c.id))!;
      const call: StoredMessage = { id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{}' }], usage: { promptTokens: 10, completionTokens: 2 }, timestamp: 't' };
      await store.commit(c.id, { messages: [call], usage: { usage: { promptTokens: 10, completionTokens: 2 } } });
      expect((await store.get(c.id))?.status).toBe('running');
      const answer: StoredMessage = { id: 'a2', role: 'assistant', content: 'done it', usage: { promptTokens: 20, completionTokens: 3 }, timestamp: 't' };
      await store.commit(c.id, { messages: [answer], usage: { usage: { promptTokens: 20, completionTokens: 3, cachedTokens: 5 }, cost: 0.5 }, end: { lease, outcome: 'done' } });
      const after = await store.get(c.id);
      expect(after?.status).toBe('idle');
      expect(after?.usage).toEqual({ promptTokens: 30, completionTokens: 5, cachedTokens: 5 });
      expect(after?.cost).toBe(0.5);
      expect((await store.messages(c.id)).map((m) => m.id)).toEqual(['a1', 'a2']);
      expect(await store.beginTurn(c.id)).not.toBeNull();
    });

    it("sums a project's model calls from the usage ledger: by time, by conversation, kept after a delete", async () => {
      const project = `spend${Math.random().toString(36).slice(2, 8)}`;
      const since = new Date(Date.now() - 1000).toISOString();
      const c = await newConv('pm', { projectId: project });
      const other = await newConv('pm', { projectId: project });
      const elsewhere = await newConv('pm', { projectId: `${project}x` });
      const bundle = await newConv();
      const lease = (await store.beginTurn(c.id))!;
      await store.commit(c.id, { usage: { usage: { promptTokens: 100, completionTokens: 10, cachedTokens: 40 }, cost: 0.25 } });
      await store.commit(c.id, { usage: { usage: { promptTokens: 50, completionTokens: 5 } }, end: { lease, outcome: 'done' } });
      await store.addUsage(other.id, { promptTokens: 7, completionTokens: 3 }, 0.5);
      await store.addUsage(elsewhere.id, { promptTokens: 1000, completionTokens: 1000 }, 9);
      await store.addUsage(bundle.id, { promptTokens: 1000, completionTokens: 1000 }, 9);
      const all = { promptTokens: 157, completionTokens: 18, cachedTokens: 40, cost: 0.75, calls: 3, unpriced: 1 };
      expect(await store.spend({ projectId: project, since })).toEqual(all);
      expect(await store.spend({ projectId: project, since, conversationIds: [other.id] })).toEqual({ promptTokens: 7, completionTokens: 3, cachedTokens: 0, cost: 0.5, calls: 1, unpriced: 0 });
      expect(await store.spend({ projectId: project, since, conversationIds: [] })).toMatchObject({ calls: 0, promptTokens: 0 });
      expect(await store.spend({ projectId: project, since: new Date(Date.now() + 60_000).toISOString() })).toMatchObject({ calls: 0, cost: 0 });
      expect(await store.spend({ projectId: project, since: '', until: since })).toMatchObject({ calls: 0 });
      // What a conversation spent stays spent when it is deleted.
      await store.delete(c.id);
      expect(await store.spend({ projectId: project, since })).toEqual(all);
    });

    it("sums a project's model calls by the person whose conversations made them", async () => {
      const project = `owners${Math.random().toString(36).slice(2, 8)}`;
      const since = new Date(Date.now() - 1000).toISOString();
      const ada = await store.create({ agentId: 'pm', bundleName: 'bmm', projectId: project, ownerId: 'u-ada' });
      const ada2 = await store.create({ agentId: 'pm', bundleName: 'bmm', projectId: project, ownerId: 'u-ada' });
      const ed = await store.create({ agentId: 'pm', bundleName: 'bmm', projectId: project, ownerId: 'u-ed' });
      const nobody = await newConv('pm', { projectId: project });
      await store.addUsage(ada.id, { promptTokens: 100, completionTokens: 10 }, 0.25);
      await store.addUsage(ada2.id, { promptTokens: 50, completionTokens: 5 });
      await store.addUsage(ed.id, { promptTokens: 7, completionTokens: 3 }, 0.5);
      await store.addUsage(nobody.id, { promptTokens: 1, completionTokens: 1 });
      const rows = (await store.spendByOwner({ projectId: project, since })).sort((a, b) => String(a.ownerId).localeCompare(String(b.ownerId)));
      expect(rows).toEqual([
        { ownerId: null, promptTokens: 1, completionTokens: 1, cachedTokens: 0, cost: 0, calls: 1, unpriced: 1 },
        { ownerId: 'u-ada', promptTokens: 150, completionTokens: 15, cachedTokens: 0, cost: 0.25, calls: 2, unpriced: 1 },
        { ownerId: 'u-ed', promptTokens: 7, completionTokens: 3, cachedTokens: 0, cost: 0.5, calls: 1, unpriced: 0 },
      ]);
      expect(await store.spendByOwner({ projectId: project, since, conversationIds: [ed.id] })).toEqual([rows[2]]);
      expect(await store.spendByOwner({ projectId: project, since: new Date(Date.now() + 60_000).toISOString() })).toEqual([]);
    });

    it('commits nothing of a batch that fails', async () => {
      const c = await newConv();
      const lease = (await store.beginTurn(c.id))!;
      const bad = { id: 'x', role: 'assistant', content: 42 } as unknown as StoredMessage;
      await expect(store.commit(c.id, { messages: [{ id: 'ok', role: 'assistant', content: 'fine', timestamp: 't' }, bad], end: { lease, outcome: 'done' } })).rejects.toThrow();
      expect(await store.messages(c.id)).toEqual([]);
      expect((await store.get(c.id))?.status).toBe('running');
    });

    it('finds a message in search as soon as it is stored (indexing catches up before a search)', async () => {
      const c = await newConv();
      const lease = (await store.beginTurn(c.id, [{ id: 'u', role: 'user', content: 'zebra crossing', timestamp: 't' }]))!;
      expect((await store.list({ q: 'zebra' })).items.map((x) => x.id)).toEqual([c.id]);
      await store.commit(c.id, { messages: [{ id: 'a', role: 'assistant', content: 'giraffe neck', timestamp: 't' }], end: { lease, outcome: 'done' } });
      expect((await store.list({ q: 'giraffe' })).items.map((x) => x.id)).toEqual([c.id]);
      await store.rename(c.id, 'Okapi notes');
      expect((await store.list({ q: 'okapi' })).items.map((x) => x.id)).toEqual([c.id]);
      await store.truncateFrom(c.id, 'a');
      expect((await store.list({ q: 'giraffe' })).items).toEqual([]);
    });
  });

  describe('how a turn ended', () => {
    const end = async (id: string, outcome: Parameters<ConversationStore['endTurn']>[1]) => store.endTurn((await store.beginTurn(id))!, outcome);

    it('keeps stopped, failed (with its error) and interrupted, with when, until the next turn', async () => {
      const c = await newConv();
      await end(c.id, 'stopped');
      expect(await store.get(c.id)).toMatchObject({ status: 'stopped', lastTurn: { status: 'stopped', at: expect.any(String) } });
      expect((await store.get(c.id))!.lastTurn).not.toHaveProperty('error');

      await end(c.id, { status: 'failed', error: { code: 'E_LLM_UPSTREAM', message: 'The model endpoint failed (500).' } });
      const failed = (await store.get(c.id))!;
      expect(failed).toMatchObject({ status: 'failed', lastTurn: { status: 'failed', error: { code: 'E_LLM_UPSTREAM', message: 'The model endpoint failed (500).' } } });
      expect(Date.parse(failed.lastTurn!.at)).not.toBeNaN();
      expect((await store.list()).items[0]).toMatchObject({ status: 'failed', lastTurn: { status: 'failed', error: { code: 'E_LLM_UPSTREAM' } } });

      const lease = (await store.beginTurn(c.id))!;
      expect(await store.get(c.id)).toMatchObject({ status: 'running' });
      expect(await store.get(c.id)).not.toHaveProperty('lastTurn');
      await store.endTurn(lease, 'interrupted');
      expect(await store.get(c.id)).toMatchObject({ status: 'interrupted', lastTurn: { status: 'interrupted' } });

      await end(c.id, 'done');
      expect(await store.get(c.id)).toMatchObject({ status: 'idle' });
      expect(await store.get(c.id)).not.toHaveProperty('lastTurn');
    });
  });

  describe('truncateFrom', () => {
    const turn = (n: number, text: string): StoredMessage[] => [
      { id: `u${n}`, role: 'user', content: text, timestamp: 't' },
      { id: `a${n}`, role: 'assistant', content: '', toolCalls: [{ id: `c${n}`, name: 'read_file', arguments: '{}' }], timestamp: 't' },
      { id: `t${n}`, role: 'tool', toolCallId: `c${n}`, name: 'read_file', result: { ok: true }, timestamp: 't' },
      { id: `r${n}`, role: 'assistant', content: `Answer to ${text}`, timestamp: 't' },
    ];

    it('removes a message and everything after it; count, preview and later appends follow', async () => {
      const c = await newConv();
      const other = await newConv();
      await store.append(c.id, { id: 's', role: 'system', content: 'context', timestamp: 't' });
      for (const m of [...turn(1, 'first'), ...turn(2, 'second')]) await store.append(c.id, m);
      await store.append(other.id, { id: 'u1', role: 'user', content: 'same ids elsewhere', timestamp: 't' });
      const before = (await store.get(c.id))!.updatedAt;

      expect(await store.truncateFrom(c.id, 'u2')).toBe(4);
      expect((await store.messages(c.id)).map((m) => m.id)).toEqual(['s', 'u1', 'a1', 't1', 'r1']);
      const summary = (await store.list()).items.find((x) => x.id === c.id)!;
      expect(summary).toMatchObject({ messageCount: 5, lastMessagePreview: 'Answer to first' });
      expect(summary.updatedAt > before).toBe(true);
      expect(await store.messages(other.id)).toHaveLength(1);

      // The conversation goes on after the cut, in order, with no clash with what was removed.
      for (const m of turn(3, 'third')) await store.append(c.id, m);
      expect((await store.messages(c.id)).map((m) => m.id)).toEqual(['s', 'u1', 'a1', 't1', 'r1', 'u3', 'a3', 't3', 'r3']);
      expect((await store.list()).items.find((x) => x.id === c.id)).toMatchObject({ messageCount: 9, lastMessagePreview: 'Answer to third' });

      expect(await store.truncateFrom(c.id, 'a1')).toBe(7);
      expect((await store.messages(c.id)).map((m) => m.id)).toEqual(['s', 'u1']);
      expect((await store.list()).items.find((x) => x.id === c.id)).toMatchObject({ messageCount: 2, lastMessagePreview: 'first' });
    });

    it('refuses a message the conversation does not have, changing nothing', async () => {
      const c = await newConv();
      const other = await newConv();
      for (const m of turn(1, 'first')) await store.append(c.id, m);
      await store.append(other.id, { id: 'elsewhere', role: 'user', content: 'x', timestamp: 't' });
      for (const bad of ['elsewhere', 'nope', '']) {
        await expect(store.truncateFrom(c.id, bad)).rejects.toThrow(expect.objectContaining({ code: 'E_VALIDATION', details: { field: 'messageId' } }));
      }
      expect(await store.messages(c.id)).toHaveLength(4);
      await expect(store.truncateFrom('missing', 'u1')).rejects.toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
    });

    it('takes an automatic title again from what is left, never a given or renamed one', async () => {
      const auto = await newConv();
      for (const m of [...turn(1, 'Plan a launch'), ...turn(2, 'More')]) await store.append(auto.id, m);
      expect((await store.get(auto.id))!.title).toBe('Plan a launch');
      await store.truncateFrom(auto.id, 'u1');
      expect((await store.get(auto.id))!.title).toBe(DEFAULT_TITLE);
      await store.append(auto.id, { id: 'u9', role: 'user', content: 'Plan a wedding instead', timestamp: 't' });
      expect((await store.get(auto.id))!.title).toBe('Plan a wedding instead');
      expect((await store.list()).items[0]!.title).toBe('Plan a wedding instead');

      const renamed = await newConv();
      for (const m of turn(1, 'Plan a launch')) await store.append(renamed.id, m);
      await store.rename(renamed.id, 'Mine');
      await store.truncateFrom(renamed.id, 'u1');
      await store.append(renamed.id, { id: 'u9', role: 'user', content: 'Something else', timestamp: 't' });
      expect((await store.get(renamed.id))!.title).toBe('Mine');

      const given = await newConv('pm', { title: 'Given' });
      for (const m of turn(1, 'Plan a launch')) await store.append(given.id, m);
      await store.truncateFrom(given.id, 'u1');
      expect((await store.get(given.id))!.title).toBe('Given');
    });

    it('keeps a title named after a workflow while its command stays', async () => {
      const c = await newConv();
      await store.append(c.id, { id: 'u1', role: 'user', content: '*create-prd', timestamp: 't' });
      await store.append(c.id, { id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'w', name: 'execute_workflow', arguments: '{}' }], timestamp: 't' });
      await store.append(c.id, { id: 't1', role: 'tool', toolCallId: 'w', name: 'execute_workflow', result: { ok: true, workflow: { name: 'prd' } }, timestamp: 't' });
      await store.append(c.id, { id: 'r1', role: 'assistant', content: 'Let us start.', timestamp: 't' });
      await store.append(c.id, { id: 'u2', role: 'user', content: 'A todo app', timestamp: 't' });
      await store.truncateFrom(c.id, 'u2');
      expect((await store.get(c.id))!.title).toBe('PRD');
      // Cut back to the command alone: named after it until its workflow runs again.
      await store.truncateFrom(c.id, 'a1');
      expect((await store.get(c.id))!.title).toBe('*create-prd');
      await store.append(c.id, { id: 't2', role: 'tool', toolCallId: 'w', name: 'execute_workflow', result: { ok: true, workflow: { name: 'prd again' } }, timestamp: 't' });
      expect((await store.get(c.id))!.title).toBe('prd again');
    });
  });

  describe('search', () => {
    const ids = async (q: string, extra: { agentId?: string; projectId?: string } = {}) => (await store.list({ q, ...extra })).items.map((x) => x.id);

    it('finds conversations by title and by user or assistant text: every word, as a word or its start, any case or accent', async () => {
      const budget = await newConv('pm', { title: 'Budget app' });
      const cafe = await newConv('pm');
      await store.append(cafe.id, { id: 'u', role: 'user', content: 'Open a CAFÉ near the station', timestamp: 't' });
      await store.append(cafe.id, { id: 'a', role: 'assistant', content: 'Espresso machines cost money.', timestamp: 't' });
      const hidden = await newConv('pm');
      await store.append(hidden.id, { id: 's', role: 'system', content: 'secretword in server context', timestamp: 't' });
      await store.append(hidden.id, { id: 'a', role: 'assistant', content: '', toolCalls: [{ id: 'c', name: 'read_file', arguments: '{"secretword":1}' }], timestamp: 't' });
      await store.append(hidden.id, { id: 't', role: 'tool', toolCallId: 'c', name: 'read_file', result: { ok: true, content: 'secretword' }, timestamp: 't' });

      expect(await ids('budget')).toEqual([budget.id]);
      expect(await ids('BUDG')).toEqual([budget.id]);
      expect(await ids('cafe')).toEqual([cafe.id]);
      expect(await ids('café station')).toEqual([cafe.id]);
      expect(await ids('espresso money')).toEqual([cafe.id]);
      // Every word must be in one message (or the title).
      expect(await ids('espresso station')).toEqual([]);
      expect(await ids('udget')).toEqual([]);
      expect(await ids('secretword')).toEqual([]);
      expect(await ids('"!*')).toEqual([]);
      expect(await ids('budget OR cafe')).toEqual([]);
    });

    it('combines with the agent and project filters and pages like list()', async () => {
      const match: string[] = [];
      for (let i = 0; i < 5; i++) {
        const c = await newConv(i % 2 ? 'dev' : 'pm', i === 4 ? { projectId: 'acme' } : {});
        await store.append(c.id, { id: 'u', role: 'user', content: `launch plan number ${i}`, timestamp: 't' });
        match.unshift(c.id);
        await newConv('pm', { title: 'Unrelated' });
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await store.list({ q: 'launch', limit: 2, cursor });
        seen.push(...page.items.map((x) => x.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).toEqual(match);
      expect(await ids('launch', { agentId: 'dev' })).toEqual([match[1], match[3]]);
      expect(await ids('launch', { projectId: 'acme' })).toEqual([match[0]]);
      expect(await ids('launch 3')).toEqual([match[1]]);
    });

    it('follows renames, truncations and deletes', async () => {
      const c = await newConv();
      await store.append(c.id, { id: 'u1', role: 'user', content: 'Plan a launch', timestamp: 't' });
      await store.append(c.id, { id: 'a1', role: 'assistant', content: 'Rocket science', timestamp: 't' });
      expect(await ids('rocket')).toEqual([c.id]);
      expect(await ids('plan')).toEqual([c.id]);
      await store.truncateFrom(c.id, 'a1');
      expect(await ids('rocket')).toEqual([]);
      await store.rename(c.id, 'Garden party');
      expect(await ids('garden')).toEqual([c.id]);
      await store.truncateFrom(c.id, 'u1');
      expect(await ids('plan')).toEqual([]);
      expect(await ids('garden')).toEqual([c.id]);
      await store.delete(c.id);
      expect(await ids('garden')).toEqual([]);
    });
  });

  describe('automatic title', () => {
    it('names an untitled conversation after its first user message, once', async () => {
      const c = await newConv();
      await store.append(c.id, { id: 's', role: 'system', content: 'context', timestamp: 't' });
      expect((await store.get(c.id))?.title).toBe(DEFAULT_TITLE);
      await store.append(c.id, { id: 'u1', role: 'user', content: '\n  Write a PRD for a todo app  \nwith more lines', timestamp: 't' });
      expect((await store.get(c.id))?.title).toBe('Write a PRD for a todo app');
      await store.append(c.id, { id: 'u2', role: 'user', content: 'Something else', timestamp: 't' });
      expect((await store.get(c.id))?.title).toBe('Write a PRD for a todo app');
      expect((await store.list()).items[0]!.title).toBe('Write a PRD for a todo app');
    });

    it('names a command conversation after the workflow it ran', async () => {
      const c = await newConv();
      await store.append(c.id, { id: 'u1', role: 'user', content: '*create-prd', timestamp: 't' });
      expect((await store.get(c.id))?.title).toBe('*create-prd');
      await store.append(c.id, { id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'w', name: 'execute_workflow', arguments: '{}' }], timestamp: 't' });
      await store.append(c.id, { id: 't1', role: 'tool', toolCallId: 'w', name: 'execute_workflow', result: { ok: true, workflow: { name: 'prd' } }, timestamp: 't' });
      expect((await store.get(c.id))?.title).toBe('PRD');
    });

    it('tells runs of one workflow apart: its display name and what the user typed, or else the document it writes', async () => {
      const run = async (message: string, result: Record<string, unknown>) => {
        const c = await newConv();
        await store.append(c.id, { id: 'u1', role: 'user', content: message, timestamp: 't' });
        await store.append(c.id, { id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'w', name: 'execute_workflow', arguments: '{}' }], timestamp: 't' });
        await store.append(c.id, { id: 't1', role: 'tool', toolCallId: 'w', name: 'execute_workflow', result: { ok: true, ...result }, timestamp: 't' });
        await store.append(c.id, { id: 'u2', role: 'user', content: 'and more', timestamp: 't' });
        return (await store.get(c.id))!.title;
      };
      expect(await run('*prd plant shop', { kind: 'skill', workflow: { name: 'bmad-prd' }, skill: { name: 'bmad-prd' }, user_input: 'plant shop' })).toBe('PRD · plant shop');
      expect(await run('*prd bike rental', { kind: 'skill', workflow: {}, skill: { name: 'bmad-prd' }, user_input: 'bike rental' })).toBe('PRD · bike rental');
      expect(await run('*CB', { workflow: { name: 'bmad-product-brief', default_output_file: '{project-root}/docs/brief-garden.md' } })).toBe('Product brief · brief-garden.md');
      // A file name still holding a variable says nothing of the run.
      expect(await run('*CE', { workflow: { name: 'bmad-create-epics-and-stories', outputFile: '{output_folder}/epics-{{date}}.md' } })).toBe('Create epics and stories');
    });

    it('never overrides a given or renamed title', async () => {
      const given = await newConv('pm', { title: 'Mine' });
      await store.append(given.id, { id: 'u', role: 'user', content: 'hello', timestamp: 't' });
      expect((await store.get(given.id))?.title).toBe('Mine');
      const renamed = await newConv();
      await store.rename(renamed.id, 'Renamed');
      await store.append(renamed.id, { id: 'u', role: 'user', content: 'hello', timestamp: 't' });
      expect((await store.get(renamed.id))?.title).toBe('Renamed');
    });
  });

  describe('client chat marks', () => {
    const digest = (n: number) => n.toString(16).padStart(64, '0');

    it('finds a mark by its owner, chat and history only; the newest mark of a key wins', async () => {
      const a = await newConv();
      const b = await newConv();
      await store.markClientChat({ owner: 'ada', chat: 'chat:1', history: digest(1), conversationId: a.id, messageId: 'msg_1' });
      expect(await store.findClientChat('ada', 'chat:1', digest(1))).toEqual({ conversationId: a.id, messageId: 'msg_1' });
      // Another person, another chat, another history: nothing.
      expect(await store.findClientChat('bob', 'chat:1', digest(1))).toBeNull();
      expect(await store.findClientChat('ada', 'chat:2', digest(1))).toBeNull();
      expect(await store.findClientChat('ada', '', digest(1))).toBeNull();
      expect(await store.findClientChat('ada', 'chat:1', digest(2))).toBeNull();
      await store.markClientChat({ owner: 'ada', chat: 'chat:1', history: digest(1), conversationId: b.id, messageId: 'msg_9' });
      expect(await store.findClientChat('ada', 'chat:1', digest(1))).toEqual({ conversationId: b.id, messageId: 'msg_9' });
      await store.markClientChat({ owner: 'ada', chat: '', history: digest(1), conversationId: a.id, messageId: 'msg_2' });
      expect(await store.findClientChat('ada', '', digest(1))).toEqual({ conversationId: a.id, messageId: 'msg_2' });
    });

    it('forgets the marks of a deleted conversation; refuses an unknown conversation or a malformed mark', async () => {
      const a = await newConv();
      await store.markClientChat({ owner: 'ada', chat: '', history: digest(3), conversationId: a.id, messageId: 'msg_1' });
      await store.delete(a.id);
      expect(await store.findClientChat('ada', '', digest(3))).toBeNull();
      await expect(store.markClientChat({ owner: 'ada', chat: '', history: digest(3), conversationId: a.id, messageId: 'msg_1' })).rejects.toThrow(expect.objectContaining({ code: 'E_CONVERSATION_NOT_FOUND' }));
      const b = await newConv();
      for (const bad of [
        { owner: '', chat: '', history: digest(4) },
        { owner: 'ada', chat: 'x'.repeat(201), history: digest(4) },
        { owner: 'ada', chat: '', history: 'not-a-digest' },
        { owner: 'ada', chat: '', history: digest(4).toUpperCase().replace(/0/g, 'A') },
      ]) {
        await expect(store.markClientChat({ ...bad, conversationId: b.id, messageId: 'msg_1' })).rejects.toThrow(TypeError);
      }
      expect(await store.findClientChat('ada', '', digest(4))).toBeNull();
    });
  });
});
