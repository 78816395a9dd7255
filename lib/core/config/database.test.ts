import { loadConfig } from '.';

// DATABASE_URL picks the Postgres store; the lease length is bounded by the 30 s the contract promises.
const load = (env: Record<string, string>) => loadConfig({ OPENAI_MODEL: 'm', ...env }, '/srv/app');

it('uses SQLite unless DATABASE_URL is a postgres URL; memory still wins', () => {
  expect(load({})).toMatchObject({ store: 'sqlite', turnLeaseMs: 30_000 });
  expect(load({})).not.toHaveProperty('databaseUrl');
  expect(load({ DATABASE_URL: ' postgres://u:p@db:5432/bmad ' })).toMatchObject({ store: 'postgres', databaseUrl: 'postgres://u:p@db:5432/bmad' });
  expect(load({ DATABASE_URL: 'postgresql://db/bmad' })).toMatchObject({ store: 'postgres' });
  expect(load({ DATABASE_URL: 'mysql://db/bmad' })).toMatchObject({ store: 'sqlite' });
  expect(load({ DATABASE_URL: 'postgres://db/bmad', CONVERSATION_STORE: 'memory' })).toMatchObject({ store: 'memory' });
});

it('reads TURN_LEASE_MS, at most 30 s', () => {
  expect(load({ TURN_LEASE_MS: '3000' }).turnLeaseMs).toBe(3000);
  expect(load({ TURN_LEASE_MS: '600000' }).turnLeaseMs).toBe(30_000);
  expect(load({ TURN_LEASE_MS: 'soon' }).turnLeaseMs).toBe(30_000);
  expect(load({ TURN_LEASE_MS: '10' }).turnLeaseMs).toBe(30_000);
});
