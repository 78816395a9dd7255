import type { z } from 'zod';
import type { ToolResult } from '../../core/results';
import type { ToolContext } from './types';

/** One tool: its OpenAI name, what the model reads about it, its argument schema and its body. */
export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: S;
  /** Forgives common model slips (aliases, numbers sent as strings) before validation. */
  normalize?: (args: Record<string, unknown>) => Record<string, unknown>;
  run(args: z.infer<S>, ctx: ToolContext): Promise<ToolResult>;
}

export function defineTool<S extends z.ZodType>(tool: Tool<S>): Tool<S> {
  return tool;
}

interface CoerceSpec {
  aliases?: Record<string, string>;
  ints?: string[];
  bools?: string[];
}

/** Returns a copy with aliases renamed and numeric / boolean strings turned into values. */
export function coerceArgs(args: Record<string, unknown>, spec: CoerceSpec): Record<string, unknown> {
  const out: Record<string, unknown> = { ...args };
  for (const [alias, name] of Object.entries(spec.aliases ?? {})) {
    if (out[name] === undefined && out[alias] !== undefined) {
      out[name] = out[alias];
      delete out[alias];
    }
  }
  for (const key of spec.ints ?? []) {
    const v = out[key];
    if (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v)) out[key] = Number(v);
    if (v === null) delete out[key];
  }
  for (const key of spec.bools ?? []) {
    const v = out[key];
    if (v === 'true') out[key] = true;
    if (v === 'false') out[key] = false;
    if (v === null) delete out[key];
  }
  return out;
}

export function aborted(ctx: ToolContext): boolean {
  return ctx.signal?.aborted === true;
}
