import crypto from 'node:crypto';
import type OpenAI from 'openai';
import type { AuditLog } from '../audit';
import type { Config, ToolLimits } from '../config';
import type { ConversationStore } from '../conversations/types';
import type { Catalog, ResolvedAgent } from '../agents';
import { AppError } from '../errors';
import { projectVersions, type ProjectCatalog } from '../projects';
import { recorderFor } from '../versions';
import { log } from '../log';
import { today } from '../paths';
import type { ToolContext } from '../tools';

/** What the chat service needs from the process. */
export interface ChatDeps {
  config: Config;
  store: ConversationStore;
  catalog: Catalog;
  projects: ProjectCatalog;
  /** The client of a model profile (the default one without a name), built lazily. */
  llm: (profile?: string) => OpenAI;
  auditDir: string;
  now?: () => Date;
}

export function clock(deps: ChatDeps): () => Date {
  return deps.now ?? (() => new Date());
}

export function newId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replace(/-/g, '').slice(0, 24)}`;
}

function effectiveLimits(base: ToolLimits, override?: Partial<ToolLimits>): ToolLimits {
  return { ...base, ...Object.fromEntries(Object.entries(override ?? {}).filter(([, v]) => typeof v === 'number' && v > 0)) };
}

/** Every agent write in a project keeps a version: who wrote it (agent, conversation) and when. */
function projectRecorder(deps: ChatDeps, projectId: string, projectRoot: string, author: { agentId: string; conversationId: string; by?: string }): NonNullable<ToolContext['recordWrite']> {
  let recorder: Promise<NonNullable<ToolContext['recordWrite']>> | null = null;
  return async (write) => {
    recorder ??= projectVersions(deps.config.dataDir, { id: projectId, root: projectRoot }).then((store) => recorderFor(store, author));
    try {
      await (await recorder)(write);
    } catch (e) {
      recorder = null;
      log.warn('versions.record_failed', { projectId, error: e instanceof Error ? e.name : 'unknown' });
      throw e;
    }
  };
}

/** The mounts, variables and limits every tool call of one conversation runs with. */
export function toolContext(
  deps: ChatDeps,
  resolved: ResolvedAgent,
  conversationId: string,
  variables: Record<string, string>,
  audit: AuditLog,
  signal?: AbortSignal,
  /** Who the turn is for (with accounts): their versions name them. */
  by?: string,
): ToolContext {
  const ws = resolved.workspace;
  return {
    conversationId,
    agentId: resolved.agent.id,
    bundleRoot: ws.bundleRoot,
    coreRoot: ws.coreRoot,
    projectRoot: ws.projectRoot,
    outputRoot: ws.outputRoot(conversationId),
    ...(ws.writable ? { project: { writable: ws.writable } } : {}),
    ...(ws.projectId ? { recordWrite: projectRecorder(deps, ws.projectId, ws.projectRoot, { agentId: resolved.agent.id, conversationId, ...(by ? { by } : {}) }) } : {}),
    variables: { ...variables, date: today(clock(deps)()) },
    limits: effectiveLimits(deps.config.limits, ws.limits),
    scripts: deps.config.scripts,
    auditDir: deps.auditDir,
    audit,
    signal,
  };
}

/** Which agent a request means: a project's agent when a project is named, else a bundle agent. */
export interface AgentRef {
  agentId: string;
  projectId?: string;
}

export async function findAgent(deps: Pick<ChatDeps, 'catalog' | 'projects'>, ref: AgentRef): Promise<ResolvedAgent> {
  if (ref.projectId !== undefined) {
    const project = await deps.projects.get(ref.projectId);
    if (!project) throw new AppError('E_PROJECT_NOT_FOUND', `No project with id "${ref.projectId}". GET /api/projects lists the projects.`);
    const agent = await deps.projects.getAgent(project.id, ref.agentId);
    if (!agent) throw new AppError('E_AGENT_NOT_FOUND', `Project "${project.id}" has no agent "${ref.agentId}". GET /api/agents?projectId=${project.id} lists its agents.`);
    return agent;
  }
  const agent = await deps.catalog.getAgent(ref.agentId);
  if (!agent) throw new AppError('E_AGENT_NOT_FOUND', `No agent with id "${ref.agentId}". GET /api/agents lists the available agents.`);
  return agent;
}
