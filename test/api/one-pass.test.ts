import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as prompt from '@/lib/engine/prompt';
import { collectTurn, startTurn, type ChatRequest } from '@/lib/engine/chat';
import type { ConversationStore } from '@/lib/store/conversations';
import { isTerminal, type RunView } from '@/lib/engine/runs';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { startHarness, type Harness } from './harness';

/**
 * One pass per turn: whatever the turn (a first message, a follow-up, a tool call, a regenerate,
 * an edit), the conversation's stored history is read once and the agent's system prompt built once.
 */
let h: Harness;
let reads: string[];
let builds: number;

beforeAll(async () => {
  h = await startHarness({}, { store: 'sqlite' });
});
afterAll(async () => {
  await h.close();
});
/** Counts the store's reads of a conversation's messages. */
function watchReads(store: ConversationStore) {
  const messages = store.messages.bind(store);
  jest.spyOn(store, 'messages').mockImplementation(async (id: string) => {
    reads.push(id);
    return messages(id);
  });
}

beforeEach(() => {
  reads = [];
  builds = 0;
  const build = prompt.buildSystemPrompt;
  jest.spyOn(prompt, 'buildSystemPrompt').mockImplementation((input) => {
    builds++;
    return build(input);
  });
});
afterEach(() => {
  jest.restoreAllMocks();
  h.model.setScript(undefined);
});

const AGENT = 'product-lead';

async function turn(req: Omit<ChatRequest, 'agentId'>) {
  const handle = await startTurn(h.runtime, { agentId: AGENT, ...req }, new AbortController().signal);
  const summary = await collectTurn(handle.events);
  expect(summary.error).toBeUndefined();
  return { handle, summary };
}

/** What one turn cost: reads of the history and builds of the system prompt, then counting starts again. */
function passes(conversationId: string) {
  const seen = { historyReads: reads.filter((id) => id === conversationId).length, promptBuilds: builds };
  reads = [];
  builds = 0;
  return seen;
}

describe('one pass per turn', () => {
  it('a first turn, a follow-up with a tool call, a regenerate and an edit each read the history once and build the prompt once', async () => {
    watchReads(h.runtime.store);
    const counted: ReturnType<typeof passes>[] = [];
    h.model.setScript([reply.text('Hello.')]);
    const first = await turn({ message: 'Hi there' });
    const id = first.handle.conversationId;
    counted.push(passes(id));

    h.model.setScript([reply.toolCalls([{ name: 'list_files', arguments: { path: '{bundle-root}' } }]), reply.text('Listed.')]);
    const listed = await turn({ conversationId: id, message: 'What files are there?' });
    counted.push(passes(id));
    expect(listed.summary.functionCalls.map((c) => c.name)).toEqual(['list_files']);
    expect(h.model.chatRequests()).toHaveLength(3);

    h.model.setScript([reply.text('Listed again.')]);
    const again = await turn({ conversationId: id, regenerate: true });
    counted.push(passes(id));

    h.model.setScript([reply.text('Edited.')]);
    await turn({ conversationId: id, editMessageId: again.handle.userMessageId, message: 'Which files, then?' });
    counted.push(passes(id));

    expect(counted).toEqual(Array(4).fill({ historyReads: 1, promptBuilds: 1 }));

    // What the model was sent is what the store holds: the history passed down is the stored one.
    const stored = await h.runtime.store.messages(id);
    expect(stored.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['Hi there', 'Which files, then?']);
    const last = (h.model.chatRequests().at(-1)!.body!.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
    expect(last).toEqual(['Hi there', 'Which files, then?']);
  });
});

describe('one pass per turn of a run', () => {
  let projectsRoot: string;
  let r: Harness;
  beforeAll(async () => {
    projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-one-pass-'));
    await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
    r = await startHarness({ PROJECTS_ROOT: projectsRoot });
  }, 240_000);
  afterAll(async () => {
    await r.close();
    await fs.rm(projectsRoot, { recursive: true, force: true });
  });

  it('a run asked questions: each of its turns, the first and the answers, reads the history once and builds the prompt once', async () => {
    watchReads(r.runtime.store);
    // Every answer is a question: the run answers with its rule, then ends blocked.
    r.model.setScript('headless-question');
    const { run } = await r.runtime.runs.submit({ projectId: 'p612', ownerId: 'local', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox for busy parents.' });
    const ended = await new Promise<RunView>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the run did not end')), 30_000);
      const off = r.runtime.runs.subscribe(run.id, (event) => {
        if (event.type !== 'run' || !isTerminal(event.run.status)) return;
        clearTimeout(timer);
        off();
        resolve(event.run);
      });
    });
    expect(ended.status).toBe('blocked');
    const id = ended.conversationId!;
    const seen = { historyReads: reads.filter((x) => x === id).length, promptBuilds: builds };
    const turns = (await r.runtime.store.messages(id)).filter((m) => m.role === 'user').length;
    expect(turns).toBeGreaterThan(1);
    expect(seen).toEqual({ historyReads: turns, promptBuilds: turns });
  });
});
