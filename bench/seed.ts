/** Fills a data folder with stored conversations, straight through the SQLite store, before the server starts. */
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const CONTEXT = '## Critical context (loaded by the server before this conversation)\n\n' + 'user_name: Friend\ncommunication_language: English\n'.repeat(20);
const ANSWER = 'A stored assistant answer of a few sentences, the way a brief interview goes. '.repeat(6);

/**
 * `conversations` conversations of `messagesEach` messages: critical context, then user /
 * assistant pairs, one assistant message with a tool call and its result (~2 kB).
 */
export async function seedConversations(dataDir: string, conversations: number, messagesEach: number): Promise<{ ms: number; messages: number }> {
  const { SqliteConversationStore } = await import('../lib/store/conversations');
  const { DATABASE_FILE } = await import('../lib/store/db');
  const store = new SqliteConversationStore(path.join(dataDir, DATABASE_FILE));
  const t0 = performance.now();
  let messages = 0;
  const ts = new Date().toISOString();
  try {
    for (let c = 0; c < conversations; c++) {
      const id = `seed-${String(c).padStart(6, '0')}`;
      await store.create({ id, agentId: c % 2 ? 'product-lead' : 'story-writer', bundleName: 'product-studio' });
      await store.append(id, { id: `${id}-sys`, role: 'system', content: CONTEXT, timestamp: ts });
      messages++;
      for (let m = 1; m < messagesEach; m++) {
        const mid = `${id}-m${m}`;
        if (m === 2) {
          await store.append(id, { id: mid, role: 'assistant', content: '', toolCalls: [{ id: `${mid}-c`, name: 'read_file', arguments: '{"file_path":"{bundle-root}/config.yaml"}' }], timestamp: ts });
        } else if (m === 3) {
          await store.append(id, { id: mid, role: 'tool', toolCallId: `${id}-m2-c`, name: 'read_file', result: { ok: true, path: '{bundle-root}/config.yaml', content: CONTEXT.repeat(2) }, timestamp: ts });
        } else if (m % 2 === 1) {
          await store.append(id, { id: mid, role: 'user', content: `Stored question ${m} of conversation ${c}: what comes next?`, timestamp: ts });
        } else {
          await store.append(id, { id: mid, role: 'assistant', content: ANSWER, usage: { promptTokens: 1200, completionTokens: 120 }, timestamp: ts });
        }
        messages++;
      }
    }
  } finally {
    await store.close();
  }
  return { ms: performance.now() - t0, messages };
}
