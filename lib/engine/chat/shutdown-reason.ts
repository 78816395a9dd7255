/**
 * The abort reason of turns the server ends because it is going down (SIGTERM): such a turn is
 * stored as interrupted, where any other abort is the user's Stop. A leaf module, so the shutdown
 * handler can name it without loading the chat service. Kept on globalThis: the production build
 * bundles the instrumentation hook (which aborts) apart from the route handlers (which compare),
 * and each bundle would otherwise make an object of its own.
 */
const KEY = Symbol.for('bmad-orchestrator.serverShutdown');
const holder = globalThis as unknown as Record<symbol, Error | undefined>;

export const SERVER_SHUTDOWN: Error = (holder[KEY] ??= Object.assign(new Error('The server is shutting down.'), { name: 'AbortError' }));
