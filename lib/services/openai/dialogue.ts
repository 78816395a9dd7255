import { createHash, type Hash } from 'node:crypto';
import { AppError } from '../../core/errors';
import { sha256 } from '../../core/results';

/**
 * What an OpenAI client sends, read as our chat: its messages down to what was said (the last user
 * message is the turn, the user and assistant messages before it the history), the history's
 * digest that finds the conversation it continues, and the client's own key for its chat.
 * Everything here is linear in the size of the request.
 */

/** A message as a client sends it: text, or parts of which the text ones are read. */
export interface ClientMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content?: string | { type: string; text?: unknown }[] | null;
}

export interface Line {
  role: 'user' | 'assistant';
  text: string;
}

export interface Dialogue {
  /** The user and assistant messages before the turn's, in order (system, developer and tool messages are not the chat's). */
  prior: Line[];
  /** The last user message: the turn. */
  ask: string;
}

/** As POST /api/chat: what a person types in one message. */
export const MAX_ASK_CHARS = 20_000;

export function textOf(content: ClientMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => p && p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n');
}

export function dialogueOf(messages: ClientMessage[]): Dialogue {
  let last = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user') {
      last = i;
      break;
    }
  }
  if (last < 0) throw new AppError('E_VALIDATION', 'messages has no user message: the last user message is what the agent answers.', { field: 'messages' });
  const ask = textOf(messages[last]!.content);
  if (!ask.trim()) throw new AppError('E_VALIDATION', `messages[${last}] (the last user message) has no text.`, { field: `messages.${last}.content` });
  if (ask.length > MAX_ASK_CHARS) throw new AppError('E_VALIDATION', `messages[${last}] (the last user message) must be at most 20,000 characters.`, { field: `messages.${last}.content` });
  const prior: Line[] = [];
  for (const m of messages.slice(0, last)) if (m.role === 'user' || m.role === 'assistant') prior.push({ role: m.role, text: textOf(m.content) });
  return { prior, ask };
}

const OPEN = '<details';
const CLOSE = '</details>';

/**
 * The text without its `<details …>…</details>` blocks: the tool steps we sent (Open WebUI strips
 * them from the history it sends back; other clients send them as they got them). One pass: each
 * search starts where the last ended, and an opening tag with no closing one ends the stripping.
 */
export function withoutDetails(text: string): string {
  let out = '';
  let from = 0;
  let search = 0;
  for (;;) {
    const open = text.indexOf(OPEN, search);
    if (open < 0) break;
    const after = text[open + OPEN.length];
    if (after !== '>' && after !== ' ' && after !== '\n' && after !== '\t' && after !== '\r') {
      search = open + OPEN.length;
      continue;
    }
    const close = text.indexOf(CLOSE, open);
    if (close < 0) break;
    out += text.slice(from, open);
    from = search = close + CLOSE.length;
  }
  return out + text.slice(from);
}

/** A message as the digest reads it: no tool blocks, whitespace runs as one space (clients re-space what they show). */
export function normalized(text: string): string {
  return withoutDetails(text).replace(/\s+/g, ' ').trim();
}

/**
 * The digest of a chat's history for one model: sha256 over the messages as normalized, each
 * written unambiguously (JSON); empty messages (a tool-only answer) leave no trace. Extendable:
 * `hex()` reads the digest so far and the history can go on.
 */
export class HistoryDigest {
  private constructor(private readonly hash: Hash) {}

  static of(model: string): HistoryDigest {
    return new HistoryDigest(createHash('sha256').update(`bmad-client-chat/1\n${JSON.stringify(model)}\n`));
  }

  add(role: Line['role'], text: string): this {
    const n = normalized(text);
    if (n) this.hash.update(`${JSON.stringify([role, n])}\n`);
    return this;
  }

  hex(): string {
    return this.hash.copy().digest('hex');
  }
}

/** What a client may send to say which of its chats a request belongs to. */
export interface ChatKeys {
  /** `X-OpenWebUI-Chat-Id`: Open WebUI's chat, when it forwards it (ENABLE_FORWARD_USER_INFO_HEADERS). */
  openWebUiChatId?: string;
  /** `X-Conversation-Id` (LibreChat sends it with `{{LIBRECHAT_BODY_CONVERSATIONID}}`). */
  conversationHeader?: string;
  /** The body's `conversation` (a string or `{ id }`, as in OpenAI's Responses API). */
  conversation?: string;
  /** The body's `metadata`: its `conversation_id`, else its `chat_id`. */
  metadata?: Record<string, string> | null;
  /** The body's `user`: a person of the client, not a chat. */
  user?: string;
}

/**
 * How a request's conversation is found:
 * - a chat key (the first of `X-OpenWebUI-Chat-Id`, `X-Conversation-Id`, `conversation`,
 *   `metadata.conversation_id`, `metadata.chat_id`): by the user messages of the
 *   history within that chat; the assistant's words, which clients reshape, play no part;
 * - else by the whole history (user and assistant messages), within the client's `user` when it
 *   names one (so two people behind one token never continue each other's chat), else within the
 *   caller's own chats.
 */
export interface ChatScope {
  /** The store's `chat` of a mark: the key's digest, never the key itself. */
  chat: string;
  usersOnly: boolean;
}

export function chatScope(keys: ChatKeys): ChatScope {
  const chat = [keys.openWebUiChatId, keys.conversationHeader, keys.conversation, keys.metadata?.conversation_id, keys.metadata?.chat_id].find((k) => typeof k === 'string' && k.trim());
  if (chat) return { chat: `chat:${sha256(chat.trim())}`, usersOnly: true };
  if (keys.user && keys.user.trim()) return { chat: `user:${sha256(keys.user.trim())}`, usersOnly: false };
  return { chat: '', usersOnly: false };
}
