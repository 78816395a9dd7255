import { randomUUID } from 'node:crypto';
import { log } from '../../core/log';

/**
 * Project events: a signal that something of a project changed (a story's status, a run's, a
 * workspace's, the autopilot's), never the new state itself — a reader reads that through the API
 * it is allowed. Emitted by the engine where the change is written; heard by the events route
 * (server-sent events) and by whoever subscribes.
 *
 * One bus per process, kept on globalThis under a Symbol.for key: under `next start` the runtime
 * (which emits) and the route handlers (which subscribe) are separate module graphs with their
 * own copies of this file. Across instances a relay (Postgres LISTEN/NOTIFY, see pg-relay.ts)
 * carries each event to the others; without one (SQLite, memory) only this process hears it.
 */
export interface ProjectEvent {
  type: 'story' | 'run' | 'workspace' | 'autopilot' | 'board';
  storyKey?: string | null;
  runId?: string | null;
  workspaceId?: string | null;
  at: string;
}

export type ProjectEventInput = Omit<ProjectEvent, 'at'>;
export type ProjectEventListener = (event: ProjectEvent) => void;

/** Carries events to the other instances and theirs back to this one. */
export interface EventRelay {
  publish(projectId: string, event: ProjectEvent, origin: string): void;
  /** Called once subscribers exist: start hearing the others (idempotent). */
  listen(deliver: (projectId: string, event: ProjectEvent, origin: string) => void): void;
  close(): Promise<void>;
}

interface Bus {
  /** This process's id: its own events coming back through the relay are not delivered twice. */
  origin: string;
  listeners: Map<string, Set<ProjectEventListener>>;
  relay: EventRelay | null;
}

const KEY = Symbol.for('bmad-orchestrator.projectEvents');

function bus(): Bus {
  const g = globalThis as unknown as { [KEY]?: Bus };
  g[KEY] ??= { origin: randomUUID(), listeners: new Map(), relay: null };
  return g[KEY];
}

const TYPES = new Set(['story', 'run', 'workspace', 'autopilot', 'board']);
const idOf = (v: unknown) => (typeof v === 'string' && v.length <= 200 ? v : null);

/** An event as it came from elsewhere (a relay's payload), kept to its known fields; null when it is none. */
export function eventOf(raw: unknown): ProjectEvent | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  if (typeof r.type !== 'string' || !TYPES.has(r.type) || typeof r.at !== 'string') return null;
  const ev: ProjectEvent = { type: r.type as ProjectEvent['type'], at: r.at.slice(0, 40) };
  for (const k of ['storyKey', 'runId', 'workspaceId'] as const) if (r[k] !== undefined) ev[k] = idOf(r[k]);
  return ev;
}

function deliver(projectId: string, event: ProjectEvent): void {
  const set = bus().listeners.get(projectId);
  if (!set) return;
  for (const fn of [...set]) {
    try {
      fn(event);
    } catch (e) {
      log.warn('events.listener_failed', { message: String((e as Error)?.message ?? e).slice(0, 200) });
    }
  }
}

/** Tells the project's subscribers (here and, through the relay, on every instance) that something changed. Never throws. */
export function emitProjectEvent(projectId: string, ev: ProjectEventInput): void {
  const event: ProjectEvent = { ...ev, at: new Date().toISOString() };
  const b = bus();
  deliver(projectId, event);
  try {
    b.relay?.publish(projectId, event, b.origin);
  } catch (e) {
    log.warn('events.publish_failed', { message: String((e as Error)?.message ?? e).slice(0, 200) });
  }
}

/** Hears a project's events from now on; returns the unsubscribe. */
export function subscribeProjectEvents(projectId: string, listener: ProjectEventListener): () => void {
  const b = bus();
  let set = b.listeners.get(projectId);
  if (!set) b.listeners.set(projectId, (set = new Set()));
  set.add(listener);
  b.relay?.listen(relayed);
  return () => unsubscribeProjectEvents(projectId, listener);
}

export function unsubscribeProjectEvents(projectId: string, listener: ProjectEventListener): void {
  const b = bus();
  const set = b.listeners.get(projectId);
  if (!set) return;
  set.delete(listener);
  if (!set.size) b.listeners.delete(projectId);
}

function relayed(projectId: string, event: ProjectEvent, origin: string): void {
  if (origin !== bus().origin) deliver(projectId, event);
}

/**
 * Sets the process's relay (the runtime's, on Postgres); the one replaced is closed. With
 * subscribers already there, the new one starts listening at once.
 */
export async function setEventRelay(relay: EventRelay | null): Promise<void> {
  const b = bus();
  const previous = b.relay;
  b.relay = relay;
  if (relay && b.listeners.size) relay.listen(relayed);
  if (previous && previous !== relay) await previous.close();
}

/** Drops `relay` if it is still the process's (a runtime closing). */
export async function dropEventRelay(relay: EventRelay): Promise<void> {
  const b = bus();
  if (b.relay === relay) b.relay = null;
  await relay.close();
}
