import crypto from 'node:crypto';
import path from 'node:path';
import yaml from 'js-yaml';
import type OpenAI from 'openai';
import type { Config, ToolLimits } from '../config';
import { AppError } from '../errors';
import { log } from '../log';
import type { ConversationStore, StoredMessage, StoredToolCall, TurnLease, Usage } from '../conversations/types';
import { executeTool, toolDefinitions } from '../tools';
import type { ToolCallRequest, ToolContext, ToolResult } from '../tools/types';
import { runTurn } from '../loop';
import { expandVariables, isReservedVariable } from '../paths';
import type { TurnEvent, StopReason } from '../loop/types';
import { buildSystemPrompt, classifyCriticalActions, toModelMessages } from '../prompt';
import type { Catalog, ResolvedAgent } from '../agents';
import { matchCommand, isWorkflowCommand } from '../agents';
import { parseToolArguments } from './views';
import { sweepTempFiles } from '../outputs';
import { openAuditLog, type AuditLog } from '../audit';

export interface ChatDeps {
  config: Config;
  store: ConversationStore;
  catalog: Catalog;
  /** Built lazily; absent when no model is configured. */
  llm: () => OpenAI;
  auditDir: string;
  now?: () => Date;
}

export interface ChatRequest {
  agentId: string;
  message: string;
  conversationId?: string;
}

export interface TurnHandle {
  conversationId: string;
  /** Id of the assistant message this turn answers with. */
  messageId: string;
  events: AsyncGenerator<TurnEvent>;
}

const today = (now: Date) => now.toISOString().slice(0, 10);

function effectiveLimits(base: ToolLimits, override?: Partial<ToolLimits>): ToolLimits {
  return { ...base, ...Object.fromEntries(Object.entries(override ?? {}).filter(([, v]) => typeof v === 'number' && v > 0)) };
}

export function outputRootOf(config: Config, conversationId: string): string {
  return path.join(config.outputPath, conversationId);
}

function toolContext(deps: ChatDeps, resolved: ResolvedAgent, conversationId: string, variables: Record<string, string>, audit: AuditLog, signal?: AbortSignal): ToolContext {
  const now = (deps.now ?? (() => new Date()))();
  return {
    conversationId,
    agentId: resolved.agent.id,
    bundleRoot: resolved.bundle.root,
    coreRoot: deps.config.coreRoot,
    projectRoot: deps.config.projectRoot,
    outputRoot: outputRootOf(deps.config, conversationId),
    variables: { ...variables, date: today(now) },
    limits: effectiveLimits(deps.config.limits, resolved.bundle.limits),
    auditDir: deps.auditDir,
    audit,
    signal,
  };
}

/** Runs a tool through the registry and writes one log line (names and outcome only). */
async function runTool(call: ToolCallRequest, ctx: ToolContext): Promise<{ result: ToolResult; durationMs: number }> {
  const started = performance.now();
  const result = await executeTool(call, ctx);
  const durationMs = Math.round((performance.now() - started) * 100) / 100;
  log.info('tool.call', {
    conversationId: ctx.conversationId,
    agent: ctx.agentId,
    tool: call.name,
    durationMs,
    outcome: result.ok ? 'ok' : result.error.code,
  });
  return { result, durationMs };
}

function stringValues(obj: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return out;
  for (const [k, v] of Object.entries(obj as Record<string, unknown>)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
  }
  return out;
}

/**
 * Runs the agent's critical actions once, before the first model call: files to load are read
 * through the sandboxed read_file tool (audited like any call) and YAML configs become
 * variables; every other item is an instruction for the model.
 */
async function runCriticalActions(deps: ChatDeps, resolved: ResolvedAgent, conversationId: string, audit: AuditLog): Promise<{ variables: Record<string, string>; context: string | null }> {
  const actions = classifyCriticalActions(resolved.agent.criticalActions);
  if (!actions.length) return { variables: {}, context: null };
  const variables: Record<string, string> = {};
  const loaded: string[] = [];
  const instructions: string[] = [];
  for (const action of actions) {
    if (action.kind === 'instruction') {
      instructions.push(action.text);
      continue;
    }
    const ctx = toolContext(deps, resolved, conversationId, variables, audit);
    const read = (file_path: string) => runTool({ id: `critical_${crypto.randomUUID()}`, name: 'read_file', arguments: JSON.stringify({ file_path }) }, ctx);
    let { result } = await read(action.load.path);
    // Agents written for an IDE install load their module's config from {project-root}/bmad/...;
    // in a bundle that config is the bundle's own config.yaml, as the workflow loader also assumes.
    if (!result.ok && /(^|\/)config\.ya?ml$/i.test(action.load.path) && !action.load.path.startsWith('{bundle-root}/')) {
      const fallback = (await read('{bundle-root}/config.yaml')).result;
      if (fallback.ok) {
        instructions.push(`${action.load.path} is not available here; the bundle's {bundle-root}/config.yaml was loaded instead.`);
        result = fallback;
      }
    }
    if (!result.ok) {
      throw new AppError('E_CRITICAL_ACTION', `The agent "${resolved.agent.id}" could not start: its critical action "${action.text}" failed to load ${result.path ?? action.load.path} (${result.error.code}: ${result.error.message}).`, { file: result.path ?? action.load.path });
    }
    const content = String(result.content ?? '');
    const shownPath = String(result.path ?? action.load.path);
    if (/\.ya?ml$/i.test(shownPath)) {
      let parsed: unknown;
      try {
        parsed = yaml.load(content);
      } catch (e) {
        throw new AppError('E_CRITICAL_ACTION', `The agent "${resolved.agent.id}" could not start: ${shownPath} is not valid YAML (${(e as Error).message.split('\n')[0]}).`, { file: shownPath });
      }
      const all = stringValues(parsed);
      const wanted = action.load.variables.length ? action.load.variables : Object.keys(all);
      // Every key stays available for {key} lookups; the named ones must exist.
      Object.assign(variables, all);
      const missing = wanted.filter((k) => !(k in all));
      if (missing.length) instructions.push(`Note: ${shownPath} does not define ${missing.join(', ')}; ask the user if you need them.`);
    }
    loaded.push(`### ${shownPath}\n\`\`\`\n${content.trimEnd()}\n\`\`\``);
  }
  // Mount names ({output_folder} above all) always mean the mounts, whatever a config says.
  for (const k of Object.keys(variables)) if (isReservedVariable(k)) delete variables[k];
  const resolvedInstructions = instructions.map((t) => expandVariables(t, { variables }).text);
  const vars = Object.entries(variables).map(([k, v]) => `- {${k}} = ${v}`);
  const parts = [
    '## Critical context (loaded by the server before this conversation)',
    loaded.length ? `Files loaded into memory:\n\n${loaded.join('\n\n')}` : '',
    vars.length ? `Variables now set:\n${vars.join('\n')}\n{output_folder} always means this conversation's output folder.` : '',
    resolvedInstructions.length ? `Critical instructions:\n${resolvedInstructions.map((t) => `- ${t}`).join('\n')}` : '',
  ];
  return { variables, context: parts.filter(Boolean).join('\n\n') };
}

function newId(prefix: string) {
  return `${prefix}_${crypto.randomUUID().replace(/-/g, '').slice(0, 24)}`;
}

/**
 * Starts one turn: validates the request, takes the conversation's turn lock and returns the
 * turn's events. Everything is persisted as it happens; the lock is released when the events
 * end (or the consumer stops reading them).
 */
export async function startTurn(deps: ChatDeps, req: ChatRequest, signal: AbortSignal): Promise<TurnHandle> {
  const resolved = await deps.catalog.getAgent(req.agentId);
  if (!resolved) throw new AppError('E_AGENT_NOT_FOUND', `No agent with id "${req.agentId}". GET /api/agents lists the available agents.`);
  if (!deps.config.llm.configured) {
    throw new AppError('E_LLM_NOT_CONFIGURED', 'No model is configured. Set OPENAI_API_KEY (for OpenAI) or OPENAI_BASE_URL (for a local OpenAI-compatible server such as Ollama, vLLM or LM Studio), and OPENAI_MODEL, then restart the server.');
  }

  let conversationId = req.conversationId;
  let isNew = false;
  let wasInterrupted = false;
  if (conversationId) {
    const existing = await deps.store.get(conversationId);
    wasInterrupted = existing?.status === 'interrupted';
    if (!existing) throw new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${conversationId}".`);
    if (existing.agentId !== resolved.agent.id) {
      throw new AppError('E_VALIDATION', `Conversation "${conversationId}" belongs to agent "${existing.agentId}", not "${resolved.agent.id}".`, { field: 'agentId' });
    }
  } else {
    conversationId = crypto.randomUUID();
    isNew = true;
  }

  const command = matchCommand(resolved.agent, req.message);
  // One open audit file for the critical actions and every tool call of the turn.
  const audit = openAuditLog(deps.auditDir, conversationId);
  let lease: TurnLease | null;
  try {
    if (isNew) {
      // Before anything is stored: a missing critical file fails the request, not a half-made conversation.
      const critical = await runCriticalActions(deps, resolved, conversationId, audit);
      // No title: the store names the conversation from its first message or its workflow.
      await deps.store.create({ id: conversationId, agentId: resolved.agent.id, bundleName: resolved.bundle.name });
      await deps.store.setVariables(conversationId, critical.variables);
      if (critical.context) {
        await deps.store.append(conversationId, { id: newId('sys'), role: 'system', content: critical.context, timestamp: (deps.now ?? (() => new Date()))().toISOString() });
      }
    }
    lease = await deps.store.beginTurn(conversationId);
    if (!lease) throw new AppError('E_CONVERSATION_BUSY', `A turn is already running on conversation "${conversationId}". Wait for it to finish or stop it.`);
  } catch (e) {
    void audit.close();
    throw e;
  }
  if (wasInterrupted) {
    // Never throws: the lock is held and must reach the turn's own cleanup.
    const removed = await sweepTempFiles(outputRootOf(deps.config, conversationId)).catch(() => 0);
    if (removed) log.warn('outputs.swept', { conversationId, tempFiles: removed });
  }

  const id = conversationId;
  const messageId = newId('msg');
  const events = turnEvents(deps, resolved, id, req.message, command, signal, messageId, lease, audit);
  return { conversationId: id, messageId, events };
}

async function* turnEvents(
  deps: ChatDeps,
  resolved: ResolvedAgent,
  conversationId: string,
  message: string,
  command: ReturnType<typeof matchCommand>,
  signal: AbortSignal,
  messageId: string,
  lease: TurnLease,
  audit: AuditLog,
): AsyncGenerator<TurnEvent> {
  const store = deps.store;
  const now = deps.now ?? (() => new Date());
  const stamp = () => now().toISOString();
  let outcome: 'done' | 'interrupted' = 'interrupted';
  const started = performance.now();
  try {
    await store.append(conversationId, { id: newId('msg'), role: 'user', content: message, timestamp: stamp() });

    const conversation = await store.get(conversationId);
    const variables = conversation?.variables ?? {};
    const ctx = toolContext(deps, resolved, conversationId, variables, audit, signal);

    // A workflow command is executed before the first model call, as a real tool call in the
    // history, so the model's first answer already follows the workflow.
    if (command && isWorkflowCommand(command.command)) {
      const call: ToolCallRequest = {
        id: newId('call'),
        name: 'execute_workflow',
        arguments: JSON.stringify(command.userInput ? { workflow_path: command.command.target, user_input: command.userInput } : { workflow_path: command.command.target }),
      };
      await store.append(conversationId, { id: newId('msg'), role: 'assistant', content: '', toolCalls: [call], timestamp: stamp() });
      yield { type: 'step-start', iteration: 0 };
      yield { type: 'tool-call', call, input: parseToolArguments(call.arguments) };
      const { result, durationMs } = await runTool(call, ctx);
      await store.append(conversationId, { id: newId('tool'), role: 'tool', toolCallId: call.id, name: call.name, result, timestamp: stamp() });
      yield { type: 'tool-result', call, result, durationMs };
      yield { type: 'step-finish', iteration: 0, usage: { promptTokens: 0, completionTokens: 0 } };
    }

    const definitions = toolDefinitions();
    const systemPrompt = buildSystemPrompt({ agent: resolved.agent, bundleName: resolved.bundle.name, toolNames: definitions.map((d) => d.function.name) });
    const messages = toModelMessages(systemPrompt, await store.messages(conversationId));
    const pending: { assistantId?: string } = {};
    let stepStarted = performance.now();

    for await (const event of runTurn({
      client: deps.llm(),
      model: deps.config.llm.model,
      messages,
      tools: { definitions, execute: async (call, sig) => (await runTool(call, { ...ctx, signal: sig })).result },
      maxIterations: deps.config.maxIterations,
      signal,
      timeoutMs: deps.config.turnTimeoutMs,
    })) {
      switch (event.type) {
        case 'step-start':
          stepStarted = performance.now();
          break;
        case 'assistant-message': {
          // A message without tool calls ends the turn, so it carries the turn's answer id.
          pending.assistantId = event.toolCalls.length ? newId('msg') : messageId;
          const msg: StoredMessage = {
            id: pending.assistantId,
            role: 'assistant',
            content: event.content,
            ...(event.toolCalls.length ? { toolCalls: event.toolCalls } : {}),
            usage: event.usage,
            timestamp: stamp(),
          };
          await store.append(conversationId, msg);
          await store.addUsage(conversationId, event.usage);
          log.info('model.call', {
            conversationId,
            agent: resolved.agent.id,
            model: deps.config.llm.model,
            durationMs: Math.round(performance.now() - stepStarted),
            toolCalls: event.toolCalls.length,
            promptTokens: event.usage.promptTokens,
            completionTokens: event.usage.completionTokens,
          });
          break;
        }
        case 'tool-result':
          await store.append(conversationId, { id: newId('tool'), role: 'tool', toolCallId: event.call.id, name: event.call.name, result: event.result, timestamp: stamp() });
          break;
        case 'finish':
          outcome = event.stopReason === 'aborted' ? 'interrupted' : 'done';
          break;
      }
      yield event;
    }
  } catch (e) {
    const error = e instanceof AppError ? e : new AppError('E_INTERNAL', 'The turn failed unexpectedly.');
    if (!(e instanceof AppError)) log.error('turn.crash', { conversationId, message: (e as Error)?.message?.slice(0, 200) });
    yield { type: 'error', error };
  } finally {
    // Every line is written by now (each call awaited its own); only the file is given back.
    void audit.close();
    await store.endTurn(lease, outcome);
    log.info('turn.end', { conversationId, agent: resolved.agent.id, outcome, durationMs: Math.round(performance.now() - started) });
  }
}

export interface TurnSummary {
  content: string;
  functionCalls: { id: string; name: string; arguments: unknown; result: unknown }[];
  usage: Usage;
  iterations: number;
  stopReason: StopReason;
  error?: AppError;
}

/** Drains a turn's events into the JSON answer of POST /api/chat. */
export async function collectTurn(events: AsyncIterable<TurnEvent>): Promise<TurnSummary> {
  const texts: string[] = [];
  // Keyed by id for results, listed in order: some servers reuse ids across the calls of a turn.
  const list: TurnSummary['functionCalls'] = [];
  const calls = new Map<string, TurnSummary['functionCalls'][number]>();
  const summary: TurnSummary = { content: '', functionCalls: [], usage: { promptTokens: 0, completionTokens: 0 }, iterations: 0, stopReason: 'stop' };
  for await (const event of events) {
    if (event.type === 'assistant-message' && event.content) texts.push(event.content);
    else if (event.type === 'tool-call') {
      const entry = { id: event.call.id, name: event.call.name, arguments: event.input, result: undefined };
      list.push(entry);
      calls.set(event.call.id, entry);
    }
    else if (event.type === 'tool-result') {
      const c = calls.get(event.call.id);
      if (c) c.result = event.result;
    } else if (event.type === 'finish') {
      summary.usage = event.usage;
      summary.iterations = event.iterations;
      summary.stopReason = event.stopReason;
    } else if (event.type === 'error') summary.error = event.error;
  }
  summary.content = texts.join('\n\n');
  summary.functionCalls = list;
  return summary;
}

export type { StoredToolCall };
