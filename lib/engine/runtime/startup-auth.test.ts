import { checkConfiguration } from './startup';

it('refuses to serve AUTH=off away from loopback, naming HOST (next start -H or HOST alike)', () => {
  expect(checkConfiguration({ AUTH: 'off' }, process.cwd(), ['node', 'next', 'start', '-H', '0.0.0.0'])).toEqual({ error: expect.stringContaining('HOST is 0.0.0.0') });
  expect(checkConfiguration({ AUTH: 'off', HOST: '10.0.0.8' }, process.cwd(), ['node', 'tool'])).toEqual({ error: expect.stringContaining('HOST is 10.0.0.8') });
  // `next start` without -H listens on every interface (Next does not read HOST).
  expect(checkConfiguration({ AUTH: 'off', HOST: '127.0.0.1' }, process.cwd(), ['node', 'next', 'start'])).toEqual({ error: expect.stringContaining('HOST is 0.0.0.0') });
  expect(checkConfiguration({ AUTH: 'off' }, process.cwd(), ['node', 'next', 'start', '-H', '127.0.0.1'])).toHaveProperty('config');
  expect(checkConfiguration({ ALLOWED_HOSTS: 'orchestrator.example.com' }, process.cwd(), ['node', 'next', 'start', '-H', '0.0.0.0'])).toHaveProperty('config');
});

it('refuses to serve beyond loopback without ALLOWED_HOSTS, naming it', () => {
  expect(checkConfiguration({}, process.cwd(), ['node', 'next', 'start', '-H', '0.0.0.0'])).toEqual({ error: expect.stringContaining('ALLOWED_HOSTS is not set') });
});
