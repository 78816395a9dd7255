import type { ChatMessageView, ConversationDetail } from '@/types/api';
import { readApiError } from './api';

/** A headless run as GET /api/runs answers it (the fields the screen shows). */
export interface RunItem {
  id: string;
  projectId: string;
  skill: string;
  agentId: string;
  intent: string | null;
  status: 'queued' | 'running' | 'complete' | 'partial' | 'blocked' | 'failed' | 'cancelled' | 'interrupted';
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  artifacts: Array<{ path: string; version: string }>;
  conversationId: string | null;
  answers: number;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
}

async function getData<T>(url: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(url, { headers: { Accept: 'application/json' }, signal });
  if (!res.ok) throw await readApiError(res);
  return ((await res.json()) as { data: T }).data;
}

export const runsApi = {
  list: (projectId: string, signal?: AbortSignal) => getData<{ items: RunItem[] }>(`/api/runs?projectId=${encodeURIComponent(projectId)}&limit=20`, signal).then((d) => d.items),
  get: (id: string, signal?: AbortSignal) => getData<RunItem>(`/api/runs/${encodeURIComponent(id)}`, signal),
  conversation: (id: string, signal?: AbortSignal) => getData<ConversationDetail>(`/api/conversations/${encodeURIComponent(id)}`, signal),
};

export function isActive(status: RunItem['status']): boolean {
  return status === 'queued' || status === 'running';
}

/** A run's status as the screen says it. */
export const RUN_STATUS_WORDS: Record<RunItem['status'], string> = {
  queued: 'queued',
  running: 'running',
  complete: 'complete',
  partial: 'partial',
  blocked: 'blocked',
  failed: 'failed',
  cancelled: 'cancelled',
  interrupted: 'interrupted',
};

export type { ChatMessageView };
