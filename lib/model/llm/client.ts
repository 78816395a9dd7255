import OpenAI from 'openai';
import type { LlmConfig } from '../../core/config';
import { createHttpFetch } from './transport';

/**
 * Sent when no key is configured: local servers (Ollama, vLLM, LM Studio) ignore it, and the SDK
 * refuses to start without one. mapLlmError recognises it to say "no key configured" on a 401.
 */
export const PLACEHOLDER_API_KEY = 'not-needed';

/** The longest delay setTimeout accepts; larger values fire at once, so this is "never" for the SDK. */
const NO_SDK_TIMEOUT_MS = 2_147_483_647;

export interface LlmClientOptions {
  /**
   * Retries of connection failures, 408/409/429/5xx. One by default: a blip is absorbed, a real
   * outage reaches the user in seconds instead of after the SDK's default backoff chain.
   */
  maxRetries?: number;
  /** For tests and proxies; defaults to keep-alive node:http(s) (see transport.ts). */
  fetch?: typeof fetch;
}

/**
 * An OpenAI SDK client for any OpenAI-compatible endpoint. Time limits are not the SDK's job
 * here: the loop owns one turn-wide deadline and passes it down as an AbortSignal.
 */
export function createLlmClient(llm: LlmConfig, options: LlmClientOptions = {}): OpenAI {
  return new OpenAI({
    apiKey: llm.apiKey || PLACEHOLDER_API_KEY,
    // null, not undefined: undefined would let the SDK read OPENAI_BASE_URL behind the config's back.
    baseURL: llm.baseURL ?? null,
    maxRetries: options.maxRetries ?? 1,
    timeout: NO_SDK_TIMEOUT_MS,
    fetch: options.fetch ?? createHttpFetch(),
  });
}
