import { AppError } from '../../core/errors';
import type { ClientChatMark, Compaction, CompactionMark, Conversation, ConversationStatus, CreateConversationInput, LastTurn, ListOptions, SpendTotals, StoredMessage, TurnOutcome, TurnSignal, Usage } from './types';
import { DEFAULT_TITLE, TITLE_LIMIT, defaultTitle, isCommandMessage, normaliseTitle, previewOf, workflowTitle } from './title';
import { isValidConversationId, isValidProjectId } from './ids';

const DEFAULT_PAGE = 20;
const MAX_PAGE = 100;

let lastStamp = 0;

/**
 * ISO timestamps that never repeat or go back within this process, so "newest first" is exactly
 * creation/activity order even when several conversations change within one millisecond.
 */
export function monotonicNow(): string {
  const now = Date.now();
  lastStamp = now > lastStamp ? now : lastStamp + 1;
  return new Date(lastStamp).toISOString();
}

export function pageSize(options?: ListOptions): number {
  const n = options?.limit;
  if (n === undefined || !Number.isFinite(n)) return DEFAULT_PAGE;
  return Math.min(MAX_PAGE, Math.max(1, Math.floor(n)));
}

export interface CursorKey {
  updatedAt: string;
  id: string;
}

export function encodeCursor(key: CursorKey): string {
  return Buffer.from(JSON.stringify([key.updatedAt, key.id]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): CursorKey {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string') {
      return { updatedAt: value[0], id: value[1] };
    }
  } catch {
    // falls through to the validation error
  }
  throw new AppError('E_VALIDATION', 'The cursor is not one this server issued; start again without it.', { field: 'cursor' });
}

export function notFound(id: string): AppError {
  return new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${id}".`);
}

function isStr(v: unknown): v is string {
  return typeof v === 'string';
}

/**
 * Rejects messages that could not be replayed to the model later; a bad row written now would
 * break every following turn of that conversation, so it fails here, at the caller's bug.
 */
export function assertMessage(m: StoredMessage): void {
  const bad = (why: string) => new TypeError(`Cannot store message: ${why}.`);
  if (!m || typeof m !== 'object') throw bad('not an object');
  if (!isStr(m.id) || !m.id) throw bad('id must be a non-empty string');
  if (!isStr(m.timestamp)) throw bad('timestamp must be a string');
  if (m.compacted !== undefined && !isCompaction(m.compacted)) throw bad('compacted must be { kind: "dropped" } or { kind: "elided", content?, toolArguments? }');
  switch (m.role) {
    case 'user':
      if (!isStr(m.content)) throw bad('content must be a string');
      if (m.author !== undefined && !(m.author && isStr(m.author.id) && m.author.id && isStr(m.author.name))) throw bad('author needs a string id and name');
      return;
    case 'system':
      if (!isStr(m.content)) throw bad('content must be a string');
      return;
    case 'assistant':
      if (!isStr(m.content)) throw bad('content must be a string');
      if (m.toolCalls !== undefined) {
        if (!Array.isArray(m.toolCalls)) throw bad('toolCalls must be an array');
        for (const c of m.toolCalls) {
          if (!c || !isStr(c.id) || !isStr(c.name) || !isStr(c.arguments)) throw bad('each tool call needs string id, name and arguments');
        }
      }
      if (m.usage !== undefined && !isUsage(m.usage)) throw bad('usage needs numeric promptTokens and completionTokens');
      if (m.cost !== undefined && !(typeof m.cost === 'number' && Number.isFinite(m.cost))) throw bad('cost must be a number');
      if (m.profile !== undefined && !isStr(m.profile)) throw bad('profile must be a string');
      if (m.model !== undefined && !isStr(m.model)) throw bad('model must be a string');
      return;
    case 'tool':
      if (!isStr(m.toolCallId) || !isStr(m.name)) throw bad('tool messages need toolCallId and name');
      if (!m.result || typeof m.result !== 'object' || typeof m.result.ok !== 'boolean') throw bad('tool messages need a result with ok');
      return;
    default:
      throw bad(`unknown role "${(m as { role?: unknown }).role}"`);
  }
}

function isUsage(u: Usage): boolean {
  return !!u && Number.isFinite(u.promptTokens) && Number.isFinite(u.completionTokens) && (u.cachedTokens === undefined || Number.isFinite(u.cachedTokens));
}

export function isCompaction(c: unknown): c is Compaction {
  if (!c || typeof c !== 'object') return false;
  const x = c as { kind?: unknown; content?: unknown; toolArguments?: unknown };
  if (x.kind === 'dropped') return true;
  if (x.kind !== 'elided') return false;
  if (x.content !== undefined && !isStr(x.content)) return false;
  if (x.toolArguments !== undefined) {
    if (!x.toolArguments || typeof x.toolArguments !== 'object' || Array.isArray(x.toolArguments)) return false;
    if (!Object.values(x.toolArguments).every(isStr)) return false;
  }
  return x.content !== undefined || x.toolArguments !== undefined;
}

export function assertMarks(marks: CompactionMark[]): void {
  if (!Array.isArray(marks)) throw new TypeError('Cannot compact: marks must be an array.');
  for (const m of marks) {
    if (!m || !isStr(m.messageId) || !m.messageId) throw new TypeError('Cannot compact: each mark needs a messageId.');
    if (!isCompaction(m.compacted)) throw new TypeError(`Cannot compact message "${m.messageId}": not a compaction.`);
  }
}

/** Token counts as added to a conversation's total; junk from a quirky server counts as zero. */
export function cleanUsage(u: Usage): Required<Usage> {
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.round(v) : 0);
  const prompt = n(u?.promptTokens);
  return { promptTokens: prompt, completionTokens: n(u?.completionTokens), cachedTokens: Math.min(prompt, n(u?.cachedTokens)) };
}

/** The spend of no model call. */
export function emptySpend(): SpendTotals {
  return { promptTokens: 0, completionTokens: 0, cachedTokens: 0, cost: 0, calls: 0, unpriced: 0 };
}

/** A call's cost as added to the conversation's; undefined (no prices) leaves the total as it is. */
export function cleanCost(cost: number | undefined): number | undefined {
  return typeof cost === 'number' && Number.isFinite(cost) && cost >= 0 ? cost : undefined;
}

// The same names lib/core/models accepts for profiles; the store keeps names, never checks they exist.
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function prepareModel(model: string | null | undefined): string | null {
  if (model === null || model === undefined) return null;
  if (!isStr(model) || !MODEL_NAME.test(model)) throw new AppError('E_VALIDATION', 'A model profile name may hold only letters, digits, ".", "_" and "-" (at most 64).', { field: 'model' });
  return model;
}

export function assertVariables(variables: Record<string, string>): void {
  if (!variables || typeof variables !== 'object' || Array.isArray(variables)) throw new TypeError('variables must be an object');
  for (const [k, v] of Object.entries(variables)) {
    if (typeof v !== 'string') throw new TypeError(`variable "${k}" must be a string`);
  }
}

/**
 * How a conversation's title is kept:
 * - FIXED: given at create() or by rename(); never changed by the store.
 * - DEFAULT: still "New conversation"; the first user message names it.
 * - FROM_COMMAND: named after a `*command`; the workflow it ran (the execute_workflow result that
 *   follows) gives a better name, once.
 * - AUTO: named by the store from the messages and settled; appends leave it alone, but it is
 *   taken again from what is left when the messages it came from are truncated away.
 */
export const TitleState = { FIXED: 0, DEFAULT: 1, FROM_COMMAND: 2, AUTO: 3 } as const;
export type TitleState = (typeof TitleState)[keyof typeof TitleState];

export interface TitleCandidates {
  /** Title from a user message, and the state it leads to. */
  userTitle: string | null;
  userState: TitleState;
  /** Title from a workflow that ran. */
  workflowTitle: string | null;
}

/**
 * `runs`: a workflow run names the conversation with its display name and what tells the run
 * apart; `names` (stores before that): with the workflow's name as written. Only the migration
 * that recognises titles the store gave long ago asks for `names`.
 */
export type TitleRule = 'runs' | 'names';

export function titleCandidates(m: StoredMessage, rule: TitleRule = 'runs'): TitleCandidates {
  let userTitle: string | null = null;
  let userState: TitleState = TitleState.FIXED;
  let workflowTitle: string | null = null;
  if (m.role === 'user' && m.content.trim()) {
    userTitle = defaultTitle(m.content);
    userState = isCommandMessage(m.content) ? TitleState.FROM_COMMAND : TitleState.AUTO;
  } else if (m.role === 'tool' && m.name === 'execute_workflow' && m.result.ok) {
    if (rule === 'runs') workflowTitle = titleOfRun(m.result as WorkflowRunFields);
    else {
      const wf = (m.result as WorkflowRunFields).workflow;
      if (wf && typeof wf.name === 'string' && wf.name.trim()) workflowTitle = defaultTitle(wf.name);
    }
  }
  return { userTitle, userState, workflowTitle };
}

/** What of an execute_workflow result names the run (read loosely: results are stored JSON). */
interface WorkflowRunFields {
  workflow?: Record<string, unknown>;
  skill?: { name?: unknown };
  user_input?: unknown;
}

// Workflow variables that name the document a run writes, in the order BMAD's workflows use them.
const OUTPUT_KEYS = ['default_output_file', 'outputFile', 'output_file'];

/** The document a run writes, by its file name, when the workflow names one outright. */
function documentOf(wf: Record<string, unknown> | undefined): string | undefined {
  for (const key of OUTPUT_KEYS) {
    const v = wf?.[key];
    if (typeof v !== 'string' || !v.trim()) continue;
    const base = v.trim().split('/').pop() ?? '';
    // A name still holding a variable (`{{date}}`) or none at all says nothing of this run.
    if (base && !/[{}]/.test(base)) return base;
  }
  return undefined;
}

/**
 * The title a workflow run gives its conversation: the workflow's (or skill's) display name plus
 * what the user typed with the command, or else the document it writes, so two runs of one
 * workflow read apart (`PRD · plant shop`). Null when the result names no workflow.
 */
function titleOfRun(r: WorkflowRunFields): string | null {
  const name = typeof r.workflow?.name === 'string' && r.workflow.name.trim() ? r.workflow.name : typeof r.skill?.name === 'string' && r.skill.name.trim() ? r.skill.name : null;
  if (!name) return null;
  const typed = typeof r.user_input === 'string' && r.user_input.trim() ? r.user_input : undefined;
  return workflowTitle(name, typed ?? documentOf(r.workflow));
}

/** The same rule as the SQL in the SQLite store, for the memory store. */
export function nextTitle(state: TitleState, title: string, c: TitleCandidates): { title: string; state: TitleState } {
  if (state === TitleState.DEFAULT && c.userTitle !== null) return { title: c.userTitle, state: c.userState };
  if (state === TitleState.FROM_COMMAND) {
    if (c.workflowTitle !== null) return { title: c.workflowTitle, state: TitleState.AUTO };
    if (c.userTitle !== null) return { title, state: TitleState.AUTO };
  }
  return { title, state };
}

/** Preview text of a message for list(); null keeps the previous preview (tool traffic is not shown). */
export function messagePreview(m: StoredMessage): string | null {
  return m.role === 'user' || m.role === 'assistant' ? previewOf(m.content) : null;
}

/** The title the store would have given, replaying messages from the start; stops once it settles. */
export function replayTitle(messages: Iterable<StoredMessage>, rule: TitleRule = 'runs'): { title: string; state: TitleState } {
  let t: { title: string; state: TitleState } = { title: DEFAULT_TITLE, state: TitleState.DEFAULT };
  for (const m of messages) {
    t = nextTitle(t.state, t.title, titleCandidates(m, rule));
    if (t.state === TitleState.AUTO) break;
  }
  return t;
}

/** The preview list() shows for these messages: that of the last one with visible text. */
export function lastPreview(messages: readonly StoredMessage[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const p = messagePreview(messages[i]!);
    if (p !== null) return p;
  }
  return null;
}

const TURN_ERROR_MESSAGE_MAX = 2000;

/** The status and lastTurn an outcome leaves behind. */
export function settleTurn(outcome: TurnOutcome, at: string): { status: ConversationStatus; lastTurn: LastTurn | null } {
  if (outcome === 'done') return { status: 'idle', lastTurn: null };
  if (outcome === 'stopped' || outcome === 'interrupted') return { status: outcome, lastTurn: { status: outcome, at } };
  const code = String(outcome.error?.code ?? 'E_INTERNAL').slice(0, 100);
  const message = String(outcome.error?.message ?? '').slice(0, TURN_ERROR_MESSAGE_MAX);
  return { status: 'failed', lastTurn: { status: 'failed', error: { code, message }, at } };
}

/** Longest search text taken into account. */
const SEARCH_MAX_TERMS = 16;

export function foldText(text: string): string {
  return text.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase();
}

/**
 * The words of a search, folded as SQLite's unicode61 tokenizer (remove_diacritics 2) folds
 * them: letters and digits, without accents, lower case; everything else separates words.
 */
export function searchTerms(q: string | undefined): string[] {
  if (q === undefined) return [];
  return [...new Set(foldText(q).split(/[^\p{L}\p{N}]+/u).filter(Boolean))].slice(0, SEARCH_MAX_TERMS);
}

/** The FTS5 query for terms: each a quoted prefix, all required. */
export function ftsQuery(terms: readonly string[]): string {
  return terms.map((t) => `"${t.replace(/"/g, '""')}"*`).join(' ');
}

/** The memory store's search: the same rule as the FTS5 query, on one text. */
export function textMatches(text: string, terms: readonly string[]): boolean {
  if (!terms.length) return false;
  const words = foldText(text).split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  return terms.every((t) => words.some((w) => w.startsWith(t)));
}

export function unknownMessage(conversationId: string, messageId: string): AppError {
  return new AppError('E_VALIDATION', `Conversation "${conversationId}" has no message "${String(messageId).slice(0, 80)}".`, { field: 'messageId' });
}

export interface NewConversation {
  id: string;
  agentId: string;
  bundleName: string;
  projectId?: string;
  title: string;
  titleState: TitleState;
  model?: string;
  ownerId?: string;
  workspaceId?: string;
}

export function prepareCreate(input: CreateConversationInput, newId: () => string): NewConversation {
  const id = input.id ?? newId();
  if (!isValidConversationId(id)) throw new AppError('E_VALIDATION', 'A conversation id may hold only letters, digits, "-" and "_" (at most 64).', { field: 'id' });
  if (!isStr(input.agentId) || !input.agentId) throw new TypeError('agentId must be a non-empty string');
  if (!isStr(input.bundleName)) throw new TypeError('bundleName must be a string');
  if (input.projectId !== undefined && !isValidProjectId(input.projectId)) {
    throw new AppError('E_VALIDATION', 'A project id may hold only letters, digits, ".", "-" and "_", starting with a letter or digit (at most 64).', { field: 'projectId' });
  }
  const model = prepareModel(input.model);
  const base = {
    id,
    agentId: input.agentId,
    bundleName: input.bundleName,
    ...(input.projectId !== undefined ? { projectId: input.projectId } : {}),
    ...(model !== null ? { model } : {}),
    ...(isStr(input.ownerId) && input.ownerId ? { ownerId: input.ownerId.slice(0, 200) } : {}),
    ...(isStr(input.workspaceId) && input.workspaceId ? { workspaceId: input.workspaceId.slice(0, 200) } : {}),
  };
  const given = input.title === undefined ? '' : input.title.replace(/\s+/g, ' ').trim();
  if (!given) return { ...base, title: DEFAULT_TITLE, titleState: TitleState.DEFAULT };
  // A long generated title is clipped rather than refused: create() runs inside a chat request.
  const title = normaliseTitle(given) ?? `${given.slice(0, TITLE_LIMIT - 1)}…`;
  return { ...base, title, titleState: TitleState.FIXED };
}

/**
 * A turn's watcher that hears one signal at most: a Stop may arrive by several paths (a local
 * call, a notification, a poll). `first` runs before it, once (the watch's own clean-up).
 */
export function onceSignal(on: (signal: TurnSignal) => void, first?: () => void): (signal: TurnSignal) => void {
  let fired = false;
  return (signal) => {
    if (fired) return;
    fired = true;
    first?.();
    on(signal);
  };
}

/** A conversation as create() answers it: nothing run, nothing used yet. */
export function freshConversation(c: NewConversation, now: string): Conversation {
  return {
    id: c.id,
    agentId: c.agentId,
    bundleName: c.bundleName,
    ...(c.projectId !== undefined ? { projectId: c.projectId } : {}),
    title: c.title,
    createdAt: now,
    updatedAt: now,
    status: 'idle',
    variables: {},
    usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 },
    ...(c.model !== undefined ? { model: c.model } : {}),
    ...(c.ownerId !== undefined ? { ownerId: c.ownerId } : {}),
    ...(c.workspaceId !== undefined ? { workspaceId: c.workspaceId } : {}),
  };
}

export function prepareRename(title: string): string {
  const t = typeof title === 'string' ? normaliseTitle(title) : null;
  if (t === null) throw new AppError('E_VALIDATION', `A title must be 1–${TITLE_LIMIT} characters.`, { field: 'title' });
  return t;
}

export function duplicateId(id: string): AppError {
  return new AppError('E_VALIDATION', `A conversation with id "${id}" already exists.`, { field: 'id' });
}

/** A client chat mark the stores can keep: bounded keys, a sha256 digest, ids of our own form. */
export function assertClientChatMark(mark: ClientChatMark): void {
  const bounded = (v: unknown, max: number) => typeof v === 'string' && v.length <= max;
  if (!bounded(mark.owner, 200) || !mark.owner || !bounded(mark.chat, 200) || !isClientChatDigest(mark.history) || !bounded(mark.messageId, 200) || !mark.messageId) {
    throw new TypeError('A client chat mark needs an owner, a chat of at most 200 characters, a sha256 digest and a message id.');
  }
}

export function isClientChatDigest(v: unknown): v is string {
  return typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);
}
