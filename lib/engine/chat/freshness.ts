import { promises as fs } from 'node:fs';
import type { ConversationStore } from '../../store/conversations/types';
import { resolvePath, type PathContext } from '../../core/paths';
import { fail, type ToolFailure } from '../../core/results';
import type { FileFreshness } from '../tools/types';
import type { VersionStore } from '../../content/versions';

/** Tools whose results say which content of a file the conversation saw. */
const SEEING_TOOLS = new Set(['read_file', 'save_output', 'edit_file', 'apply_patch']);

export interface FreshnessOptions {
  store: Pick<ConversationStore, 'get' | 'messages'>;
  conversationId: string;
  /** The conversation's mounts: a stored result's virtual path → the real file. */
  paths: PathContext;
  /** The project's version store: who last wrote a file, and when. */
  versions: () => Promise<VersionStore>;
}

/**
 * What one conversation knows of its project's documents, derived from its own stored tool
 * results (read_file, save_output, edit_file and apply_patch carry the sha256 they saw), so it
 * survives a restart without a table of its own, plus the writes of the running turn.
 *
 * The rule: a write may replace a file when its current content is one the conversation last
 * read or wrote. A file the conversation never read nor wrote may be replaced only when it has not
 * changed since the conversation started (BMAD agents often write a document fresh, and a file
 * untouched since before the conversation is no one's concurrent change); one changed after that
 * was someone else's work in the meantime. Otherwise the write fails with `E_STALE`, naming who
 * changed it and when, and succeeds once the agent read the file again.
 */
export function conversationFreshness(options: FreshnessOptions): FileFreshness {
  const live = new Map<string, string>();
  const resolved = new Map<string, string | null>();

  async function realOf(virtual: string): Promise<string | null> {
    if (resolved.has(virtual)) return resolved.get(virtual) ?? null;
    const r = await resolvePath(virtual, options.paths, 'read');
    const abs = r.ok ? r.abs : null;
    resolved.set(virtual, abs);
    return abs;
  }

  /** The sha256 the conversation's stored results last saw of the file. */
  async function lastSeen(abs: string): Promise<string | undefined> {
    const history = await options.store.messages(options.conversationId);
    let seen: string | undefined;
    for (const m of history) {
      if (m.role !== 'tool' || !SEEING_TOOLS.has(m.name) || !m.result.ok) continue;
      const r = m.result as Record<string, unknown>;
      const sha = typeof r.sha256After === 'string' ? r.sha256After : r.sha256;
      if (typeof r.path !== 'string' || typeof sha !== 'string') continue;
      if ((await realOf(r.path)) === abs) seen = sha;
    }
    return seen;
  }

  async function lastChange(abs: string, sha: string): Promise<{ by: string; at: string; mine: boolean }> {
    const store = await options.versions().catch(() => null);
    const rel = store?.relativePath(abs);
    const newest = store && rel ? (await store.list(rel).catch(() => []))[0] : undefined;
    if (newest && newest.sha256 === sha && newest.agentId) {
      const mine = newest.conversationId === options.conversationId;
      const by = newest.conversationId && newest.conversationId !== 'api' ? `agent ${newest.agentId} (conversation ${newest.conversationId})` : newest.agentId;
      return { by, at: newest.at, mine };
    }
    const stat = await fs.stat(abs).catch(() => null);
    return { by: 'someone outside the app', at: (stat?.mtime ?? new Date()).toISOString(), mine: false };
  }

  return {
    saw(abs, sha256) {
      live.set(abs, sha256);
    },
    async check(target, currentSha256): Promise<ToolFailure | null> {
      if (live.get(target.abs) === currentSha256) return null;
      const seen = await lastSeen(target.abs);
      if (seen === currentSha256) return null;
      if (seen === undefined && !live.has(target.abs)) {
        // Never read nor written here: fine when untouched since the conversation started.
        const [conversation, stat] = await Promise.all([options.store.get(options.conversationId), fs.stat(target.abs).catch(() => null)]);
        const started = conversation ? Date.parse(conversation.createdAt) : Number.NaN;
        if (!stat || (Number.isFinite(started) && stat.mtimeMs <= started)) return null;
      }
      const change = await lastChange(target.abs, currentSha256);
      // Its own write (one whose result it never got, say): nothing to merge.
      if (change.mine) return null;
      return fail('E_STALE', `${target.virtual} was changed by ${change.by} at ${change.at}; read it again before writing.`, {
        path: target.virtual,
        details: { changedBy: change.by, changedAt: change.at, currentSha256 },
      });
    },
  };
}
