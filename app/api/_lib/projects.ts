import { getRuntime } from '@/lib/runtime';
import type { Project } from '@/lib/projects';
import { AppError } from '@/lib/errors';

/** The project of a route's `[id]`, or a JSON 404 naming it. */
export async function projectOr404(id: string): Promise<Project> {
  const project = await getRuntime().projects.get(id);
  if (!project) throw new AppError('E_PROJECT_NOT_FOUND', `No project with id "${String(id).slice(0, 80)}". GET /api/projects lists the projects.`);
  return project;
}
