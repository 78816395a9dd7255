import { countBySeverity, countLine, markCommands } from '../content/doctor';
import type { Project } from '../content/projects';
import { problemLine, type Problem } from '../core/results';
import { getRuntime, type Runtime } from '../engine/runtime';
import { scriptCapabilities } from '../sandbox/scripts';
import { setupNetworkCapability } from '../sandbox/commands';
import type { AgentListing } from '../content/agents';
import type { HealthData, ProjectDetail } from '../../types/api';
import { agentViews } from './presenters/agents';

/**
 * The doctor's diagnosis of a project: every agent's start, menu targets, workflows, steps,
 * templates and config keys, in the same lines and count as `npm run doctor` prints for its folder.
 * A diagnosis loads every workflow of the install, so the runtime's doctor keeps it 5 s per project.
 */
export async function diagnosisOf(project: Project): Promise<Problem[]> {
  return getRuntime().doctor.project(project);
}

/** The detail's doctor fields from a diagnosis; each agent's commands carry the problem of a broken target. */
export function doctorView(diagnosis: Problem[], agents: AgentListing[]): Pick<ProjectDetail, 'problems' | 'notes' | 'doctor' | 'agents'> {
  const counts = countBySeverity(diagnosis);
  return {
    problems: diagnosis.filter((p) => p.severity !== 'note').map(problemLine),
    notes: diagnosis.filter((p) => p.severity === 'note').map(problemLine),
    doctor: { summary: countLine(diagnosis), errors: counts.error, warnings: counts.warning, notes: counts.note },
    agents: agentViews(markCommands(agents, diagnosis)),
  };
}

/**
 * Whether this instance can serve: its store reachable with a current schema (503 otherwise, so a
 * load balancer sends it nothing), the default model, what scripts and setup lines may do, and each MCP server's
 * state as last seen (asking never connects one).
 */
export async function health(): Promise<{ ready: boolean; data: HealthData & { mcp?: { servers: ReturnType<Runtime['mcp']['status']> } } }> {
  const { config, store, mcp } = getRuntime();
  // Probed once per process (a missing piece is asked again after a while), so this stays cheap.
  const [caps, setupNet, storeHealth] = await Promise.all([scriptCapabilities(config.scripts), setupNetworkCapability(config.scripts), store.health()]);
  const ready = storeHealth.ok && storeHealth.migrations.current;
  return {
    ready,
    data: {
      status: ready ? 'ok' : 'unavailable',
      llm: { configured: config.llm.configured, model: config.llm.model },
      capabilities: { scripts: caps.scripts, sandbox: caps.sandbox, setupNetwork: setupNet.available },
      store: storeHealth,
      ...(mcp.servers().length ? { mcp: { servers: mcp.status() } } : {}),
    },
  };
}
