import { toMessageViews } from '@/lib/services/presenters/conversations';
import type { StoredMessage } from '@/lib/store/conversations/types';
import { historyToMessages } from './history';

const at = '2026-01-01T00:00:00.000Z';

describe('historyToMessages', () => {
  it('keeps the cost of an answer as the server views it (inside usage), summed over its model calls', () => {
    const stored: StoredMessage[] = [
      { id: 'u1', role: 'user', content: 'hello', timestamp: at },
      { id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'list_files', arguments: '{}' }], usage: { promptTokens: 10, completionTokens: 2 }, cost: 0.001, profile: 'p', model: 'm', timestamp: at },
      { id: 't1', role: 'tool', toolCallId: 'c1', name: 'list_files', result: { ok: true, files: [] }, timestamp: at },
      { id: 'a2', role: 'assistant', content: 'done', usage: { promptTokens: 20, completionTokens: 3 }, cost: 0.002, profile: 'p', model: 'm', timestamp: at },
    ];
    const views = toMessageViews(stored);
    expect(views[1].usage?.cost).toBeCloseTo(0.003);
    const [, answer] = historyToMessages(views);
    expect(answer.cost).toBeCloseTo(0.003);
    expect(answer.usage).toMatchObject({ promptTokens: 30, completionTokens: 5 });
  });

  it('shows no cost for an answer of an unpriced profile', () => {
    const stored: StoredMessage[] = [
      { id: 'u1', role: 'user', content: 'hello', timestamp: at },
      { id: 'a1', role: 'assistant', content: 'hi', usage: { promptTokens: 1, completionTokens: 1 }, timestamp: at },
    ];
    expect(historyToMessages(toMessageViews(stored))[1].cost).toBeUndefined();
  });
});
