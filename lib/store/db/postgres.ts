import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';

export interface PostgresOptions {
  /** Connections this process keeps open at most. */
  poolSize?: number;
}

/**
 * A Kysely instance over a pg pool. Rows are read untyped (`Kysely<any>`): the stores map them
 * to their own shapes, and the schema is the migrations' business.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any>;

export function openPostgres(url: string, options: PostgresOptions = {}): { db: Db; pool: pg.Pool } {
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10, idleTimeoutMillis: 30_000 });
  // A dropped idle connection (server restart, network) is the pool's to replace; unhandled, it would end the process.
  pool.on('error', () => undefined);
  return { db: new Kysely({ dialect: new PostgresDialect({ pool }) }), pool };
}

/** True for a postgres:// or postgresql:// URL. */
export function isPostgresUrl(url: string | undefined): url is string {
  return typeof url === 'string' && /^postgres(ql)?:\/\//i.test(url.trim());
}
