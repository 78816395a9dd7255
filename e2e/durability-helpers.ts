// Helpers for e2e/durability.test.ts: JSON calls, an SSE reader that survives the server being
// killed, and checks on what the model was sent and what is on disk.
import fs from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { ChatMessage, RecordedRequest } from '../test/scripted-model';
import { postChat } from './support';

export interface ApiAnswer<T = any> {
  status: number;
  body: { success: boolean; data?: T; error?: string; code?: string; [k: string]: unknown };
}

export async function api<T = any>(url: string, route: string, init: RequestInit & { json?: unknown } = {}): Promise<ApiAnswer<T>> {
  const { json, ...rest } = init;
  const res = await fetch(`${url}${route}`, {
    ...rest,
    ...(json !== undefined ? { body: JSON.stringify(json), headers: { 'content-type': 'application/json', ...(rest.headers ?? {}) } } : {}),
  });
  const text = await res.text();
  let body: ApiAnswer<T>['body'];
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${init.method ?? 'GET'} ${route} → ${res.status}, not JSON: ${text.slice(0, 300)}`);
  }
  return { status: res.status, body };
}

export async function chatJson(url: string, body: Record<string, unknown>): Promise<ApiAnswer> {
  const res = await postChat(url, body);
  return { status: res.status, body: await res.json() };
}

export interface SseEvent {
  type?: string;
  [k: string]: any;
}

export interface LiveStream {
  status: number;
  events: SseEvent[];
  /** Resolves once an event matching `pred` arrived (checks the past too). */
  until(pred: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  conversationId(): Promise<string>;
  /** Settles when the response ends or the connection breaks (the server was killed). */
  ended: Promise<void>;
}

/** POST /api/chat with stream: true; events are parsed as they arrive. */
export async function chatStream(url: string, body: Record<string, unknown>): Promise<LiveStream> {
  const res = await postChat(url, { ...body, stream: true });
  const events: SseEvent[] = [];
  const waiters: Array<{ pred: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void }> = [];
  const push = (e: SseEvent) => {
    events.push(e);
    for (const w of [...waiters]) {
      if (w.pred(e)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
    }
  };
  const ended = (async () => {
    if (!res.body) return;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          for (const line of block.split('\n')) {
            if (!line.startsWith('data: ')) continue;
            const data = line.slice(6);
            if (data === '[DONE]') push({ type: '[DONE]' });
            else {
              try {
                push(JSON.parse(data));
              } catch {
                push({ type: 'unparsable', raw: data });
              }
            }
          }
        }
      }
    } catch {
      // connection reset: the server died
    }
  })();
  const until = (pred: (e: SseEvent) => boolean, timeoutMs = 15_000) => {
    const seen = events.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise<SseEvent>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.splice(waiters.findIndex((w) => w.resolve === done), 1);
        reject(new Error(`no matching SSE event within ${timeoutMs} ms; got: ${events.map((e) => e.type).join(', ')}`));
      }, timeoutMs);
      const done = (e: SseEvent) => {
        clearTimeout(timer);
        resolve(e);
      };
      waiters.push({ pred, resolve: done });
    });
  };
  return {
    status: res.status,
    events,
    until,
    async conversationId() {
      const e = await until((x) => x.type === 'data-conversation');
      return e.data.conversationId as string;
    },
    ended,
  };
}

/**
 * Problems with the tool-call pairing of a history as sent to the model: every assistant tool
 * call needs a tool message right after it (before the next non-tool message), and every tool
 * message must answer a call of the assistant message it follows. OpenAI rejects anything else.
 */
export function toolPairingProblems(messages: ChatMessage[]): string[] {
  const problems: string[] = [];
  let open: Set<string> | null = null;
  let openAt = -1;
  const close = () => {
    if (open && open.size) problems.push(`assistant message #${openAt} has unanswered tool calls: ${[...open].join(', ')}`);
    open = null;
  };
  messages.forEach((m, i) => {
    if (m.role === 'tool') {
      if (!open || !m.tool_call_id || !open.has(m.tool_call_id)) {
        problems.push(`tool message #${i} (${m.tool_call_id}) answers no pending call`);
      } else open.delete(m.tool_call_id);
      return;
    }
    close();
    if (m.role === 'assistant' && m.tool_calls?.length) {
      open = new Set(m.tool_calls.map((c) => c.id ?? ''));
      openAt = i;
    }
  });
  close();
  return problems;
}

export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String(p.text) : '')).join('');
  return '';
}

/** The messages of a recorded chat request (throws if it has none). */
export function messagesOf(req: RecordedRequest | undefined): ChatMessage[] {
  const msgs = req?.body?.messages;
  if (!msgs) throw new Error('recorded request has no messages');
  return msgs;
}

/** Every file under `root` (relative paths, hidden ones included); [] when the folder is missing. */
export async function filesOnDisk(root: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(dir: string, rel: string) {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(dir, e.name), r);
      else out.push(r);
    }
  }
  await walk(root, '');
  return out.sort();
}

/** Flattens the files API tree into paths. */
export function treePaths(tree: Array<{ path: string; type: string; children?: any[] }>): string[] {
  const out: string[] = [];
  const walk = (nodes: typeof tree) => {
    for (const n of nodes) {
      out.push(n.path);
      if (n.children) walk(n.children);
    }
  };
  walk(tree);
  return out;
}

export const TEMP_NAME = /(^|\/)\.[^/]*\.tmp|\.tmp-|\.tmp$|~$/;

/** `PRAGMA integrity_check` and foreign keys of the database file (the server must be stopped). */
export function checkDatabase(file: string): { integrity: string; foreignKeyProblems: number; journalMode: string } {
  const db = new Database(file, { fileMustExist: true });
  try {
    const integrity = (db.pragma('integrity_check', { simple: true }) as string) ?? '';
    const foreignKeyProblems = (db.pragma('foreign_key_check') as unknown[]).length;
    const journalMode = String(db.pragma('journal_mode', { simple: true }));
    return { integrity, foreignKeyProblems, journalMode };
  } finally {
    db.close();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Deterministic content of a given size, so a file on disk can be checked for completeness. */
export function bigDocument(name: string, bytes: number): string {
  const head = `# ${name}\n\n`;
  const line = `- ${name}: the quick brown fox jumps over the lazy dog 0123456789\n`;
  let s = head;
  while (s.length + line.length < bytes - 12) s += line;
  return `${s}\n<!-- END -->\n`;
}
