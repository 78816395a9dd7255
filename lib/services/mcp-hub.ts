import type { Caller } from '../core/access';
import { getRuntime } from '../engine/runtime';
import type { ProjectMcpServer } from '../../types/api';
import { projectOf } from './access';

/**
 * The MCP servers a project's agents may use, each with its state and its tools as known so far;
 * `list` reaches the servers not listed yet first (a stdio server is started), as a turn would.
 */
export async function projectMcpServers(caller: Caller, projectId: string, list: boolean): Promise<{ servers: ProjectMcpServer[] }> {
  const project = await projectOf(caller, projectId);
  return { servers: await getRuntime().mcp.forProject(project.id, { list }) };
}
