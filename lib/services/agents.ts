import type { Caller } from '../core/access';
import { getRuntime } from '../engine/runtime';
import type { AgentSummary } from '../../types/api';
import { projectOf } from './access';
import { withResolvedGreetings } from './greetings';
import { agentViews } from './presenters/agents';

/** A project's agents (a project the caller sees), or the server's bundle agents without one; greetings resolved. */
export async function listAgents(caller: Caller, projectId: string | null): Promise<AgentSummary[]> {
  const rt = getRuntime();
  const agents = projectId !== null ? await rt.projects.agents(await projectOf(caller, projectId)) : await rt.catalog.listAgents();
  return agentViews(await withResolvedGreetings(rt, agents));
}

/** The agents as a model reads them (the MCP server's list_agents): id, name, title, commands. */
export async function listAgentsBrief(caller: Caller, projectId: string | undefined): Promise<Pick<AgentSummary, 'id' | 'name' | 'title' | 'description' | 'commands'>[]> {
  const rt = getRuntime();
  const list = projectId ? await rt.projects.agents(await projectOf(caller, projectId)) : await rt.catalog.listAgents();
  return list.map((a) => ({ id: a.id, name: a.name, title: a.title, ...(a.description ? { description: a.description } : {}), commands: a.commands }));
}

/** The server's bundles (whoever is signed in). */
export async function listBundles(_caller: Caller) {
  return getRuntime().catalog.listBundles();
}
