import type {
  AgentSummary,
  ChatResponseData,
  ConversationDetail,
  ConversationListData,
  HealthData,
  InstallableReleaseView,
  ModelProfileView,
  OutputFileEntry,
  ProjectDetail,
  ProjectDocument,
  ProjectDocumentVersion,
  ProjectJourney,
  ProjectMcpServer,
  ProjectView,
  SavedDocumentView,
} from '@/types/api';
import type { NewProjectInput } from './types';

/** A failed API call, with the server's safe message and code. */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  /** The request field a 400 is about, when the server names it. */
  readonly field?: string;
  /** The error envelope's other fields (a merge conflict's `paths`). */
  readonly extra?: Record<string, unknown>;
  constructor(message: string, code: string, status: number, field?: string, extra?: Record<string, unknown>) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.field = field;
    this.extra = extra;
  }
}

/**
 * The field of a validation error: the envelope's `field` when present, else the one its message
 * names ("Invalid name: …"), which is how the server words every validation failure.
 */
function fieldOf(body: { field?: unknown; error?: unknown }): string | undefined {
  if (typeof body.field === 'string' && body.field) return body.field;
  const m = /^Invalid ([A-Za-z][\w.]*):/.exec(String(body.error ?? ''));
  return m ? m[1] : undefined;
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
    const code = String(body.code ?? 'E_UNKNOWN');
    return new ApiError(String(body.error ?? `Request failed (${res.status})`), code, res.status, code === 'E_VALIDATION' ? fieldOf(body) : undefined, body as Record<string, unknown>);
  }
  return new ApiError(`Request failed (${res.status}${res.statusText ? ` ${res.statusText}` : ''})`, 'E_HTTP', res.status);
}

async function fetchOrNetworkError(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    throw new ApiError('Cannot reach the server.', 'E_NETWORK', 0);
  }
}

/** A JSON request to the app's API: the envelope's data, or an ApiError in words. */
export async function request<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetchOrNetworkError(url, { ...init, headers: { Accept: 'application/json', ...(init?.body ? { 'Content-Type': 'application/json' } : {}), ...init?.headers } });
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

/** A save refused because the document changed meanwhile. */
export class ConflictError extends ApiError {
  readonly currentSha256: string | null;
  /** Who made the change the save collided with, and when (null: a change made outside the app). */
  readonly lastChange: LastChange | null;
  constructor(message: string, currentSha256: string | null, lastChange: LastChange | null = null) {
    super(message, 'E_CONFLICT', 409);
    this.currentSha256 = currentSha256;
    this.lastChange = lastChange;
  }
}

export interface LastChange {
  at: string;
  /** The person who saved or restored it, or in whose turn an agent wrote it. */
  person: string | null;
  agentId: string | null;
}

/** The sha256 of bytes, hex, as the server names content (the browser's own digest). */
export async function sha256Hex(bytes: ArrayBuffer): Promise<string | null> {
  const subtle = (globalThis.crypto as Crypto | undefined)?.subtle;
  if (!subtle) return null;
  const digest = await subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

export const api = {
  health: (signal?: AbortSignal) => request<HealthData>('/api/health', { signal }),
  /** A project's agents with `projectId`, the bundles' agents without. */
  agents: (projectId?: string | null, signal?: AbortSignal) =>
    request<AgentSummary[]>(projectId ? `/api/agents?projectId=${enc(projectId)}` : '/api/agents', { signal }),
  conversations: (opts: { agentId?: string; projectId?: string | null; limit?: number; cursor?: string; q?: string } = {}, signal?: AbortSignal) => {
    const q = new URLSearchParams();
    if (opts.q) q.set('q', opts.q);
    if (opts.agentId) q.set('agentId', opts.agentId);
    if (opts.projectId) q.set('projectId', opts.projectId);
    if (opts.limit) q.set('limit', String(opts.limit));
    if (opts.cursor) q.set('cursor', opts.cursor);
    const qs = q.toString();
    return request<ConversationListData>(`/api/conversations${qs ? `?${qs}` : ''}`, { signal });
  },
  conversation: (id: string, signal?: AbortSignal) => request<ConversationDetail>(`/api/conversations/${enc(id)}`, { signal }),
  /** Remembers the model profile a conversation answers with. */
  setModel: (id: string, model: string | null) =>
    request<unknown>(`/api/conversations/${enc(id)}`, { method: 'PATCH', body: JSON.stringify({ model }) }),
  models: async (signal?: AbortSignal): Promise<ModelProfileView[]> => {
    const data = await request<ModelProfileView[]>('/api/models', { signal });
    const list = Array.isArray(data) ? data : [];
    return list.filter((m): m is ModelProfileView => !!m && typeof m.name === 'string' && m.name !== '');
  },
  rename: (id: string, title: string) =>
    request<{ title?: string }>(`/api/conversations/${enc(id)}`, { method: 'PATCH', body: JSON.stringify({ title }) }),
  remove: (id: string) => request<unknown>(`/api/conversations/${enc(id)}`, { method: 'DELETE' }),
  /** Continue in a copy: a new conversation of one's own with this one's messages. */
  copy: (id: string) => request<{ id: string }>(`/api/conversations/${enc(id)}/copy`, { method: 'POST' }),
  files: async (id: string, signal?: AbortSignal): Promise<OutputFileEntry[]> => {
    // Documented as `{ files }`; tolerate a bare array too.
    const data = await request<{ files?: OutputFileEntry[] } | OutputFileEntry[]>(`/api/conversations/${enc(id)}/files`, { signal });
    if (Array.isArray(data)) return data;
    return data?.files ?? [];
  },

  projects: (signal?: AbortSignal) => request<ProjectView[]>('/api/projects', { signal }),
  /** A project with the doctor's diagnosis, its agents' broken menu items marked, and its total usage. */
  project: async (id: string, signal?: AbortSignal) => {
    const detail = await request<ProjectDetail | { id: string; clone: unknown }>(`/api/projects/${enc(id)}`, { signal });
    // A project still being cloned (or not installed yet) is only its clone: not a project to open.
    if (!('agents' in detail)) throw new ApiError(`Project "${id}" is not ready yet.`, 'E_PROJECT_NOT_FOUND', 404);
    return detail;
  },
  createProject: (input: NewProjectInput, signal?: AbortSignal) =>
    request<ProjectView>('/api/projects', { method: 'POST', body: JSON.stringify(input), signal }),
  projectFiles: async (projectId: string, signal?: AbortSignal): Promise<ProjectDocument[]> => {
    const data = await request<{ files?: ProjectDocument[] } | ProjectDocument[]>(`/api/projects/${enc(projectId)}/files`, { signal });
    if (Array.isArray(data)) return data;
    return data?.files ?? [];
  },
  fileVersions: async (projectId: string, path: string, signal?: AbortSignal): Promise<ProjectDocumentVersion[]> => {
    const data = await request<{ versions?: ProjectDocumentVersion[] }>(`${projectFileUrl(projectId, path)}?versions`, { signal });
    return data?.versions ?? [];
  },
  fileDiff: async (projectId: string, path: string, version: string, signal?: AbortSignal): Promise<string> => {
    const data = await request<{ diff?: string }>(`${projectFileUrl(projectId, path)}?diff=${enc(version)}`, { signal });
    return data?.diff ?? '';
  },
  journey: (projectId: string, signal?: AbortSignal) => request<ProjectJourney>(`/api/projects/${enc(projectId)}/journey`, { signal }),
  installer: (signal?: AbortSignal) => request<InstallableReleaseView[]>('/api/installer', { signal }),
  /**
   * Creates a project, reporting the installer's steps as the server streams them. Whatever the
   * request got wrong comes back as a plain error before anything streams.
   */
  createProjectWithSteps: async (input: NewProjectInput, onStep: (text: string) => void, signal?: AbortSignal): Promise<ProjectView> => {
    const res = await fetchOrNetworkError('/api/projects', {
      method: 'POST',
      headers: { Accept: 'application/x-ndjson', 'Content-Type': 'application/json' },
      body: JSON.stringify(input),
      signal,
    });
    if (!res.ok) throw await readApiError(res);
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('ndjson')) {
      const body = (await res.json().catch(() => null)) as { data?: ProjectView } | null;
      if (body?.data) return body.data;
      throw new ApiError('Unexpected response from /api/projects', 'E_BAD_RESPONSE', res.status);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (value) buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split('\n');
      buffer = done ? '' : (lines.pop() ?? '');
      for (const raw of lines) {
        if (!raw.trim()) continue;
        let line: { type?: string; text?: string; data?: ProjectView; error?: string; code?: string; status?: number };
        try {
          line = JSON.parse(raw);
        } catch {
          continue;
        }
        if (line.type === 'step' && typeof line.text === 'string') onStep(line.text);
        else if (line.type === 'done' && line.data) return line.data;
        else if (line.type === 'error') throw new ApiError(String(line.error ?? 'The project could not be created.'), String(line.code ?? 'E_UNKNOWN'), Number(line.status ?? 500));
      }
      if (done) break;
    }
    throw new ApiError('The connection closed before the install finished; reload to see whether the project was created.', 'E_NETWORK', 0);
  },
  /**
   * Saves a project document (path relative to the project root). A 409 means it changed since it
   * was read: the ConflictError carries its current sha256.
   */
  saveProjectFile: async (projectId: string, path: string, content: string, ifMatchSha256?: string): Promise<SavedDocumentView> => {
    const res = await fetchOrNetworkError(`/api/projects/${enc(projectId)}/files/${encPath(path)}`, {
      method: 'PUT',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
      body: JSON.stringify({ content, ...(ifMatchSha256 ? { ifMatchSha256 } : {}) }),
    });
    if (res.status === 409) {
      const body = (await res.json().catch(() => ({}))) as { error?: string; currentSha256?: string | null; lastChange?: LastChange | null };
      const last = body.lastChange && typeof body.lastChange.at === 'string' ? body.lastChange : null;
      throw new ConflictError(String(body.error ?? 'The document changed since it was opened.'), body.currentSha256 ?? null, last);
    }
    if (!res.ok) throw await readApiError(res);
    const body = (await res.json()) as { data: SavedDocumentView };
    return body.data;
  },
  /** The MCP servers a project's agents may use; `list` reaches the ones not listed yet. */
  projectMcp: async (projectId: string, list = false, signal?: AbortSignal): Promise<ProjectMcpServer[]> => {
    const data = await request<{ servers?: ProjectMcpServer[] }>(`/api/projects/${enc(projectId)}/mcp${list ? '?list=1' : ''}`, { signal });
    return Array.isArray(data?.servers) ? data.servers : [];
  },
  restore: (projectId: string, path: string, version: string) =>
    request<{ path: string; version: string }>(`/api/projects/${enc(projectId)}/restore`, { method: 'POST', body: JSON.stringify({ path, version }) }),
};

const encPath = (path: string) => path.split('/').filter(Boolean).map(enc).join('/');

/** A conversation as a downloadable Markdown or JSON file. */
export function exportUrl(conversationId: string, format: 'md' | 'json'): string {
  return `/api/conversations/${enc(conversationId)}/export?format=${format}`;
}

export function fileUrl(conversationId: string, path: string, download = false): string {
  return `/api/conversations/${enc(conversationId)}/files/${encPath(path)}${download ? '?download=1' : ''}`;
}

/** A project document's raw content; a `version` reads that version instead of the current file. */
export function projectFileUrl(projectId: string, path: string, opts: { download?: boolean; version?: string } = {}): string {
  const q = new URLSearchParams();
  if (opts.version) q.set('version', opts.version);
  if (opts.download) q.set('download', '1');
  const qs = q.toString();
  return `/api/projects/${enc(projectId)}/files/${encPath(path)}${qs ? `?${qs}` : ''}`;
}

const TEXT_TYPES = /^(text\/|application\/(json|xml|yaml|x-yaml|javascript|toml|x-sh|csv))/;

export function isMarkdownFile(path: string, contentType = ''): boolean {
  return /\.(md|markdown|mdx)$/i.test(path) || contentType.includes('markdown');
}

export type FileContent = { kind: 'markdown' | 'text'; text: string } | { kind: 'binary' };

/** A file's raw content: text when the browser can show it, binary (unread) otherwise. */
export async function readFileContent(url: string, path: string, signal?: AbortSignal): Promise<FileContent> {
  const res = await fetchOrNetworkError(url, { signal });
  if (!res.ok) {
    const err = await readApiError(res);
    throw err.code === 'E_HTTP' ? new ApiError(`Could not open the file (${res.status}).`, err.code, res.status) : err;
  }
  const type = res.headers.get('content-type') ?? '';
  if (type && !TEXT_TYPES.test(type) && !isMarkdownFile(path, type)) return { kind: 'binary' };
  const text = await res.text();
  return { kind: isMarkdownFile(path, type) ? 'markdown' : 'text', text };
}

export type { ChatResponseData };
