import type { ProjectOverview } from '../../projects';
import type { ProjectView } from '../../../types/api';
import type { Assert, NoExtraFields } from './fields';

type _Project = Assert<NoExtraFields<ProjectOverview, ProjectView>>;

/** A project as the API shows it: the catalog's overview, with what the caller's request adds. */
export function projectView(overview: ProjectOverview, extra: Pick<ProjectView, 'role' | 'lastActivity'> = {}): ProjectView {
  return { ...overview, ...extra };
}
