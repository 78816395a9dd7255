import type { InstallableRelease, InstallerTool, ProjectOverview } from '../../content/projects';
import type { InstallableReleaseView, ProjectView } from '../../../types/api';
import type { Assert, NoExtraFields } from './fields';

type _Project = Assert<NoExtraFields<ProjectOverview, ProjectView>>;
type _Release = Assert<NoExtraFields<InstallableRelease, InstallableReleaseView>>;
type _Tool = Assert<NoExtraFields<InstallerTool, InstallableReleaseView['tools'][number]>>;

/** A project as the API shows it: the catalog's overview, with what the caller's request adds. */
export function projectView(overview: ProjectOverview, extra: Pick<ProjectView, 'role' | 'lastActivity'> = {}): ProjectView {
  return { ...overview, ...extra };
}

/** The pinned releases as GET /api/installer lists them. */
export function installableView(releases: InstallableRelease[]): InstallableReleaseView[] {
  return releases;
}
