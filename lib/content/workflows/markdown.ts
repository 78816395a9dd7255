import { expandVariables, type PathContext } from '../../core/paths';
import { isFailure, type ToolFailure } from '../../core/results';
import { findMarkdownConfig } from './config';
import { resolveContent } from './content';
import { dirnameVirtual, readText, type LoadedFile } from './files';
import { splitFrontmatter } from '../../core/frontmatter';
import { findFirstStep, isStepFile, type FirstStep } from './steps';
import type { LoadedStep, WorkflowResult } from './types';
import { Unresolved } from './unresolved';
import { baseScope, resolveMap, type VariableSources } from './variables';
import { resolvedConfig, type Shared } from './yaml-workflow';

// "Load config from `{project-root}/_bmad/bmm/config.yaml`": the config a step-file workflow's text loads.
const CONFIG_IN_TEXT = /\{project-root\}\/[^\s`'"<>()]*config\.ya?ml/;

function pinDate(values: Record<string, unknown>, date: string): void {
  if (values.date === 'system-generated') values.date = date;
}

/**
 * A step file: its frontmatter resolved against its own folder (with the workflow's variables
 * to draw on) and its text resolved the same way.
 */
async function loadStep(
  file: LoadedFile,
  sources: VariableSources,
  inherited: Record<string, unknown>,
  unresolved: Unresolved,
  foundBy: string,
  keyPrefix: string,
): Promise<{ step: LoadedStep; warnings: string[] }> {
  const split = splitFrontmatter(file.content);
  const baseDir = dirnameVirtual(file.path);
  const { values, variables } = resolveMap(split.data, sources, unresolved, { baseDir, inherited, keyPrefix });
  pinDate(values, sources.date);
  const content = await resolveContent(split.body, sources, variables, baseDir);
  return {
    step: { path: file.path, frontmatter: values, content, found_by: foundBy },
    warnings: split.problem ? [`${file.path}: ${split.problem}`] : [],
  };
}

/**
 * A markdown or XML file a menu runs: a step-file workflow (its first step loaded), a step file
 * on its own, or a task. Its frontmatter is the workflow's variables; its text is what to follow.
 */
export interface MarkdownExtras {
  /** Keys resolved with the frontmatter's, as if it wrote them (a skill's `[workflow]` customization). */
  data?: Record<string, unknown>;
  /** Config keys laid over the config file's (BMAD's central config layers win over module configs). */
  config?: Record<string, unknown>;
  /**
   * Only step files count as a first step: a skill's SKILL.md also tells the model to follow
   * references it loads on demand (`references/headless.md`), which are no steps.
   */
  stepFilesOnly?: boolean;
}

function onlyStepFiles(first: FirstStep | null): FirstStep | null {
  if (first?.kind === 'one') return isStepFile(first.path) ? first : null;
  if (first?.kind === 'choices') {
    const paths = first.paths.filter(isStepFile);
    return paths.length > 1 ? { ...first, paths } : paths.length === 1 ? { kind: 'one', path: paths[0], foundBy: first.foundBy } : null;
  }
  return first;
}

export async function loadMarkdownWorkflow(file: LoadedFile, ctx: PathContext, shared: Shared, extras: MarkdownExtras = {}): Promise<WorkflowResult | ToolFailure> {
  const isXml = /\.xml$/i.test(file.path);
  const split = isXml ? { data: {}, body: file.content } : splitFrontmatter(file.content);
  const installedPath = dirnameVirtual(file.path);
  const unresolved = new Unresolved();
  const warnings: string[] = split.problem ? [`${file.path}: ${split.problem}`] : [];
  const sources: VariableSources = { ctx, agent: shared.agent, config: {}, date: shared.date, installedPath };

  const declared = [split.data.config_source, split.data.main_config].find((v): v is string => typeof v === 'string' && v.trim() !== '');
  const inText = CONFIG_IN_TEXT.exec(split.body)?.[0] ?? null;
  const scope = baseScope(sources, shared.agent);
  const config = await findMarkdownConfig(
    { frontmatter: declared ? expandVariables(declared, scope).text : null, text: inText ? expandVariables(inText, scope).text : null },
    installedPath,
    ctx,
  );
  if (isFailure(config)) return config;
  warnings.push(...config.warnings);
  sources.config = { ...config.data, ...(extras.config ?? {}) };
  sources.configSource = config.path;

  const { values: workflow, variables } = resolveMap({ ...split.data, ...(extras.data ?? {}) }, sources, unresolved, { baseDir: installedPath });
  pinDate(workflow, shared.date);
  workflow.installed_path = installedPath;
  if (sources.configSource) workflow.config_source = sources.configSource;

  const result: WorkflowResult = {
    ok: true,
    kind: 'task',
    path: file.path,
    workflow,
    instructions: { path: file.path, content: await resolveContent(split.body, sources, variables, installedPath) },
    config: resolvedConfig(sources),
    unresolved: [],
  };

  if (isXml) {
    // XML tasks are run as written: no steps to look ahead to.
  } else if (isStepFile(file.path)) {
    result.kind = 'step';
  } else {
    const found = await findFirstStep(file.path, split.body, workflow, sources, variables);
    const first = extras.stepFilesOnly ? onlyStepFiles(found) : found;
    if (first) result.kind = 'step-file';
    if (first?.kind === 'one') {
      const loaded = await readText(first.path, ctx);
      if (isFailure(loaded)) unresolved.add('step', `${first.path} cannot be loaded: ${loaded.error.message}`);
      else {
        const { step, warnings: stepWarnings } = await loadStep(loaded, sources, variables, unresolved, first.foundBy, 'step.');
        result.step = step;
        warnings.push(...stepWarnings);
      }
    } else if (first?.kind === 'choices') {
      result.step_choices = first.paths;
    } else if (first?.kind === 'broken') {
      unresolved.add(first.name, first.reason);
    }
  }

  result.unresolved = unresolved.list();
  if (warnings.length) result.warnings = warnings;
  return result;
}
