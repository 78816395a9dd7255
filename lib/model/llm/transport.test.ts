import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { createHttpFetch, nodeBody } from './transport';

let server: http.Server;
let base: string;
const seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
const sockets = new Set<unknown>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
      sockets.add(req.socket);
      if (req.url === '/moved') {
        res.writeHead(307, { location: '/echo' });
        return res.end();
      }
      if (req.url === '/gzip') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
        return res.end(zlib.gzipSync('compressed answer'));
      }
      if (req.url === '/gzip-slow') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
        return res.write(zlib.gzipSync('never finished').subarray(0, 12)); // never ends
      }
      if (req.url === '/empty') {
        res.writeHead(204);
        return res.end();
      }
      if (req.url === '/slow') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
        return; // never ends
      }
      res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': 'application/json', 'x-two': ['a', 'b'] });
      res.end(JSON.stringify({ echo: Buffer.concat(parts).toString('utf8') }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen.length = 0;
  sockets.clear();
});

/** Settles on 'close' whatever came before it (events.once would reject on an 'error'). */
const closed = (s: NodeJS.EventEmitter) => new Promise<void>((r) => s.once('close', () => r()));

describe('createHttpFetch', () => {
  const f = createHttpFetch();

  it('sends method, headers and body, and answers like fetch (status, headers, text)', async () => {
    const res = await f(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: '{"a":1}' });
    expect(res.status).toBe(200);
    expect(res.ok).toBe(true);
    expect(res.headers.get('x-two')).toBe('a, b');
    expect(await res.json()).toEqual({ echo: '{"a":1}' });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/echo', body: '{"a":1}' });
    expect(seen[0].headers).toMatchObject({ authorization: 'Bearer k', 'content-length': '7' });
  });

  it('keeps the connection for the next request', async () => {
    await (await f(`${base}/echo`, { method: 'POST', body: 'one' })).text();
    await (await f(`${base}/echo`, { method: 'POST', body: 'two' })).text();
    expect(seen).toHaveLength(2);
    expect(sockets.size).toBe(1);
  });

  it('exposes the Node stream underneath, so a reader can skip web streams', async () => {
    const res = await f(`${base}/echo`, { method: 'POST', body: 'node' });
    const node = nodeBody(res)!.stream;
    expect(node).toBeDefined();
    let text = '';
    for await (const c of node) text += String(c);
    expect(JSON.parse(text)).toEqual({ echo: 'node' });
    expect(nodeBody(new Response('x'))).toBeUndefined();
  });

  it('gives error statuses with their body (the SDK reads it for the message)', async () => {
    const res = await f(`${base}/missing`, { method: 'POST', body: 'x' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ echo: 'x' });
  });

  it('follows a 307 with the same method and body', async () => {
    const res = await f(`${base}/moved`, { method: 'POST', body: 'again' });
    expect(await res.json()).toEqual({ echo: 'again' });
    expect(seen.map((s) => [s.method, s.url, s.body])).toEqual([
      ['POST', '/moved', 'again'],
      ['POST', '/echo', 'again'],
    ]);
  });

  it('decompresses a gzip body and handles a bodiless status', async () => {
    expect(await (await f(`${base}/gzip`)).text()).toBe('compressed answer');
    const empty = await f(`${base}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it('gives the connection of a bodiless answer back to the pool', async () => {
    await f(`${base}/empty`);
    await (await f(`${base}/echo`, { method: 'POST', body: 'after' })).text();
    expect(sockets.size).toBe(1);
  });

  it('a body broken before anyone reads it fails the read, and never crashes the process', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      const gz = new AbortController();
      const compressed = await f(`${base}/gzip-slow`, { signal: gz.signal });
      const gzClosed = closed(nodeBody(compressed)!.stream);
      gz.abort();
      await gzClosed;
      await expect(compressed.text()).rejects.toBeDefined();

      const cut = await f(`${base}/slow`);
      const cutClosed = closed(nodeBody(cut)!.stream);
      nodeBody(cut)!.stream.destroy();
      await cutClosed;
      expect(nodeBody(cut)!.failure()).toBeInstanceOf(Error);
      await expect(cut.text()).rejects.toBeDefined();
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('rejects network failures as TypeError with the code in its cause, like fetch', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const e = (await f(`http://127.0.0.1:${port}/x`).catch((x: unknown) => x)) as TypeError & { cause: { code: string } };
    expect(e).toBeInstanceOf(TypeError);
    expect(e.cause.code).toBe('ECONNREFUSED');
  });

  it('aborts a request in flight with an AbortError, and cuts a body being read', async () => {
    const before = new AbortController();
    before.abort();
    await expect(f(`${base}/echo`, { signal: before.signal })).rejects.toMatchObject({ name: 'AbortError' });

    const during = new AbortController();
    const res = await f(`${base}/slow`, { signal: during.signal });
    const node = nodeBody(res)!.stream;
    const first = await new Promise<string>((r) => node.once('data', (c) => r(String(c))));
    expect(first).toBe('data: first\n\n');
    const closed = new Promise<void>((r) => node.once('close', () => r()));
    during.abort();
    await closed;
    expect(node.destroyed).toBe(true);
  });
});
