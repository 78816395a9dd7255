import crypto from 'node:crypto';
import { isCurrent, keyId, keyRingOf, open, seal, sealedKeyId, sealProblem } from './index';
import { loadConfig } from '../../core/config';

const k1 = crypto.randomBytes(32);
const k2 = crypto.randomBytes(32);
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return 'ok';
};

describe('secrets at rest', () => {
  it('seal and open a value for one purpose; the sealed text holds neither the value nor the key', () => {
    const ring = { current: k1, previous: [] };
    const sealed = seal(ring, 'remote:shop:token', 'ghp_secret_value_123');
    expect(sealed).not.toContain('ghp_secret_value_123');
    expect(sealed).not.toContain(k1.toString('hex'));
    expect(sealed).not.toContain(k1.toString('base64'));
    expect(sealed.startsWith(`v1.${keyId(k1)}.`)).toBe(true);
    expect(open(ring, 'remote:shop:token', sealed)).toBe('ghp_secret_value_123');
    // A fresh IV every time.
    expect(seal(ring, 'remote:shop:token', 'ghp_secret_value_123')).not.toBe(sealed);
  });

  it('a value sealed for one project and field does not open as another', () => {
    const ring = { current: k1, previous: [] };
    const sealed = seal(ring, 'remote:shop:token', 'x');
    expect(code(() => open(ring, 'remote:lab:token', sealed))).toBe('E_SECRETS_NOT_CONFIGURED');
    expect(code(() => open(ring, 'remote:shop:webhookSecret', sealed))).toBe('E_SECRETS_NOT_CONFIGURED');
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(code(() => open(ring, 'remote:shop:token', tampered))).toBe('E_SECRETS_NOT_CONFIGURED');
  });

  it('refuses to seal without a key, saying what to set; and with a malformed one, saying so', () => {
    expect(code(() => seal({ current: null, previous: [] }, 'p', 'x'))).toBe('E_SECRETS_NOT_CONFIGURED');
    expect(sealProblem({ current: null, previous: [] })).toContain('set SECRETS_KEY');
    const bad = keyRingOf(loadConfig({ SECRETS_KEY: 'too-short' }, '/srv/app').remotes);
    expect(bad.invalid).toBe(true);
    expect(sealProblem(bad)).toContain('is not 32 bytes');
    expect(code(() => seal(bad, 'p', 'x'))).toBe('E_SECRETS_NOT_CONFIGURED');
  });

  it('rotation: a value sealed with the previous key opens while SECRETS_KEY_PREVIOUS names it, and is sealed again with the new one', () => {
    const old = { current: k1, previous: [] };
    const sealed = seal(old, 'p', 'token-1');
    const rotated = keyRingOf(loadConfig({ SECRETS_KEY: k2.toString('hex'), SECRETS_KEY_PREVIOUS: k1.toString('base64') }, '/srv/app').remotes);
    expect(isCurrent(rotated, sealed)).toBe(false);
    expect(open(rotated, 'p', sealed)).toBe('token-1');
    const again = seal(rotated, 'p', open(rotated, 'p', sealed));
    expect(isCurrent(rotated, again)).toBe(true);
    expect(sealedKeyId(again)).toBe(keyId(k2));
    // Once the previous key is gone, the old value names the key id it needs (never the key).
    const e = (() => {
      try {
        open({ current: k2, previous: [] }, 'p', sealed);
      } catch (x) {
        return x as Error;
      }
      return null;
    })();
    expect(e?.message).toContain(keyId(k1));
    expect(e?.message).toContain('SECRETS_KEY_PREVIOUS');
  });
});
