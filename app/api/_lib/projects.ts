import { getRuntime } from '@/lib/runtime';
import type { Project } from '@/lib/projects';
import type { Caller, Need } from '@/lib/access';
import { roleAllows } from '@/lib/access';
import { AppError } from '@/lib/errors';

const notFound = (id: string) => new AppError('E_PROJECT_NOT_FOUND', `No project with id "${String(id).slice(0, 80)}". GET /api/projects lists the projects.`);

/**
 * The project of a route's `[id]` as the caller may use it: a JSON 404 naming it when it does not
 * exist or the caller may not see it (the two look the same), 403 when they see it but `need`
 * asks more than their role allows.
 */
export async function projectOr404(id: string, caller: Caller, need: Need = 'read'): Promise<Project> {
  const rt = getRuntime();
  const project = await rt.projects.get(id);
  if (!project) throw notFound(id);
  const role = await rt.access.projectRole(caller, project.id);
  if (!role) throw notFound(id);
  if (!roleAllows(role, need)) throw new AppError('E_FORBIDDEN', `Your role in project "${project.id}" (${role}) does not allow this.`);
  return project;
}
