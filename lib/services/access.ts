import { roleAllows, type Caller, type Need } from '../access';
import { AppError } from '../errors';
import type { Project } from '../projects';
import { getRuntime } from '../runtime';
import { APP_IDENTITY } from '../chat';

export { APP_IDENTITY };

export const projectNotFound = (id: string) =>
  new AppError('E_PROJECT_NOT_FOUND', `No project with id "${String(id).slice(0, 80)}". GET /api/projects lists the projects.`);

/**
 * The project `id` as the caller may use it for `need`: E_PROJECT_NOT_FOUND when it does not
 * exist or the caller may not see it (a token limited to other projects included: the policy
 * answers no role), E_FORBIDDEN when they see it but their role does not allow `need`.
 */
export async function projectOf(caller: Caller, id: string, need: Need = 'read'): Promise<Project> {
  const rt = getRuntime();
  const project = await rt.projects.get(id);
  if (!project) throw projectNotFound(id);
  const role = await rt.access.projectRole(caller, project.id);
  if (!role) throw projectNotFound(id);
  if (!roleAllows(role, need)) throw new AppError('E_FORBIDDEN', `Your role in project "${project.id}" (${role}) does not allow this.`);
  return project;
}

/** Who commits for a caller: the person (merges, turn ends); the app itself in the single-user mode. */
export function committerOf(caller: Caller): { name: string; email: string } {
  if (caller.kind === 'local') return APP_IDENTITY;
  return { name: caller.name || caller.email || caller.id, email: caller.email || `${caller.id}@users.bmad.invalid` };
}
