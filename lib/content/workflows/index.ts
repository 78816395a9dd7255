import { today, withoutReserved, type PathContext } from '../../core/paths';
import { isFailure, type ToolFailure, type ToolResult } from '../../core/results';
import { basenameVirtual, dirnameVirtual, readText, withContext, type LoadedFile } from './files';
import { loadMarkdownWorkflow } from './markdown';
import type { LoadWorkflowOptions, WorkflowResult } from './types';
import { isSkillRef, loadSkill, loadSkillFile } from './skills';
import { loadYamlWorkflow, type Shared } from './yaml-workflow';

export type { LoadedFile, LoadedStep, LoadWorkflowOptions, WorkflowKind, WorkflowResult } from './types';
export { unresolvedName } from './unresolved';
export { isStepFile } from './steps';
export { isSkillRef } from './skills';

const FOLDER_ENTRIES = ['workflow.yaml', 'workflow.md'];
const BARE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*-[A-Za-z0-9_-]+$/;

// Releases moved workflows from workflow.yaml to workflow.md while some menus still name the old file.
const SIBLING: Record<string, string> = { 'workflow.yaml': 'workflow.md', 'workflow.md': 'workflow.yaml' };

async function readTarget(target: string, ctx: PathContext): Promise<{ file: Awaited<ReturnType<typeof readText>>; warning?: string }> {
  const file = await readText(target, ctx);
  if (!isFailure(file)) return { file };
  if (file.error.code === 'EISDIR') {
    for (const name of FOLDER_ENTRIES) {
      const inFolder = await readText(`${file.path}/${name}`, ctx);
      if (!isFailure(inFolder)) return { file: inFolder };
    }
  }
  const sibling = file.path ? SIBLING[basenameVirtual(file.path)] : undefined;
  if (file.error.code === 'ENOENT' && file.path && sibling) {
    const other = await readText(`${dirnameVirtual(file.path)}/${sibling}`, ctx);
    if (!isFailure(other)) return { file: other, warning: `${file.path} does not exist; loaded ${other.path}, the same workflow in its newer form` };
  }
  return { file };
}

/**
 * Loads whatever a BMAD menu item runs: a workflow.yaml, a step-file workflow (workflow.md,
 * workflow-*.md) with its first step, a single step file, or a markdown / XML task; a folder
 * stands for its workflow.yaml or workflow.md, and `skill:<name>` (or a bare skill name) for
 * the skill (see skills.ts); a file inside a skill folder is resolved with that skill's
 * customization. The kind follows the file's extension, whatever attribute (`workflow=`,
 * `exec=`) named it.
 */
export async function loadWorkflow(target: string, ctx: PathContext, options: LoadWorkflowOptions = {}): Promise<ToolResult> {
  const date = typeof ctx.variables?.date === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(ctx.variables.date) ? ctx.variables.date : today();
  const shared: Shared = { agent: withoutReserved(ctx.variables), date };
  let result: WorkflowResult | ToolFailure;
  if (isSkillRef(target)) {
    result = await loadSkill(target, ctx, shared);
  } else {
    const { file, warning } = await readTarget(target, ctx);
    // Skills are named in prose ("invoke the `bmad-help` skill"): a bare name no file has is that skill.
    if (isFailure(file) && file.error.code === 'ENOENT' && BARE_NAME.test(target.trim())) {
      const skill = await loadSkill(`skill:${target.trim()}`, ctx, shared);
      return isFailure(skill) ? { ...file, error: { ...file.error, message: `${file.error.message}; no installed skill is named ${target.trim()} either` } } : withOptions(skill, ctx, options);
    }
    if (isFailure(file)) return file;
    const loaded: LoadedFile = { path: file.path, content: file.content };
    result = /\.ya?ml$/i.test(file.path)
      ? await loadYamlWorkflow(loaded, ctx, shared)
      : ((await loadSkillFile(loaded, ctx, shared)) ?? (await loadMarkdownWorkflow(loaded, ctx, shared)));
    if (!isFailure(result) && warning) result.warnings = [warning, ...(result.warnings ?? [])];
  }
  if (isFailure(result)) return result;
  return withOptions(result, ctx, options);
}

async function withOptions(result: WorkflowResult, ctx: PathContext, options: LoadWorkflowOptions): Promise<ToolResult> {
  if (options.dataPath !== undefined && options.dataPath.trim() !== '') {
    const data = await readText(options.dataPath, ctx);
    if (isFailure(data)) return withContext(data, 'data_path');
    result.data = { path: data.path, content: data.content };
  }
  if (options.userInput !== undefined) result.user_input = options.userInput;
  return result as WorkflowResult & ToolResult;
}
