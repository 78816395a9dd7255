import type { ConversationStore, ConversationSummary } from '../store/conversations/types';
import type { UsageView } from '../../types/api';

/**
 * A project's tokens and cost: the sum over its conversations that `visible` lets through (the
 * caller's), read from the list's per-conversation totals, a page at a time.
 */
export async function projectUsageView(store: ConversationStore, projectId: string, visible: (c: ConversationSummary) => Promise<boolean>): Promise<UsageView> {
  const total: UsageView = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  let cost: number | undefined;
  let cursor: string | undefined;
  do {
    const page = await store.list({ projectId, limit: 100, ...(cursor ? { cursor } : {}) });
    const shown = await Promise.all(page.items.map(visible));
    page.items.forEach((c, i) => {
      if (!shown[i]) return;
      total.promptTokens += c.usage.promptTokens;
      total.completionTokens += c.usage.completionTokens;
      total.cachedTokens += c.usage.cachedTokens ?? 0;
      if (c.cost !== undefined) cost = (cost ?? 0) + c.cost;
    });
    cursor = page.nextCursor;
  } while (cursor);
  if (cost !== undefined) total.cost = Math.round(cost * 1e9) / 1e9;
  return total;
}
