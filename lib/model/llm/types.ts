/** Tokens a model call used, as the provider reported them (zero when it did not). */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens the provider served from its prompt cache (part of promptTokens). */
  cachedTokens?: number;
}

/** A tool call as the model sent it; `arguments` is the raw JSON text (it may be invalid JSON). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
  /**
   * Set when the arguments passed MODEL_OUTPUT_LIMITS.toolArgumentChars: the characters received
   * before the answer was cut off. `arguments` is then "{}" and the call does not run.
   */
  oversized?: number;
}

/**
 * What one model answer may hold. A model stuck repeating itself can stream without end; past
 * these the server stops reading the answer (closing the connection) instead of holding it.
 */
export const MODEL_OUTPUT_LIMITS = {
  /** One tool call's arguments, in characters (1 MB of ASCII). */
  toolArgumentChars: 1_000_000,
  /** The text of one answer, in characters. */
  answerChars: 1_000_000,
} as const;

/** OpenAI function tool definition (chat completions `tools[]`). */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export type ParsedToolArguments =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; raw: unknown; reason: 'not-json' | 'not-object'; detail?: string };

/**
 * The one reading of a model's tool arguments: empty means no arguments, double-encoded JSON is
 * unwrapped (some servers send a JSON string of the object), and anything but an object fails.
 */
export function parseToolArguments(raw: unknown): ParsedToolArguments {
  if (raw === undefined || raw === null) return { ok: true, value: {} };
  if (typeof raw === 'object' && !Array.isArray(raw)) return { ok: true, value: raw as Record<string, unknown> };
  if (typeof raw !== 'string') return { ok: false, raw, reason: 'not-object' };
  if (raw.trim() === '') return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
    if (typeof value === 'string' && value.trim().startsWith('{')) value = JSON.parse(value);
  } catch (e) {
    return { ok: false, raw, reason: 'not-json', detail: e instanceof Error ? e.message : 'syntax error' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, raw, reason: 'not-object' };
  return { ok: true, value: value as Record<string, unknown> };
}

/** What to show of a call's arguments: the object when they parse, the raw text when they do not. */
export function toolArgumentsView(raw: unknown): unknown {
  const parsed = parseToolArguments(raw);
  return parsed.ok ? parsed.value : parsed.raw;
}
