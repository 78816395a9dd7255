import { parseRoute, routeHref, type Route } from './route';

describe('route', () => {
  it('keeps the project beside a conversation, a new one or the picker, and survives a round trip', () => {
    const routes: Route[] = [
      { kind: 'picker' },
      { kind: 'picker', projectId: 'acme' },
      { kind: 'new', agentId: 'pm' },
      { kind: 'new', agentId: 'pm', projectId: 'acme' },
      { kind: 'conversation', id: 'c-1' },
      { kind: 'conversation', id: 'c 1', projectId: 'my.app' },
    ];
    for (const r of routes) expect(parseRoute(routeHref(r).slice(1))).toEqual(r);
    expect(routeHref({ kind: 'conversation', id: 'c-1' })).toBe('/?c=c-1');
    expect(routeHref({ kind: 'picker', projectId: 'acme' })).toBe('/?p=acme');
    expect(parseRoute('?c=x&p=acme')).toEqual({ kind: 'conversation', id: 'x', projectId: 'acme' });
  });
});
