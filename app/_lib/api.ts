import type {
  AgentSummary,
  ChatResponseData,
  ConversationDetail,
  ConversationListData,
  ConversationSummaryView,
  HealthData,
  OutputFileEntry,
} from '@/types/api';

/** A failed API call, with the server's safe message and code. */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(message: string, code: string, status: number) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
  }
}

function isEnvelope(v: unknown): v is { success: boolean; data?: unknown; error?: unknown; code?: unknown } {
  return !!v && typeof v === 'object' && typeof (v as { success?: unknown }).success === 'boolean';
}

/** Turns an error response (JSON envelope or not) into an ApiError. */
export async function readApiError(res: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  if (isEnvelope(body) && body.success === false) {
    return new ApiError(String(body.error ?? `Request failed (${res.status})`), String(body.code ?? 'E_UNKNOWN'), res.status);
  }
  return new ApiError(`Request failed (${res.status}${res.statusText ? ` ${res.statusText}` : ''})`, 'E_HTTP', res.status);
}

async function request<T>(url: string, init?: RequestInit): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, headers: { Accept: 'application/json', ...(init?.body ? { 'Content-Type': 'application/json' } : {}), ...init?.headers } });
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    throw new ApiError('Cannot reach the server.', 'E_NETWORK', 0);
  }
  if (res.status === 204) return undefined as T;
  if (!res.ok) throw await readApiError(res);
  let body: unknown;
  try {
    body = await res.json();
  } catch (e) {
    // A superseded request aborts while its body is read; that is not a server fault.
    if (init?.signal?.aborted || (e as Error)?.name === 'AbortError') throw e;
    throw new ApiError(`Unexpected response from ${url}`, 'E_BAD_RESPONSE', res.status);
  }
  if (isEnvelope(body)) {
    if (body.success) return body.data as T;
    throw new ApiError(String(body.error), String(body.code ?? 'E_UNKNOWN'), res.status);
  }
  return body as T;
}

const enc = encodeURIComponent;

export const api = {
  health: (signal?: AbortSignal) => request<HealthData>('/api/health', { signal }),
  agents: (signal?: AbortSignal) => request<AgentSummary[]>('/api/agents', { signal }),
  conversations: (opts: { agentId?: string; limit?: number; cursor?: string } = {}, signal?: AbortSignal) => {
    const q = new URLSearchParams();
    if (opts.agentId) q.set('agentId', opts.agentId);
    if (opts.limit) q.set('limit', String(opts.limit));
    if (opts.cursor) q.set('cursor', opts.cursor);
    const qs = q.toString();
    return request<ConversationListData>(`/api/conversations${qs ? `?${qs}` : ''}`, { signal });
  },
  conversation: (id: string, signal?: AbortSignal) => request<ConversationDetail>(`/api/conversations/${enc(id)}`, { signal }),
  rename: (id: string, title: string) =>
    request<ConversationSummaryView>(`/api/conversations/${enc(id)}`, { method: 'PATCH', body: JSON.stringify({ title }) }),
  remove: (id: string) => request<unknown>(`/api/conversations/${enc(id)}`, { method: 'DELETE' }),
  files: async (id: string, signal?: AbortSignal): Promise<OutputFileEntry[]> => {
    // Documented as `{ files }`; tolerate a bare array too.
    const data = await request<{ files?: OutputFileEntry[] } | OutputFileEntry[]>(`/api/conversations/${enc(id)}/files`, { signal });
    if (Array.isArray(data)) return data;
    return data?.files ?? [];
  },
};

export function fileUrl(conversationId: string, path: string, download = false): string {
  const p = path.split('/').filter(Boolean).map(enc).join('/');
  return `/api/conversations/${enc(conversationId)}/files/${p}${download ? '?download=1' : ''}`;
}

export type { ChatResponseData };
