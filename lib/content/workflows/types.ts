import type { LoadedFile } from './files';

export type { LoadedFile } from './files';

/**
 * - `yaml`: a workflow.yaml run by the core engine (`engine`), with `instructions` and `template`.
 * - `step-file`: a markdown workflow (workflow.md, workflow-*.md) that walks step files; its
 *   first step comes loaded in `step`.
 * - `step`: one step file of such a workflow, loaded on its own (the way to the next step).
 * - `task`: any other markdown or XML file a menu runs (party mode's workflow.md, a core task).
 * - `skill`: a skill's SKILL.md (6.3 on), its customization resolved.
 */
export type WorkflowKind = 'yaml' | 'step-file' | 'step' | 'task' | 'skill';

/** The skill a `skill:<name>` target loaded. */
export interface SkillInfo {
  name: string;
  /** Virtual path of the skill's folder: what `{skill-root}` means in its files. */
  root: string;
  description?: string;
  /** Its customization layers that were merged, in BMAD's order (customize.toml, then `_bmad/custom/` overrides). */
  customization?: string[];
  /** Its files (references, assets, steps) by virtual path, for read_file. */
  files: string[];
}

/** What the server did of a skill's activation before handing it over, so the model does not redo it. */
export interface SkillActivation {
  /** Work done: customization resolved, config layers read. */
  done: string[];
  /** Persistent facts given verbatim. */
  facts: string[];
  /** Files loaded for `file:` facts and for activation steps that load a file. */
  loaded: LoadedFile[];
  /** `path: reason` for those that could not be loaded. */
  not_loaded: string[];
  /** Activation steps left to the model, in order. */
  steps: string[];
}

export interface LoadedStep extends LoadedFile {
  /** The step's frontmatter, resolved like the workflow's (its `nextStepFile` is a full virtual path). */
  frontmatter: Record<string, unknown>;
  /** How the step was found: `directive` (the workflow's text), `frontmatter <key>` or `steps folder`. */
  found_by: string;
}

export interface WorkflowResult {
  ok: true;
  kind: WorkflowKind;
  /** Virtual path of the file loaded. */
  path: string;
  /** workflow.yaml, or a markdown file's frontmatter, resolved; plus `installed_path` and `config_source`. */
  workflow: Record<string, unknown>;
  /** What to follow: the yaml's instructions file, or the markdown / XML file's own text, resolved. */
  instructions: LoadedFile;
  step?: LoadedStep;
  /** Full virtual paths of the first steps the workflow chooses between; load the chosen one with execute_workflow. */
  step_choices?: string[];
  template?: LoadedFile;
  engine?: LoadedFile;
  /** The workflow's config file, resolved. */
  config: Record<string, unknown>;
  /** `name: reason` for each variable or path that could not be given a usable value. */
  unresolved: string[];
  /** The menu item's `data=` file. */
  data?: LoadedFile;
  user_input?: unknown;
  warnings?: string[];
  skill?: SkillInfo;
  activation?: SkillActivation;
}

export interface LoadWorkflowOptions {
  userInput?: unknown;
  /** A menu item's `data=` file, loaded and returned as `data`. */
  dataPath?: string;
}
