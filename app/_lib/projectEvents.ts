'use client';

import { useEffect, useRef, useState } from 'react';
import type { ProjectEventView } from '@/types/api';

/**
 * A project's event stream (GET /api/projects/:id/events, server-sent events) for the board: each
 * event is a signal to read again. `live` says whether the stream is open (the caller then needs
 * no fast poll); a browser without EventSource, or a stream that fails, leaves it false and the
 * caller polls as before. The browser's EventSource reconnects by itself.
 */
export function useProjectEvents(projectId: string, onEvent: (e: ProjectEventView) => void): { live: boolean } {
  const [live, setLive] = useState(false);
  const handler = useRef(onEvent);
  handler.current = onEvent;

  useEffect(() => {
    setLive(false);
    const ES = (globalThis as { EventSource?: typeof EventSource }).EventSource;
    if (!ES) return;
    const source = new ES(`/api/projects/${encodeURIComponent(projectId)}/events`);
    const listener = (m: MessageEvent) => {
      try {
        handler.current(JSON.parse(String(m.data)) as ProjectEventView);
      } catch {
        // Not an event of ours.
      }
    };
    const types: ProjectEventView['type'][] = ['story', 'run', 'workspace', 'autopilot', 'board'];
    for (const t of types) source.addEventListener(t, listener as EventListener);
    source.onopen = () => setLive(true);
    source.onerror = () => setLive(false);
    return () => {
      for (const t of types) source.removeEventListener(t, listener as EventListener);
      source.close();
      setLive(false);
    };
  }, [projectId]);

  return { live };
}
