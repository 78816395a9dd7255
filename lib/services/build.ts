import type { Caller } from '../core/access';
import type { BuildSettings } from '../engine/workspaces';
import { getRuntime } from '../engine/runtime';
import type { BuildSettingsView } from '../../types/api';
import { projectOf } from './access';

const view = (b: BuildSettings): BuildSettingsView => ({
  enabled: b.enabled,
  baseBranch: b.baseBranch,
  setup: b.setup,
  env: { ...b.env },
  test: b.test ?? null,
  appendOnly: [...(b.appendOnly ?? [])],
});

/** A project's build settings: whoever sees the project reads them (they hold nothing secret). */
export async function getBuildSettings(caller: Caller, projectId: string): Promise<BuildSettingsView> {
  const project = await projectOf(caller, projectId, 'read');
  return view(await getRuntime().workspaces.getBuild(project.id));
}

/** Changes a project's build settings (its owners and admins); fields left out keep their values. */
export async function putBuildSettings(caller: Caller, projectId: string, patch: Partial<BuildSettingsView>): Promise<BuildSettingsView> {
  const project = await projectOf(caller, projectId, 'own');
  return view(await getRuntime().workspaces.putBuild(project.id, patch));
}
