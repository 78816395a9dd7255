import { z } from 'zod';
import type { HeadlessContract } from './types';

/**
 * Reading a headless answer: the last JSON object in it (fenced or not), checked against the
 * contract's schema. Every step is linear in the answer's length: one scan that tracks strings
 * only inside braces, and each candidate parsed once (candidates never overlap).
 */

/** Rescans after an opening brace that never closed; bounded, so the whole stays linear. */
const MAX_RESCANS = 4;

/** Top-level `{...}` spans of `text`, in order, from `from`; `open` is where an unclosed one began. */
function spans(text: string, from: number): { found: Array<[number, number]>; open: number } {
  const found: Array<[number, number]> = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  let escaped = false;
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (depth > 0 && inString) {
      if (escaped) escaped = false;
      else if (c === 92 /* \ */) escaped = true;
      else if (c === 34 /* " */) inString = false;
      else if (c === 10 /* newline: JSON strings have none, so this was prose */) inString = false;
      continue;
    }
    if (c === 123 /* { */) {
      if (depth === 0) start = i;
      depth++;
    } else if (c === 125 /* } */ && depth > 0) {
      depth--;
      if (depth === 0) found.push([start, i + 1]);
    } else if (c === 34 && depth > 0) inString = true;
  }
  return { found, open: depth > 0 ? start : -1 };
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The last JSON object in an answer, or null. */
export function lastJsonObject(answer: string): Record<string, unknown> | null {
  let best: { at: number; value: Record<string, unknown> } | null = null;
  let from = 0;
  for (let pass = 0; pass <= MAX_RESCANS && from < answer.length; pass++) {
    const { found, open } = spans(answer, from);
    for (let k = found.length - 1; k >= 0; k--) {
      const [s, e] = found[k]!;
      if (best && s <= best.at) break;
      const value = parseObject(answer.slice(s, e));
      if (value) {
        best = { at: s, value };
        break;
      }
    }
    // A brace in prose that never closed swallowed the rest: look again just after it.
    if (open < 0) break;
    from = open + 1;
  }
  return best?.value ?? null;
}

const Status = z.enum(['complete', 'partial', 'blocked'], { error: 'status must be "complete", "partial" or "blocked"' });
const TextList = z.array(z.unknown(), { error: 'must be an array' });

function schemaOf(contract: HeadlessContract) {
  return z
    .looseObject({
      status: Status,
      intent: contract.intentRequired ? z.string({ error: 'intent is required' }).trim().min(1, 'intent is required') : z.string().optional(),
      reason: z.string().optional(),
      assumptions: TextList.optional(),
      open_questions: TextList.optional(),
    })
    .superRefine((v, ctx) => {
      if (v.status === 'blocked' && !(typeof v.reason === 'string' && v.reason.trim())) {
        ctx.addIssue({ code: 'custom', path: ['reason'], message: 'reason is required when status is "blocked"' });
      }
    });
}

export type Reading =
  | { kind: 'result'; result: Record<string, unknown> }
  /** A JSON object that is not a valid result: what is wrong with it. */
  | { kind: 'invalid'; problems: string[] }
  /** No JSON; the answer ends with this question. */
  | { kind: 'question'; question: string }
  | { kind: 'none' };

const MAX_QUESTION = 500;

/** The question an answer ends with (its last line, when that ends with "?"), or null. */
export function trailingQuestion(answer: string): string | null {
  // Markdown around the last sentence (**...?**, _..._) does not hide the question mark.
  const end = answer.replace(/[\s*_`>)\]"'”’]+$/u, '');
  if (!end.endsWith('?')) return null;
  const lastBreak = end.lastIndexOf('\n');
  const line = end.slice(lastBreak + 1).replace(/^[\s>*_#-]+/, '').trim();
  return line.length > MAX_QUESTION ? `${line.slice(0, MAX_QUESTION - 1)}…` : line;
}

/** What a final answer says, read against the skill's contract. */
export function readAnswer(answer: string, contract: HeadlessContract): Reading {
  const found = lastJsonObject(answer);
  if (!found) {
    const question = trailingQuestion(answer);
    return question ? { kind: 'question', question } : { kind: 'none' };
  }
  const checked = schemaOf(contract).safeParse(found);
  if (checked.success) return { kind: 'result', result: found };
  return { kind: 'invalid', problems: checked.error.issues.map((i) => (i.path.length && !i.message.startsWith(String(i.path[0])) ? `${i.path.join('.')}: ${i.message}` : i.message)) };
}
