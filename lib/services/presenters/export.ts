import type { Conversation, StoredMessage } from '../../store/conversations/types';
import { toMessageViews } from './conversations';

export type ExportFormat = 'md' | 'json';

const ARGUMENTS_MAX = 300;

/** A code span that holds any text: fenced with more backticks than the longest run inside. */
function code(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function argumentsText(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? {});
  return oneLine(text, ARGUMENTS_MAX);
}

function outcomeText(result: unknown): string {
  if (result === undefined) return 'no result (the turn ended before it finished)';
  const r = result as { ok?: unknown; error?: { code?: unknown; message?: unknown } };
  if (r && r.ok === false) {
    const c = typeof r.error?.code === 'string' ? `${code(r.error.code)} ` : '';
    return `error ${c}${typeof r.error?.message === 'string' ? oneLine(r.error.message, ARGUMENTS_MAX) : ''}`.trimEnd();
  }
  return 'ok';
}

function lastTurnText(c: Conversation): string | null {
  const t = c.lastTurn;
  if (!t) return null;
  if (t.status === 'failed') return `failed${t.error ? ` (${code(t.error.code)}: ${oneLine(t.error.message, 500)})` : ''}`;
  return t.status === 'stopped' ? 'stopped by the user' : 'interrupted (the server went away)';
}

/**
 * The conversation as a person reads it: title, agent, dates, then each message, a turn's text
 * and tool calls in the order they happened (a call as its name, arguments and outcome, never
 * its result's content). Server context stays out, as on screen.
 */
export function conversationMarkdown(c: Conversation, history: StoredMessage[]): string {
  const out: string[] = [`# ${oneLine(c.title, 500)}`, ''];
  out.push(`- Agent: ${code(c.agentId)} (${c.projectId ? `project ${code(c.projectId)}` : `bundle ${code(c.bundleName)}`})`);
  out.push(`- Started: ${c.createdAt}`);
  out.push(`- Last activity: ${c.updatedAt}`);
  const last = lastTurnText(c);
  if (last) out.push(`- Last turn: ${last}`);
  out.push('');
  for (const m of toMessageViews(history)) {
    out.push('---', '', `## ${m.role === 'user' ? 'User' : 'Assistant'} · ${m.timestamp}`, '');
    if (m.role === 'user') {
      out.push(m.content, '');
      continue;
    }
    const calls = new Map((m.functionCalls ?? []).map((f) => [f.id, f]));
    const parts = m.parts ?? [{ type: 'text' as const, text: m.content }];
    for (const p of parts) {
      if (p.type === 'text') out.push(p.text, '');
      else {
        const f = calls.get(p.toolCallId);
        if (f) out.push(`- Tool ${code(f.name)} ${code(argumentsText(f.arguments))}: ${outcomeText(f.result)}`, '');
      }
    }
  }
  return `${out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}

/** A file name any browser and file system accepts: the title in ASCII letters and digits, and the date. */
export function exportFileName(c: Conversation, format: ExportFormat): string {
  const slug = c.title
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .toLowerCase()
    .slice(0, 60)
    .replace(/-+$/g, '');
  return `${slug || 'conversation'}-${c.createdAt.slice(0, 10)}.${format}`;
}
