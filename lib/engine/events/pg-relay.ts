import { sql } from 'kysely';
import pg from 'pg';
import { log } from '../../core/log';
import type { AppDatabase } from '../../store/db/database';
import { eventOf, type EventRelay, type ProjectEvent } from './bus';

/** The channel every instance of one database LISTENs on. */
export const EVENTS_CHANNEL = 'bmad_project_events';
/** Postgres refuses a payload of 8000 bytes or more; an event is far below it. */
const MAX_PAYLOAD = 7900;
const RECONNECT_MS = 2000;

/**
 * Project events across instances on one Postgres database: each event is a NOTIFY on
 * EVENTS_CHANNEL (sent through the stores' pool, in a statement of its own), heard by every
 * instance that has subscribers through one LISTEN connection of its own, reconnected after an
 * error. A notification lost while that connection is down is lost: events are signals, and the
 * board reads the state again on its slow poll as well.
 */
export class PgEventRelay implements EventRelay {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private deliver: ((projectId: string, event: ProjectEvent, origin: string) => void) | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  /** The relay owns `database` and closes it. */
  constructor(private readonly database: AppDatabase) {}

  publish(projectId: string, event: ProjectEvent, origin: string): void {
    if (this.closed) return;
    const payload = JSON.stringify({ o: origin, p: projectId, e: event });
    if (Buffer.byteLength(payload) > MAX_PAYLOAD) return;
    void (async () => {
      await this.database.ready();
      await sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${payload})`.execute(this.database.db);
    })().catch((e: unknown) => log.warn('events.notify_failed', { message: String((e as Error)?.message ?? e).slice(0, 200) }));
  }

  listen(deliver: (projectId: string, event: ProjectEvent, origin: string) => void): void {
    this.deliver = deliver;
    if (this.closed || this.client || this.connecting) return;
    this.connecting = this.connect().finally(() => {
      this.connecting = null;
    });
  }

  /** Resolves once the LISTEN connection is up (or its attempt failed). */
  async whenListening(): Promise<boolean> {
    await this.connecting;
    return this.client !== null;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.database.url! });
    const lost = () => {
      if (this.client !== client) return;
      this.client = null;
      if (!this.closed && !this.retry) {
        this.retry = setTimeout(() => {
          this.retry = null;
          if (this.deliver) this.listen(this.deliver);
        }, RECONNECT_MS);
        this.retry.unref?.();
      }
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (n) => {
      if (n.channel !== EVENTS_CHANNEL || !n.payload) return;
      try {
        const raw = JSON.parse(n.payload) as { o?: unknown; p?: unknown; e?: unknown };
        const event = eventOf(raw.e);
        if (event && typeof raw.p === 'string' && typeof raw.o === 'string') this.deliver?.(raw.p, event, raw.o);
      } catch {
        // Not ours: ignored.
      }
    });
    try {
      await this.database.ready();
      await client.connect();
      if (this.closed) {
        await client.end().catch(() => undefined);
        return;
      }
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
      this.client = client;
    } catch (e) {
      log.warn('events.listen_failed', { message: String((e as Error)?.message ?? e).slice(0, 200) });
      await client.end().catch(() => undefined);
      this.client = client;
      lost();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
    await this.database.close();
  }
}
