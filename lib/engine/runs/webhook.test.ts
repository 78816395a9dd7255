import crypto from 'node:crypto';
import { signature, webhookProblem } from './webhook';

describe('webhooks', () => {
  it('sign the exact body with HMAC-SHA256 of the secret', () => {
    const body = '{"id":"run_x","status":"complete"}';
    expect(signature(body, 's3cret-s3cret-s3cret')).toBe(`sha256=${crypto.createHmac('sha256', 's3cret-s3cret-s3cret').update(body).digest('hex')}`);
  });

  it('never reach this machine, private networks or link-local addresses unless allowed', async () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://localhost/x', 'http://[::1]/x', 'http://169.254.169.254/latest', 'http://10.1.2.3/', 'http://192.168.0.10/', 'http://[::ffff:127.0.0.1]/']) {
      expect(await webhookProblem(url, false)).toMatch(/RUNS_WEBHOOK_ALLOW_PRIVATE/);
    }
    expect(await webhookProblem('http://127.0.0.1:9/x', true)).toBeNull();
    expect(await webhookProblem('http://93.184.215.14/hook', false)).toBeNull();
    expect(await webhookProblem('ftp://93.184.215.14/hook', false)).toMatch(/http\(s\)/);
    expect(await webhookProblem('http://user:pw@93.184.215.14/hook', false)).toMatch(/credentials/);
  });
});
