import crypto from 'node:crypto';
import { AppError } from '../../core/errors';

/**
 * Secrets at rest (a forge token, a webhook secret): AES-256-GCM with SECRETS_KEY, bound to what
 * they are for (the project and the field, as associated data: a sealed token copied into another
 * project's row does not open there). A sealed value names its key by an id derived from the key
 * (never the key itself), so a rotation can read values sealed with the previous key
 * (SECRETS_KEY_PREVIOUS) and seal them again with the new one.
 *
 * Format: `v1.<key id>.<iv>.<tag>.<ciphertext>`, base64url parts.
 */
export interface KeyRing {
  /** The key new values are sealed with; null when SECRETS_KEY is unset (or malformed). */
  current: Buffer | null;
  /** Keys values may still be sealed with (read only). */
  previous: Buffer[];
  /** SECRETS_KEY was set but is not 32 bytes of hex or base64. */
  invalid?: boolean;
}

const VERSION = 'v1';

/** A key's id: 12 hex digits of an HMAC of a fixed label, so the id tells nothing of the key. */
export function keyId(key: Buffer): string {
  return crypto.createHmac('sha256', key).update('bmad-orchestrator secrets key id').digest('hex').slice(0, 12);
}

/** Why nothing can be sealed on this server, in words that say what to set; null when a key is there. */
export function sealProblem(ring: KeyRing): string | null {
  if (ring.invalid) return 'SECRETS_KEY is set but is not 32 bytes (64 hex digits, or 32 bytes in base64); the server stores no token until it is fixed.';
  if (!ring.current) return 'This server has no SECRETS_KEY, so it cannot store a token: set SECRETS_KEY to 32 random bytes (e.g. `openssl rand -hex 32`) and restart.';
  return null;
}

/** Seals `plain` for `purpose` (e.g. `remote:<project>:token`); E_SECRETS_NOT_CONFIGURED without a key. */
export function seal(ring: KeyRing, purpose: string, plain: string): string {
  const problem = sealProblem(ring);
  if (problem) throw new AppError('E_SECRETS_NOT_CONFIGURED', problem);
  const key = ring.current!;
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(purpose, 'utf8'));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [VERSION, keyId(key), iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
}

/** The key id a sealed value names (null when it is not one). */
export function sealedKeyId(sealed: string): string | null {
  const parts = sealed.split('.');
  return parts.length === 5 && parts[0] === VERSION ? parts[1]! : null;
}

/**
 * Opens a sealed value, or throws E_SECRETS_NOT_CONFIGURED naming what is missing: the key it was
 * sealed with is not configured (rotated away without SECRETS_KEY_PREVIOUS), or it does not open
 * (changed, or sealed for another purpose). The error never holds any part of the value.
 */
export function open(ring: KeyRing, purpose: string, sealed: string): string {
  const parts = sealed.split('.');
  if (parts.length !== 5 || parts[0] !== VERSION) throw new AppError('E_SECRETS_NOT_CONFIGURED', 'A stored secret is not in a format this server reads; set it again.');
  const [, id, iv, tag, body] = parts as [string, string, string, string, string];
  const key = [ring.current, ...ring.previous].find((k): k is Buffer => !!k && keyId(k) === id);
  if (!key) throw new AppError('E_SECRETS_NOT_CONFIGURED', `A stored secret was sealed with a key this server does not have (key id ${id}): set that key as SECRETS_KEY_PREVIOUS, or set the secret again.`);
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(purpose, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new AppError('E_SECRETS_NOT_CONFIGURED', 'A stored secret does not open with the configured key (changed, or not this one\'s); set it again.');
  }
}

/** Whether a sealed value is sealed with the current key (else a rotation seals it again). */
export function isCurrent(ring: KeyRing, sealed: string): boolean {
  return !!ring.current && sealedKeyId(sealed) === keyId(ring.current);
}

/** The key ring of a configuration's remote settings. */
export function keyRingOf(remotes: { secretsKey: Buffer | null; secretsKeyInvalid: boolean; previousSecretsKeys?: Buffer[] }): KeyRing {
  return { current: remotes.secretsKey, previous: remotes.previousSecretsKeys ?? [], invalid: remotes.secretsKeyInvalid };
}
