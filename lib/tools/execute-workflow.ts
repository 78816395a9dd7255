import { z } from 'zod';
import { loadWorkflow } from '../workflows';
import { coerceArgs, defineTool } from './define';
import type { ToolResult } from '../results';

const schema = z.object({
  workflow_path: z
    .string()
    .min(1)
    .describe('Path to the workflow.yaml, e.g. {bundle-root}/workflows/intake/workflow.yaml (a workflow folder works too).'),
  user_input: z
    .union([z.string(), z.record(z.string(), z.unknown())])
    .optional()
    .describe("What the user asked for, passed back with the workflow so you can start on it."),
});

export const executeWorkflowTool = defineTool({
  name: 'execute_workflow',
  description:
    'Load a workflow: its resolved workflow.yaml (variables expanded), its config, instructions, template and the core workflow engine rules. Then follow the instructions step by step and save results with save_output into {output_folder}.',
  schema,
  normalize: (a) => coerceArgs(a, { aliases: { path: 'workflow_path', workflow: 'workflow_path', file_path: 'workflow_path', workflowPath: 'workflow_path', userInput: 'user_input' } }),
  async run(args, ctx): Promise<ToolResult> {
    return loadWorkflow(args.workflow_path, ctx, { userInput: args.user_input });
  },
});
