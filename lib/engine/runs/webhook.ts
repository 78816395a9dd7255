import { createHmac, randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import net from 'node:net';
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
  /** Whether a webhook may reach loopback, private and link-local addresses (RUNS_WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
}

/** Addresses a webhook may not reach unless allowed: this machine, private networks, link-local (cloud metadata). */
const PRIVATE = new net.BlockList();
for (const [a, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
  PRIVATE.addSubnet(a, bits, 'ipv4');
}
for (const [a, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) PRIVATE.addSubnet(a, bits, 'ipv6');

function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return PRIVATE.check(mapped, 'ipv4');
  const family = net.isIPv4(address) ? 'ipv4' : net.isIPv6(address) ? 'ipv6' : null;
  return family === null || PRIVATE.check(address, family);
}

/**
 * Why a webhook URL may not be called, or null: it must be http(s), and unless private addresses
 * are allowed, every address its host resolves to must be public (checked again before each
 * delivery, since a name can change what it points to).
 */
export async function webhookProblem(url: string, allowPrivate: boolean): Promise<string | null> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'webhook.url is not a URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'webhook.url must be an http(s) URL';
  if (parsed.username || parsed.password) return 'webhook.url must not carry credentials; sign with webhook.secret instead';
  if (allowPrivate) return null;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = net.isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return `webhook.url: the host ${host} does not resolve`;
  }
  if (!addresses.length || addresses.some(isPrivateAddress)) {
    return `webhook.url points at a loopback, private or link-local address (${host}); set RUNS_WEBHOOK_ALLOW_PRIVATE=1 to allow it`;
  }
  return null;
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
    const refused = await webhookProblem(target.url, settings.allowPrivate);
    if (refused) return { delivered: false, attempts, error: refused, at: new Date().toISOString() };
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
