import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type { Model } from 'openai/resources/models';
import type { AgentListing } from '../../content/agents';
import type { AppError } from '../../core/errors';
import type { Usage } from '../../model/llm/types';
import type { StopReason } from '../../engine/chat';

/**
 * Our values in the OpenAI API's shapes (the SDK's own types, so a field the SDK reads cannot go
 * missing): the model list, a completion, its stream's chunks, and errors.
 */

/** An agent served as a model: `<project>/<agent>` or `<bundle>/<agent>`. */
export interface AgentModel {
  id: string;
  /** The project of a project agent; absent for a bundle's. */
  projectId?: string;
  /** The project's or the bundle's name. */
  home: string;
  agent: AgentListing;
}

/** A model as OpenAI lists it, with the `name` and `description` the chat clients show. */
export type ModelView = Model & { name: string; description?: string };

/** Models have no creation time of their own; the process's start stands in for it (seconds, as OpenAI gives it). */
const CREATED = Math.floor(Date.now() / 1000);

export function modelView(m: AgentModel): ModelView {
  const who = [m.agent.name, m.agent.title].filter((s) => s && s.trim()).join(' · ') || m.agent.id;
  const description = m.agent.description ?? (m.agent.title || undefined);
  return { id: m.id, object: 'model', created: CREATED, owned_by: m.home, name: `${who} (${m.home})`, ...(description ? { description } : {}) };
}

export function modelListView(models: AgentModel[]): { object: 'list'; data: ModelView[] } {
  return { object: 'list', data: models.map(modelView) };
}

/** What every chunk and the completion of one turn share. */
export interface CompletionMeta {
  id: string;
  created: number;
  /** The model as the request named it. */
  model: string;
}

export function usageView(usage: Usage): CompletionUsage {
  const cached = usage.cachedTokens ?? 0;
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: cached },
  };
}

/** A turn that ran out of model calls was cut short, as an answer cut at its token limit is. */
export function finishReasonOf(stop: StopReason): 'stop' | 'length' {
  return stop === 'max_iterations' ? 'length' : 'stop';
}

export function completionView(meta: CompletionMeta, content: string, stop: StopReason, usage: Usage): ChatCompletion {
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: finishReasonOf(stop) }],
    usage: usageView(usage),
  };
}

/** One chunk of a streamed completion; `usage: null` on every chunk but the last when the client asked for usage, as OpenAI sends it. */
export function chunkView(meta: CompletionMeta, delta: ChatCompletionChunk.Choice.Delta, finish: 'stop' | 'length' | null, withUsage: boolean): ChatCompletionChunk {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(withUsage ? { usage: null } : {}),
  };
}

/** The last chunk when the client asked for usage (`stream_options.include_usage`): no choices, the turn's usage. */
export function usageChunkView(meta: CompletionMeta, usage: Usage): ChatCompletionChunk {
  return { id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model, choices: [], usage: usageView(usage) };
}

export interface OpenAIErrorView {
  error: { message: string; type: string; param: string | null; code: string };
}

/** OpenAI's error types by status; our code goes in `code` (a model the caller may not use: OpenAI's own `model_not_found`). */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'insufficient_quota';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

export function openAIErrorView(error: AppError): OpenAIErrorView {
  const field = typeof error.details?.field === 'string' ? error.details.field : null;
  return {
    error: {
      message: error.message,
      type: errorType(error.status),
      param: field,
      code: error.code === 'E_MODEL_NOT_FOUND' ? 'model_not_found' : error.code,
    },
  };
}
