import type { Caller } from '../core/access';
import { projectJourney } from '../content/projects';
import { getRuntime } from '../engine/runtime';
import type { ProjectJourney } from '../../types/api';
import { projectOf } from './access';
import { journeyView } from './presenters/journey';

/** Where a project the caller sees stands on its BMAD journey and what comes next, from its own help catalog and documents. */
export async function journeyOf(caller: Caller, projectId: string): Promise<ProjectJourney> {
  return journeyView(await projectJourney(getRuntime().projects, await projectOf(caller, projectId)));
}
