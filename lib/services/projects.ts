import type { Caller } from '../core/access';
import { AppError, isAppError } from '../core/errors';
import { findRepositoryTop } from '../sandbox/git';
import { commitFolder } from '../engine/remotes';
import { claimProject, installableReleases, installClaimed, type NewProject, type Project } from '../content/projects';
import { getRuntime } from '../engine/runtime';
import type { InstallableReleaseView, ProjectCloneView, ProjectDetail, ProjectView } from '../../types/api';
import { committerOf, projectOf, requireAdmin, visibleProjects, type BodyOf } from './access';
import { cloneOfProject, cloneOnly, cloneProject, remoteOfProject, type NewClone } from './remotes';
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

/**
 * The project with the doctor's diagnosis, its agents, the usage the caller can see, its
 * repository and remote. A project still being cloned from a Git URL (or whose clone failed, or
 * that has no BMAD install yet) is only its clone, for whoever started it and admins.
 */
export async function getProject(caller: Caller, id: string): Promise<ProjectDetail | ProjectCloneView> {
  let project: Project;
  try {
    project = await projectOf(caller, id);
  } catch (e) {
    if (isAppError(e) && e.code === 'E_PROJECT_NOT_FOUND') return cloneOnly(caller, id).catch(() => Promise.reject(e));
    throw e;
  }
  const rt = getRuntime();
  const [view, diagnosis, agents, usage, repository, remote, clone] = await Promise.all([
    rt.projects.view(project),
    diagnosisOf(project),
    rt.projects.agents(project).then((list) => withResolvedGreetings(rt, list)),
    projectUsageView(rt.store, project.id, (c) => rt.access.conversation(caller, c, 'read')),
    repositoryView(project),
    remoteOfProject(project),
    cloneOfProject(project.id),
  ]);
  return { ...projectView(view, { role: (await rt.access.projectRole(caller, project.id)) ?? 'viewer' }), ...doctorView(diagnosis, agents), usage, repository, remote, ...(clone ? { clone } : {}) };
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
export async function createProject(caller: Caller, body: BodyOf<NewProject & { inClone?: boolean }>): Promise<(onStep?: (text: string) => void) => Promise<ProjectView>> {
  if (caller.projectIds) throw new AppError('E_FORBIDDEN', 'This token is limited to some projects; it cannot create one.');
  const { inClone, ...input } = await body();
  const { projects, accounts, remotes } = getRuntime();
  if (inClone) await cloneOnly(caller, input.name).then((c) => {
    if (c.clone.status !== 'ready') throw new AppError('E_CONFLICT', `"${input.name}" is not a finished clone (${c.clone.status}).`);
  });
  const claim = await claimProject(projects, input, { existing: !!inClone });
  return async (onStep) => {
    const project: Project = await installClaimed(projects, claim, onStep);
    if (inClone) {
      // Workspaces and the board read commits: the install is committed on the cloned branch.
      const top = findRepositoryTop(project.root);
      if (top) await commitFolder(top, project.root, committerOf(caller), `Install BMAD ${claim.version} (${claim.modules.join(', ')})`);
      await remotes.store.updateClone(project.id, { installed: true });
    }
    if (accounts && caller.kind !== 'local') await accounts.setMember(project.id, caller.id, 'owner');
    return projectView(await projects.view(project));
  };
}

/** What POST /api/projects asks for: a project cloned from a Git URL (its body checked once the caller may), or one BMAD's installer makes. */
export type NewProjectRequest = { git: () => NewClone } | { install: NewProject & { inClone?: boolean } };

/**
 * POST /api/projects: a clone (admins; 202 with the clone running) or an install (the creator
 * becomes its owner; the answer runs the installer).
 */
export async function startProject(caller: Caller, body: BodyOf<NewProjectRequest>): Promise<{ clone: ProjectCloneView } | { install: (onStep?: (text: string) => void) => Promise<ProjectView> }> {
  if (caller.projectIds) throw new AppError('E_FORBIDDEN', 'This token is limited to some projects; it cannot create one.');
  const input = await body();
  if ('git' in input) {
    requireAdmin(caller);
    return { clone: await cloneProject(caller, async () => input.git()) };
  }
  return { install: await createProject(caller, async () => input.install) };
}
