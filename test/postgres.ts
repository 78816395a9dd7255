import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server the tests create their databases on (this machine's Postgres, trust auth). */
export const PG_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  name: string;
  url: string;
  /** Drops the database, ending any session still on it. */
  drop(): Promise<void>;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A new empty database with a unique name (letters, digits and "_" only, so it can be quoted as is). */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `bmad_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE "${name}"`));
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}
