import { POST as chat } from '@/app/api/chat/route';
import { GET as getOne } from '@/app/api/conversations/[id]/route';
import { POST as stop } from '@/app/api/conversations/[id]/stop/route';
import { createRuntime, setRuntime } from '@/lib/engine/runtime';
import { PgConversationStore } from '@/lib/store/conversations';
import { reply } from '../scripted-model';
import { createTestDatabase, type TestDatabase } from '../postgres';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

// POST /api/conversations/:id/stop: the Stop that reaches a turn through the store, from any instance.
let h: Harness;
afterEach(async () => {
  await h.close();
});

const AGENT = 'product-lead';
const send = (body: Record<string, unknown>) => chat(jsonRequest('/api/chat', { agentId: AGENT, ...body }));
const detail = async (id: string) => (await (await getOne(get(`/api/conversations/${id}`), params({ id }))).json()).data;
const stopRoute = (id: string) => stop(new Request(`http://localhost/api/conversations/${id}/stop`, { method: 'POST' }), params({ id }));

function frames(text: string): Array<Record<string, any>> {
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('data: ') && f !== 'data: [DONE]')
    .map((f) => JSON.parse(f.slice('data: '.length)));
}

/** Starts a long streamed turn and reads until some text came; the rest is read by `rest`. */
async function startLongTurn(): Promise<{ id: string; rest: () => Promise<string> }> {
  h.model.setScript([reply.text('word '.repeat(2000), { tokenDelayMs: 5, chunkSize: 5 })]);
  const res = await send({ message: 'Tell me a long story', stream: true });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (frames(text).filter((f) => f.type === 'text-delta').length < 3) text += decoder.decode((await reader.read()).value);
  const id = frames(text).find((f) => f.type === 'data-conversation')!.data.conversationId as string;
  return {
    id,
    rest: async () => {
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value);
      return text;
    },
  };
}

async function expectStoppedWithShownText(id: string, text: string): Promise<void> {
  expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  const shown = frames(text)
    .filter((f) => f.type === 'text-delta')
    .map((f) => f.delta)
    .join('');
  expect(shown.length).toBeGreaterThan(0);
  expect(shown.length).toBeLessThan('word '.repeat(2000).length);
  const d = await detail(id);
  expect(d).toMatchObject({ status: 'stopped', lastTurn: { status: 'stopped' } });
  expect(d.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
  expect(d.messages[1].content).toBe(shown);
}

describe('on one instance (SQLite)', () => {
  it('stops the running turn at once; the partial answer the stream showed is kept', async () => {
    h = await startHarness({}, { store: 'sqlite' });
    const turn = await startLongTurn();
    const started = Date.now();
    const res = await stopRoute(turn.id);
    expect(res.status).toBe(200);
    expect((await res.json()).data).toEqual({ conversationId: turn.id, stopping: true });
    const text = await turn.rest();
    expect(Date.now() - started).toBeLessThan(1000);
    await expectStoppedWithShownText(turn.id, text);

    // Nothing runs any more: the route says so and changes nothing.
    expect((await (await stopRoute(turn.id)).json()).data).toEqual({ conversationId: turn.id, stopping: false });
    expect((await detail(turn.id)).status).toBe('stopped');
  });

  it('is 404 for an unknown or malformed id', async () => {
    h = await startHarness();
    for (const id of ['00000000-0000-4000-8000-000000000000', '..', 'a b']) {
      const res = await stopRoute(id);
      expect(res.status).toBe(404);
      expect((await res.json()).code).toBe('E_CONVERSATION_NOT_FOUND');
    }
  });
});

describe('across instances (Postgres)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('stop');
  });
  afterAll(async () => {
    await database.drop();
  });

  // The instance serving the stream is this runtime; the Stop is asked through another store on
  // the same database, as another instance's route would.
  it.each([
    ['a notification', true],
    ['the heartbeat poll alone (no LISTEN)', false],
  ])('a Stop from another instance reaches the turn through %s within 2 s', async (_how, listen) => {
    h = await startHarness({}, { store: 'sqlite' });
    const store = new PgConversationStore(database.url, { listen });
    await setRuntime(createRuntime(h.config, store));
    const other = new PgConversationStore(database.url);
    try {
      const turn = await startLongTurn();
      const started = Date.now();
      expect(await other.requestStop(turn.id)).toBe(true);
      const text = await turn.rest();
      expect(Date.now() - started).toBeLessThan(2000);
      await expectStoppedWithShownText(turn.id, text);
      expect((await other.get(turn.id))?.status).toBe('stopped');
    } finally {
      await other.close();
    }
  });
});
