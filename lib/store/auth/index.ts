import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { AppDatabase } from '../db/database';
import { openPostgres } from '../db/postgres';
import type { StoreDatabase } from '../db/store-database';
import { Accounts } from './accounts';
import { resolveSecret } from './secret';
import type { AuthSettings } from './settings';

export { Accounts, type Person, type Member, type TokenView, type NewToken } from './accounts';
export { accountsPolicy } from './policy';
export { authSettings, authStartupProblem, isLoopbackHost, listenHost, networkStartupProblem, type AuthSettings, type OidcSettings } from './settings';
export { resolveSecret, SECRET_FILE } from './secret';
export { CLIENT_ADDRESS_HEADER, OIDC_PROVIDER_ID, SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE, SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE_BEHIND_PROXY, SIGN_IN_ATTEMPTS_PER_MINUTE, SIGN_IN_ATTEMPTS_PER_MINUTE_UNKNOWN_CLIENTS, clientAddressed, createBetterAuth, type AuthDatabase, type BetterAuth } from './better-auth';

/**
 * Accounts on the stores' database: on Postgres with DATABASE_URL (a pool of their own, the same
 * database every instance shares), else on the SQLite file (`DATA_DIR/conversations.db`, on the
 * stores' connection), or in memory beside the memory store.
 */
export function openAccounts(options: { dataDir: string; database: StoreDatabase; settings: AuthSettings }): Accounts {
  const secret = resolveSecret(options.settings.secret, options.dataDir);
  const where = options.database;
  if (where.kind === 'postgres') {
    const { db, pool } = openPostgres(where.url, { poolSize: 5 });
    return new Accounts({ db, type: 'postgres' }, options.settings, secret, async () => {
      await db.destroy().catch(() => pool.end());
    });
  }
  if (where.kind === 'memory') {
    const db = new Kysely({ dialect: new SqliteDialect({ database: new Database(':memory:') }) });
    return new Accounts({ db, type: 'sqlite' }, options.settings, secret, () => db.destroy());
  }
  // The stores' connection to the file, shared (see AppDatabase): a second connection in this
  // process could stall the event loop waiting for a lock the first holds across an await. Opened
  // without the stores' first history, which accounts never read (AppDatabase runs it when a
  // store opens the file).
  const database = new AppDatabase({ file: where.file });
  return new Accounts({ db: database.db, type: 'sqlite' }, options.settings, secret, () => database.close());
}
