import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const SECRET_FILE = 'auth-secret';

/**
 * The secret that signs sessions: the configured one, or one generated on first start and kept
 * in DATA_DIR (mode 600), so sessions survive a restart without any variable to set.
 */
export function resolveSecret(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, SECRET_FILE);
  try {
    // `wx`: two processes starting at once cannot both write one; the loser reads the winner's.
    fs.writeFileSync(file, crypto.randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  for (let i = 0; i < 50; i++) {
    const text = fs.readFileSync(file, 'utf8').trim();
    if (text.length >= 32) return text;
    // Another process created it a moment ago and is still writing.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
  throw new Error(`${SECRET_FILE} in DATA_DIR is empty or too short; delete it to have a new one generated.`);
}
