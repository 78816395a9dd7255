/**
 * The URL holds what a reload must restore: `/?c=<conversationId>` for a conversation,
 * `/?agent=<agentId>` for a new one not yet sent (`ws=<workspaceId>`: in that workspace), `/` for the agent picker. `p=<projectId>` names
 * the project every one of them works in; without it they work with the bundles.
 */
export type Route =
  | { kind: 'picker'; projectId?: string }
  | { kind: 'new'; agentId: string; projectId?: string; workspaceId?: string }
  | { kind: 'conversation'; id: string; projectId?: string };

export function parseRoute(search: string): Route {
  const q = new URLSearchParams(search);
  const p = q.get('p');
  const project = p ? { projectId: p } : {};
  const c = q.get('c');
  if (c) return { kind: 'conversation', id: c, ...project };
  const agent = q.get('agent');
  const ws = q.get('ws');
  if (agent) return { kind: 'new', agentId: agent, ...project, ...(ws && p ? { workspaceId: ws } : {}) };
  return { kind: 'picker', ...project };
}

export function routeHref(route: Route): string {
  const q = new URLSearchParams();
  if (route.projectId) q.set('p', route.projectId);
  if (route.kind === 'conversation') q.set('c', route.id);
  else if (route.kind === 'new') {
    q.set('agent', route.agentId);
    if (route.workspaceId && route.projectId) q.set('ws', route.workspaceId);
  }
  const qs = q.toString();
  return qs ? `/?${qs}` : '/';
}
