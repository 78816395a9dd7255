import { resolveCommand, type ResolvedAgent } from '../../content/agents';
import { AppError } from '../../core/errors';
import { helpCommand, journeyBrief, projectJourney, type Project } from '../../content/projects';
import type { ChatDeps } from './deps';

/** Which agent a request means: a project's agent when a project is named, else a bundle agent. */
export interface AgentRef {
  agentId: string;
  projectId?: string;
  /** The turn's message: when it asks for the project's help, the help gets the journey as its note. */
  message?: string;
  /** A regenerate answers a stored message this ref does not carry: the help may be what it asked. */
  regenerate?: boolean;
}

/**
 * A project agent can always run the install's help (`*bmad-help`), even when its menu does not
 * list it, so "What next?" works from every conversation. The journey is computed only when the
 * message asks for the help (or may have, in a regenerate), and travels as the item's prompt:
 * the server note that follows the user's message.
 */
async function withProjectHelp(deps: Pick<ChatDeps, 'projects'>, project: Project, agent: ResolvedAgent, ref: AgentRef): Promise<ResolvedAgent> {
  const help = await helpCommand(project, agent.agent.commands);
  if (!help) return agent;
  const asks = !!ref.regenerate || (typeof ref.message === 'string' && resolveCommand({ commands: [help] }, ref.message).kind === 'command');
  const item = asks ? { ...help, prompt: journeyBrief(await projectJourney(deps.projects, project)) } : help;
  return { ...agent, agent: { ...agent.agent, commands: [...agent.agent.commands, item] } };
}

export async function findAgent(deps: Pick<ChatDeps, 'catalog' | 'projects'>, ref: AgentRef): Promise<ResolvedAgent> {
  if (ref.projectId !== undefined) {
    const project = await deps.projects.get(ref.projectId);
    if (!project) throw new AppError('E_PROJECT_NOT_FOUND', `No project with id "${ref.projectId}". GET /api/projects lists the projects.`);
    const agent = await deps.projects.getAgent(project.id, ref.agentId);
    if (!agent) throw new AppError('E_AGENT_NOT_FOUND', `Project "${project.id}" has no agent "${ref.agentId}". GET /api/agents?projectId=${project.id} lists its agents.`);
    return withProjectHelp(deps, project, agent, ref);
  }
  const agent = await deps.catalog.getAgent(ref.agentId);
  if (!agent) throw new AppError('E_AGENT_NOT_FOUND', `No agent with id "${ref.agentId}". GET /api/agents lists the available agents.`);
  return agent;
}
