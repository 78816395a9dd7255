/**
 * The URL holds what a reload must restore: `/?c=<conversationId>` for a conversation,
 * `/?agent=<agentId>` for a new one not yet sent, `/` for the agent picker.
 */
export type Route = { kind: 'picker' } | { kind: 'new'; agentId: string } | { kind: 'conversation'; id: string };

export function parseRoute(search: string): Route {
  const q = new URLSearchParams(search);
  const c = q.get('c');
  if (c) return { kind: 'conversation', id: c };
  const agent = q.get('agent');
  if (agent) return { kind: 'new', agentId: agent };
  return { kind: 'picker' };
}

export function routeHref(route: Route): string {
  switch (route.kind) {
    case 'conversation':
      return `/?c=${encodeURIComponent(route.id)}`;
    case 'new':
      return `/?agent=${encodeURIComponent(route.agentId)}`;
    default:
      return '/';
  }
}
