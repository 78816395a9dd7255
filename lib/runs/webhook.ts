import { createHmac, randomBytes } from 'node:crypto';
import type { WebhookOutcome } from './types';

/**
 * The end of a run, POSTed to the caller's URL. The body is the run's API view as JSON; the
 * `X-Signature` header is `sha256=` + hex HMAC-SHA256 of the exact body bytes keyed with the
 * run's webhook secret (the caller's `webhook.secret`, or one the server made and returned once
 * when the run was created). A receiver recomputes it over the raw body and compares in
 * constant time.
 */

export interface WebhookSettings {
  /** Attempts in all (the first and the retries). */
  attempts: number;
  /** The wait before the first retry; doubled before each next one. */
  backoffMs: number;
  /** Each attempt gives up after this long. */
  timeoutMs: number;
}

export function newWebhookSecret(): string {
  return randomBytes(32).toString('hex');
}

export function signature(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    t.unref?.();
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });

/**
 * Delivers one body, retrying with exponential back-off on a network error or a non-2xx answer.
 * Never throws; the outcome says what happened. `signal` stops the retries (a shutdown).
 */
export async function deliverWebhook(
  target: { url: string; secret: string },
  runId: string,
  body: string,
  settings: WebhookSettings,
  signal?: AbortSignal,
): Promise<WebhookOutcome> {
  const headers = { 'content-type': 'application/json', 'x-signature': signature(body, target.secret), 'x-run-id': runId, 'user-agent': 'bmad-orchestrator-runs' };
  let last: Pick<WebhookOutcome, 'status' | 'error'> = {};
  let attempts = 0;
  for (let i = 0; i < Math.max(1, settings.attempts); i++) {
    if (i > 0) await sleep(settings.backoffMs * 2 ** (i - 1), signal);
    if (signal?.aborted) break;
    attempts++;
    try {
      const timeout = AbortSignal.timeout(settings.timeoutMs);
      const res = await fetch(target.url, { method: 'POST', headers, body, redirect: 'manual', signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
      await res.body?.cancel().catch(() => undefined);
      if (res.ok) return { delivered: true, attempts, status: res.status, at: new Date().toISOString() };
      last = { status: res.status, error: `HTTP ${res.status}` };
    } catch (e) {
      last = { error: e instanceof Error ? (e.name === 'TimeoutError' ? 'timed out' : e.message.slice(0, 200)) : 'failed' };
    }
  }
  return { delivered: false, attempts, ...last, at: new Date().toISOString() };
}
