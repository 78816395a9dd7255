import type { Caller } from '../core/access';
import { AppError } from '../core/errors';
import { claimProject, installableReleases, installClaimed, type NewProject, type Project } from '../content/projects';
import { getRuntime } from '../engine/runtime';
import type { InstallableReleaseView, ProjectDetail, ProjectView } from '../../types/api';
import { projectOf, visibleProjects, type BodyOf } from './access';
import { diagnosisOf, doctorView } from './doctor';
import { withResolvedGreetings } from './greetings';
import { installableView, projectView } from './presenters/projects';
import { projectUsageView } from './usage';
import { repositoryView } from './workspaces';

/**
 * Every project the caller may see (the others do not exist for them), with the problems reading
 * its install finds (a few stats and small reads each, so the list stays fast however many there
 * are), the caller's role and when a conversation of it last changed. The doctor's full diagnosis
 * is in the detail only.
 */
export async function listProjects(caller: Caller): Promise<ProjectView[]> {
  const { projects } = getRuntime();
  return Promise.all(
    (await visibleProjects(caller)).map(async ({ project, role }) => projectView(await projects.view(project), { role, lastActivity: await lastActivity(project.id, caller) })),
  );
}

/**
 * When the newest conversation of the project the caller may read last changed: one indexed
 * query (newest first), so the home can say where each project stands without a walk of its
 * folder. Only called for a project the caller has a role in: an admin (and the single-user
 * mode) reads all of it, anyone else their own conversations and the shared ones.
 */
async function lastActivity(projectId: string, caller: Caller): Promise<string | null> {
  const { store } = getRuntime();
  const all = caller.kind === 'local' || caller.role === 'admin';
  try {
    const page = await store.list({ projectId, limit: 1, ...(all ? {} : { ownedOrSharedFor: caller.id }) });
    return page.items[0]?.updatedAt ?? null;
  } catch {
    // The store being away costs the home a date, not the list.
  }
  return null;
}

/** The projects the caller may see, as a model reads them (the MCP server's list_projects). */
export async function listProjectsBrief(caller: Caller): Promise<Pick<ProjectView, 'id' | 'name' | 'bmad' | 'agentCount' | 'outputFolder'>[]> {
  const { projects } = getRuntime();
  const list = await Promise.all((await visibleProjects(caller)).map(({ project }) => projects.view(project)));
  return list.map((v) => ({ id: v.id, name: v.name, bmad: v.bmad, agentCount: v.agentCount, outputFolder: v.outputFolder }));
}

/** The project with the doctor's diagnosis, its agents, the usage the caller can see and its repository. */
export async function getProject(caller: Caller, id: string): Promise<ProjectDetail> {
  const project = await projectOf(caller, id);
  const rt = getRuntime();
  const [view, diagnosis, agents, usage, repository] = await Promise.all([
    rt.projects.view(project),
    diagnosisOf(project),
    rt.projects.agents(project).then((list) => withResolvedGreetings(rt, list)),
    projectUsageView(rt.store, project.id, (c) => rt.access.conversation(caller, c, 'read')),
    repositoryView(project),
  ]);
  return { ...projectView(view, { role: (await rt.access.projectRole(caller, project.id)) ?? 'viewer' }), ...doctorView(diagnosis, agents), usage, repository };
}

/** What a new project can be made of: each pinned BMAD release (the default first), its installer's tools and its modules. */
export async function listInstallable(_caller: Caller): Promise<InstallableReleaseView[]> {
  return installableView(await installableReleases());
}

/**
 * Starts creating a project: what the request got wrong (a name taken, a release unknown) is
 * thrown here, before anything is installed; the answer runs BMAD's installer (`onStep` hears
 * each of its steps) and makes the creator the project's owner: nobody else sees it until they
 * add members.
 */
export async function createProject(caller: Caller, body: BodyOf<NewProject>): Promise<(onStep?: (text: string) => void) => Promise<ProjectView>> {
  if (caller.projectIds) throw new AppError('E_FORBIDDEN', 'This token is limited to some projects; it cannot create one.');
  const input = await body();
  const { projects, accounts } = getRuntime();
  const claim = await claimProject(projects, input);
  return async (onStep) => {
    const project: Project = await installClaimed(projects, claim, onStep);
    if (accounts && caller.kind !== 'local') await accounts.setMember(project.id, caller.id, 'owner');
    return projectView(await projects.view(project));
  };
}
