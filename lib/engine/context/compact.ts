import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { Compaction, CompactionMark, StoredMessage } from '../../store/conversations/types';
import { AppError } from '../../core/errors';
import { modelView } from '../../core/results';
import { parseToolArguments, type ToolCall, type ToolDefinition } from '../../model/llm/types';
import type { CompactionReport } from '../../model/loop/types';
import { countMessage, countRequest, countRequestAsync, FRAMING } from './count';
import type { Tokenizer } from './tokens';

export interface ContextBudget {
  profile: string;
  contextWindow: number;
  maxOutputTokens: number;
}

/** Tokens a request may have: the rest of the window is kept for the answer. */
export function requestLimit(b: ContextBudget): number {
  return Math.max(1, b.contextWindow - b.maxOutputTokens);
}

/**
 * A compaction frees more than it must, down to this share of the limit, so the requests after
 * it grow from the compacted form again (an exact prefix each time) instead of compacting anew
 * at every call and changing the prefix each time.
 */
export const LOW_WATER = 0.75;

/** A result this small costs less to keep than its marker does. */
const MIN_ELIDE_TOKENS = 150;
/** Tool-call arguments longer than this (characters) are document text, shortened once seen. */
const LONG_ARGUMENT_CHARS = 400;

export interface PlanInput {
  history: StoredMessage[];
  render(history: StoredMessage[]): ChatCompletionMessageParam[];
  tools: ToolDefinition[];
  tokenizer: Tokenizer;
  budget: ContextBudget;
}

export type PlanResult =
  | { ok: true; marks: CompactionMark[]; messages: ChatCompletionMessageParam[]; report: CompactionReport }
  | { ok: false; error: AppError };

type Tool = Extract<StoredMessage, { role: 'tool' }>;
type Assistant = Extract<StoredMessage, { role: 'assistant' }>;

interface Action {
  /** 1, 2: compact down to the low-water mark; 3: only as far as the limit. */
  tier: 1 | 2 | 3;
  /** Applies the action to the working copy; returns the tokens it is expected to save. */
  apply(): number;
}

const fmt = (n: number) => n.toLocaleString('en');

function toolMarker(m: Tool, call: ToolCall | undefined, tokens: number, huge: boolean): string {
  const result = m.result as { ok?: unknown; path?: unknown };
  const args = call ? (call.arguments.length > 300 ? `${call.arguments.slice(0, 300)}…` : call.arguments) : '';
  const again = call ? `call ${m.name} again with ${args}` : `call ${m.name} again`;
  const part = huge && m.name === 'read_file' ? ' It is too large for this model: read it in parts (start_line, end_line).' : '';
  return JSON.stringify({
    ok: result.ok === true,
    compacted: true,
    ...(typeof result.path === 'string' ? { path: result.path } : {}),
    note: `This ${m.name} result (${fmt(tokens)} tokens) was removed to fit the model's context window. To see it again, ${again}.${part}`,
  });
}

/** Long strings in the arguments (a document's text) become a note; null when nothing is long. */
function shortenArguments(raw: string, t: Tokenizer): string | null {
  const parsed = parseToolArguments(raw);
  if (!parsed.ok) return null;
  let changed = false;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string' && v.length >= LONG_ARGUMENT_CHARS) {
      changed = true;
      return `[${fmt(t.count(v))} tokens removed to fit the context window; this call already ran]`;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  const out = walk(parsed.value);
  return changed ? JSON.stringify(out) : null;
}

/**
 * Counts, yielding to the event loop, the large texts planCompaction will count, so its own
 * (synchronous) counts are answered from the tokenizer's cache: the rendered history, each tool
 * result as stored and each call's arguments with their long strings.
 */
export async function warmCompaction(input: PlanInput): Promise<void> {
  const t = input.tokenizer;
  await countRequestAsync(t, { messages: input.render(input.history), tools: input.tools });
  for (const m of input.history) {
    if (m.role === 'tool') await t.countAsync(JSON.stringify(modelView(m.result)));
    if (m.role !== 'assistant') continue;
    for (const c of m.toolCalls ?? []) {
      await t.countAsync(c.arguments);
      const parsed = c.arguments.length >= LONG_ARGUMENT_CHARS ? parseToolArguments(c.arguments) : null;
      if (parsed?.ok) for (const s of longStrings(parsed.value)) await t.countAsync(s);
    }
  }
}

function longStrings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string' && v.length >= LONG_ARGUMENT_CHARS) out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => longStrings(x, out));
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => longStrings(x, out));
  return out;
}

/**
 * Decides what to take out of a conversation's history so its next request fits the profile's
 * window, in this order: tool results the model has already answered and the long arguments of
 * calls it has gone on from (oldest first; any result larger than half the limit too), then whole
 * old turns (oldest first), then this step's own calls and results. Never the system prompt, the
 * latest execute_workflow result (the active workflow's instructions) with its call, or the last
 * user message. Works on a copy; the marks say what changed, for the store to keep.
 */
export function planCompaction(input: PlanInput): PlanResult {
  const { tokenizer: t, tools, budget } = input;
  const limit = requestLimit(budget);
  const target = Math.floor(limit * LOW_WATER);
  const work: StoredMessage[] = input.history.map((m) => ({ ...m }));
  const before = countRequest(t, { messages: input.render(work), tools }).total;

  let first = 0;
  while (first < work.length && work[first].role === 'system') first++;
  let lastUser = -1;
  let lastAssistant = -1;
  work.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
    if (m.role === 'assistant') lastAssistant = i;
  });

  // Each tool result belongs to the nearest assistant message before it that made its call.
  const ownerOf = new Map<number, number>();
  const callOf = new Map<number, ToolCall>();
  for (let i = first; i < work.length; i++) {
    const m = work[i];
    if (m.role !== 'tool') continue;
    for (let j = i - 1; j >= first; j--) {
      const a = work[j];
      const call = a.role === 'assistant' ? a.toolCalls?.find((c) => c.id === m.toolCallId) : undefined;
      if (call) {
        ownerOf.set(i, j);
        callOf.set(i, call);
        break;
      }
    }
  }
  let keptTool = -1;
  for (let i = work.length - 1; i >= first; i--) {
    const m = work[i];
    if (m.role === 'tool' && m.name === 'execute_workflow' && m.result.ok && m.compacted?.kind !== 'dropped') {
      keptTool = i;
      break;
    }
  }
  const keptCall = keptTool >= 0 ? (ownerOf.get(keptTool) ?? -1) : -1;

  const tokensOf = (i: number): number => messageTokens(input, work[i]);
  const mark = (i: number, compacted: Compaction) => {
    work[i] = { ...work[i], compacted } as StoredMessage;
  };

  const elideTool = (i: number): number => {
    const m = work[i];
    if (m.role !== 'tool' || m.compacted || i === keptTool) return 0;
    const tokens = t.count(JSON.stringify(modelView(m.result)));
    if (tokens < MIN_ELIDE_TOKENS) return 0;
    const content = toolMarker(m, callOf.get(i), tokens, tokens > limit / 2);
    mark(i, { kind: 'elided', content });
    return tokens - t.count(content);
  };
  const shortenCalls = (i: number): number => {
    const m = work[i] as Assistant;
    if (m.compacted || !m.toolCalls?.length) return 0;
    const toolArguments: Record<string, string> = {};
    let saved = 0;
    for (const c of m.toolCalls) {
      const short = shortenArguments(c.arguments, t);
      if (short === null) continue;
      toolArguments[c.id] = short;
      saved += t.count(c.arguments) - t.count(short);
    }
    if (!Object.keys(toolArguments).length) return 0;
    mark(i, { kind: 'elided', toolArguments });
    return saved;
  };
  const dropTurn = (start: number, end: number): number => {
    let saved = 0;
    for (let i = start; i < end; i++) {
      const m = work[i];
      if (m.compacted?.kind === 'dropped' || i === keptTool || i === keptCall) continue;
      // The kept call's other results stay too (every call needs its answer), shortened instead.
      if (m.role === 'tool' && keptCall >= 0 && ownerOf.get(i) === keptCall) {
        saved += elideTool(i);
        continue;
      }
      saved += tokensOf(i);
      mark(i, { kind: 'dropped' });
    }
    return saved;
  };

  const actions: Action[] = [];
  // Tier 1: what the model has read and answered, oldest first, plus anything too large to keep.
  for (let i = first; i < work.length; i++) {
    const m = work[i];
    if (m.role === 'tool') {
      const seen = i < lastAssistant;
      if (seen) actions.push({ tier: 1, apply: () => elideTool(i) });
      else actions.push({ tier: 1, apply: () => (tokensOf(i) > limit / 2 ? elideTool(i) : 0) });
    } else if (m.role === 'assistant' && i < lastAssistant && m.toolCalls?.length) {
      actions.push({ tier: 1, apply: () => shortenCalls(i) });
    }
  }
  // Tier 2: whole turns before the last user message, oldest first.
  const starts: number[] = [];
  for (let i = first; i < lastUser; i++) if (work[i].role === 'user') starts.push(i);
  starts.forEach((s, k) => {
    const end = k + 1 < starts.length ? starts[k + 1] : lastUser;
    actions.push({ tier: 2, apply: () => dropTurn(s, end) });
  });
  // Tier 3: this step's own calls and results. The calls already ran, so their long arguments
  // (a document just saved) can go before the results the model has not read yet.
  if (lastAssistant >= first && (work[lastAssistant] as Assistant).toolCalls?.length) actions.push({ tier: 3, apply: () => shortenCalls(lastAssistant) });
  for (let i = Math.max(first, lastAssistant + 1); i < work.length; i++) {
    if (work[i].role === 'tool') actions.push({ tier: 3, apply: () => elideTool(i) });
  }

  let estimate = before;
  let k = 0;
  for (; k < actions.length; k++) {
    if (estimate <= (actions[k].tier === 3 ? limit : target)) break;
    estimate -= actions[k].apply();
  }
  let messages = input.render(work);
  let count = countRequest(t, { messages, tools });
  // Estimates miss the notes that stand in for dropped runs and the effects of deduplication.
  while (count.total > limit && k < actions.length) {
    if (actions[k++].apply() === 0) continue;
    messages = input.render(work);
    count = countRequest(t, { messages, tools });
  }
  if (count.total > limit) return { ok: false, error: tooLarge(input, work, messages, count, keptTool, lastUser, limit) };

  const marks: CompactionMark[] = [];
  const changed = { toolResults: 0, toolArguments: 0, droppedMessages: 0 };
  work.forEach((m, i) => {
    if (!m.compacted || m.compacted === input.history[i].compacted) return;
    marks.push({ messageId: m.id, compacted: m.compacted });
    if (m.compacted.kind === 'dropped') changed.droppedMessages++;
    else if (m.role === 'tool') changed.toolResults++;
    else changed.toolArguments++;
  });
  return { ok: true, marks, messages, report: { profile: budget.profile, limit, tokensBefore: before, tokensAfter: count.total, ...changed } };
}

/** Tokens of one stored message as the model gets it (a lone render, minus what render adds around it). */
function messageTokens(input: PlanInput, m: StoredMessage): number {
  if (m.compacted?.kind === 'dropped') return 0;
  // Alone, a system message would merge into the system prompt; mid-history it is a note.
  const rendered = input.render(m.role === 'system' ? [{ ...m, role: 'user', content: `[server note] ${m.content}` }] : [m]);
  // [0] is the system prompt; an assistant's tool calls also get repaired results after [1].
  return rendered[1] ? countMessage(input.tokenizer, rendered[1]) : 0;
}

function tooLarge(
  input: PlanInput,
  work: StoredMessage[],
  messages: ChatCompletionMessageParam[],
  count: ReturnType<typeof countRequest>,
  keptTool: number,
  lastUser: number,
  limit: number,
): AppError {
  const t = input.tokenizer;
  const b = input.budget;
  const system = count.messages[0] ?? 0;
  const one = (i: number) => (i >= 0 && work[i].compacted?.kind !== 'dropped' ? messageTokens(input, work[i]) : 0);
  const workflow = one(keptTool);
  const user = one(lastUser);
  const rest = Math.max(0, count.total - system - count.tools - workflow - user - FRAMING.priming);
  const parts = [
    `the system prompt ${fmt(system)}`,
    `the tool schemas ${fmt(count.tools)}`,
    ...(workflow ? [`the active workflow's instructions ${fmt(workflow)}`] : []),
    `the last user message ${fmt(user)}`,
    ...(rest ? [`the rest of this turn ${fmt(rest)}`] : []),
  ];
  return new AppError(
    'E_CONTEXT_TOO_LARGE',
    `The request does not fit profile "${b.profile}" even after compaction: it needs ${fmt(count.total)} tokens (${parts.join(', ')}), and the profile allows ${fmt(limit)} (contextWindow ${fmt(b.contextWindow)} less maxOutputTokens ${fmt(b.maxOutputTokens)}). Shorten the message, or choose a profile with a larger context window.`,
    { profile: b.profile, tokens: count.total, limit, systemPrompt: system, toolSchemas: count.tools, workflow, lastUserMessage: user, rest, messages: messages.length },
  );
}
