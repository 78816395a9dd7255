import { z } from 'zod';
import { fail, type ToolResult } from '../../core/results';
import { coerceArgs, defineTool } from './define';

/** Enough for a research or bootstrap task; the turn's own limit still caps it. */
export const DEFAULT_SUBAGENT_STEPS = 10;
export const MAX_SUBAGENT_STEPS = 50;

const schema = z.object({
  instructions: z
    .string()
    .trim()
    .min(1)
    .max(20_000)
    .describe('The sub-task, complete in itself: what to find or do, where to look, what to answer with. The subagent sees nothing else of this conversation.'),
  input: z.string().max(100_000).optional().describe('Material the task works on (text, a list of paths), if any.'),
  max_steps: z
    .number()
    .int()
    .min(1)
    .max(MAX_SUBAGENT_STEPS)
    .optional()
    .describe(`Model calls the subagent may make (default ${DEFAULT_SUBAGENT_STEPS}); they count against this turn's own limit.`),
});

export const spawnSubagentTool = defineTool({
  name: 'spawn_subagent',
  description: [
    'Hand a focused sub-task to a subagent: a helper that works with the same tools and files as you (reading, searching, writing into {output_folder}), without this conversation and without asking the user anything, and answers with a concise result.',
    'Use it when your instructions say to spawn or launch a subagent, or for research and bootstrap work whose intermediate steps you do not need to see. Its model calls count against this turn.',
    'Returns { ok, result, steps, usage, tool_calls: [{ name, ok }] }; E_SUBAGENT_LIMIT when it ran out of steps, with what it had so far in error.details.',
  ].join('\n'),
  schema,
  normalize: (a) =>
    coerceArgs(a, {
      aliases: { task: 'instructions', prompt: 'instructions', maxSteps: 'max_steps', steps: 'max_steps' },
      ints: ['max_steps'],
    }),
  async run(args, ctx): Promise<ToolResult> {
    if (!ctx.subagent) {
      return fail('E_INVALID_ARGS', 'spawn_subagent is not available here (a subagent cannot start another one). Do the task yourself with the other tools.');
    }
    return ctx.subagent(
      { instructions: args.instructions, ...(args.input !== undefined ? { input: args.input } : {}), ...(args.max_steps !== undefined ? { maxSteps: args.max_steps } : {}) },
      ctx.signal,
    );
  },
});
