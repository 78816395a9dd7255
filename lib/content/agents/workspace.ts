import type { FsLimitOverrides } from '../bundles/schema';
import { outputRootOf } from '../outputs';

/**
 * Where an agent works: the mounts its tool calls see, as absolute server paths. A bundle agent
 * writes into a folder of its own per conversation; the agents of a BMAD project share the
 * project's output folder and read the whole project.
 */
export interface Workspace {
  kind: 'bundle' | 'project';
  /** Bundle name or project name, for the model and the API. */
  name: string;
  /** Set for project agents. */
  projectId?: string;
  /** `{bundle-root}`: the bundle folder, or the project's installed method (`_bmad/`). */
  bundleRoot: string;
  /** `{core-root}`. */
  coreRoot: string;
  /** `{project-root}`. */
  projectRoot: string;
  /** `{output_folder}` of one conversation. */
  outputRoot(conversationId: string): string;
  /** True when every conversation of the workspace writes into one folder (a project's). */
  sharedOutput: boolean;
  /** Project folders writable besides the output folder (relative, posix); set only for projects. */
  writable?: string[];
  /** Size-limit overrides over the server's limits. */
  limits: FsLimitOverrides;
  /**
   * A workspace's checkout stands in for the project folder: every file of it is writable but the
   * method, and git (not the project's versions) keeps its history.
   */
  inCheckout?: boolean;
}

/**
 * Variables a workspace defines before any config is read, which a config may override: a
 * project's `{project_name}` is its folder's name. BMAD 6.10 on writes no `project_name` and its
 * skills fall back to neutral defaults; without one the placeholder stayed literal in run folder
 * names.
 */
export function workspaceVariables(ws: Pick<Workspace, 'kind' | 'projectId'>): Record<string, string> {
  return ws.kind === 'project' && ws.projectId ? { project_name: ws.projectId } : {};
}

/** The workspace of a bundle agent: the bundle read-only, a fresh output folder per conversation. */
export function bundleWorkspace(
  roots: { coreRoot: string; projectRoot: string; outputPath: string },
  bundle: { name: string; root: string; limits: FsLimitOverrides },
): Workspace {
  return {
    kind: 'bundle',
    name: bundle.name,
    bundleRoot: bundle.root,
    coreRoot: roots.coreRoot,
    projectRoot: roots.projectRoot,
    outputRoot: (conversationId) => outputRootOf(roots, conversationId),
    sharedOutput: false,
    limits: bundle.limits,
  };
}
