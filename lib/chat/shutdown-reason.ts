/**
 * The abort reason of turns the server ends because it is going down (SIGTERM): such a turn is
 * stored as interrupted, where any other abort is the user's Stop. A leaf module, so the shutdown
 * handler can name it without loading the chat service.
 */
export const SERVER_SHUTDOWN: Error = Object.assign(new Error('The server is shutting down.'), { name: 'AbortError' });
