import { z } from 'zod';
import { loadWorkflow } from '../../content/workflows';
import { coerceArgs, defineTool } from './define';
import type { ToolResult } from '../../core/results';

const schema = z.object({
  workflow_path: z
    .string()
    .min(1)
    .describe(
      'The file a menu item names in workflow= or exec= (workflow.yaml, workflow.md, workflow-*.md, a step file, a .md or .xml task), e.g. {project-root}/_bmad/bmm/workflows/2-plan-workflows/create-prd/workflow-create-prd.md. A workflow folder works too. skill:<name> invokes an installed skill by its name, e.g. skill:bmad-help.',
    ),
  data_path: z.string().optional().describe("The menu item's data= file, if it has one; returned as data."),
  user_input: z
    .union([z.string(), z.record(z.string(), z.unknown())])
    .optional()
    .describe("What the user asked for, passed back with the workflow so you can start on it."),
});

export const executeWorkflowTool = defineTool({
  name: 'execute_workflow',
  description: [
    'Load a workflow or task a menu item runs, with every variable and relative path already resolved to full paths. The result says its kind:',
    '- yaml (workflow.yaml): follow instructions step by step under the engine rules, using template when there is one;',
    '- step-file (workflow.md, workflow-*.md): follow instructions, then step (the first step file, already loaded). step_choices lists first steps to choose from instead;',
    '- step: one step file. To go on to the next step, call execute_workflow with the path in the step\'s frontmatter (nextStepFile): it comes back resolved;',
    '- task: follow instructions (the file itself);',
    "- skill (skill:<name>): follow instructions (its SKILL.md, customization and config resolved). skill.root is the skill's folder ({skill-root}), skill.files its references and assets (load them with read_file, or with execute_workflow to get them resolved too). activation lists what the server already did of the skill's activation (customization resolved, persistent facts and files loaded): do not redo it; carry out its remaining steps.",
    'workflow holds the resolved variables (paths such as outputFile or default_output_file), config the resolved config. unresolved lists "name: reason" for values that could not be resolved: ask the user or choose a path in {output_folder}. Save results with save_output into {output_folder}.',
  ].join('\n'),
  schema,
  normalize: (a) => {
    const out = coerceArgs(a, {
      aliases: {
        path: 'workflow_path',
        workflow: 'workflow_path',
        exec: 'workflow_path',
        file_path: 'workflow_path',
        workflowPath: 'workflow_path',
        data: 'data_path',
        dataPath: 'data_path',
        userInput: 'user_input',
      },
    });
    for (const key of ['skill', 'skill_name']) {
      if (out.workflow_path === undefined && typeof out[key] === 'string') {
        out.workflow_path = `skill:${(out[key] as string).trim().replace(/^skill:\s*/, '')}`;
        delete out[key];
      }
    }
    return out;
  },
  async run(args, ctx): Promise<ToolResult> {
    return loadWorkflow(args.workflow_path, ctx, { userInput: args.user_input, dataPath: args.data_path });
  },
});
