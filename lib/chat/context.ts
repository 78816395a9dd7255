import crypto from 'node:crypto';
import type OpenAI from 'openai';
import type { AuditLog } from '../audit';
import type { Config, ToolLimits } from '../config';
import type { ConversationStore } from '../conversations/types';
import type { Catalog, ResolvedAgent } from '../agents';
import { outputRootOf } from '../outputs';
import { today } from '../paths';
import type { ToolContext } from '../tools';

/** What the chat service needs from the process. */
export interface ChatDeps {
  config: Config;
  store: ConversationStore;
  catalog: Catalog;
  /** Built lazily; absent when no model is configured. */
  llm: () => OpenAI;
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

/** The mounts, variables and limits every tool call of one conversation runs with. */
export function toolContext(
  deps: ChatDeps,
  resolved: ResolvedAgent,
  conversationId: string,
  variables: Record<string, string>,
  audit: AuditLog,
  signal?: AbortSignal,
): ToolContext {
  return {
    conversationId,
    agentId: resolved.agent.id,
    bundleRoot: resolved.bundle.root,
    coreRoot: deps.config.coreRoot,
    projectRoot: deps.config.projectRoot,
    outputRoot: outputRootOf(deps.config, conversationId),
    variables: { ...variables, date: today(clock(deps)()) },
    limits: effectiveLimits(deps.config.limits, resolved.bundle.limits),
    auditDir: deps.auditDir,
    audit,
    signal,
  };
}
