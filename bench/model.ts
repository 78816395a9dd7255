/**
 * The benchmark's model: test/scripted-model in its own process (so its work never competes with
 * the bench driver's event loop), answering per "mode" set by the driver, plus a small control
 * server that hands back compact per-request records (the scripted server keeps whole bodies,
 * which at thousands of requests would cost the model process more than it measures).
 *
 *   node --import tsx bench/model.ts --ttft-ms 20 --token-delay-ms 1
 * prints {"event":"bench-model.ready","url":".../v1","control":"http://..."} once listening.
 *
 * Control: POST /mode {mode}; GET /collect (records since the last collect, then forgets them);
 * GET /last-body (the newest chat request body, to replay it straight at the model).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { currentTurn, lastUserText, reply, startScriptedModel, summariseToolResults } from '../test/scripted-model';
import type { ChatMessage, ChatRequestBody, RecordedRequest, Reply, ScriptFn } from '../test/scripted-model';

export type BenchMode = 'plain' | 'tools3' | 'workflow';

export interface ModelRecord {
  /** `bench#<tag>` from the last user message, or '' when none. */
  tag: string;
  status: number;
  serviceMs: number;
  scriptedDelayMs: number;
  /** JSON.stringify(messages).length — the scripted model's own usage estimate is ceil(this / 4). */
  messageChars: number;
  /** JSON.stringify(tools).length. */
  toolSchemaChars: number;
  messages: number;
  /** Length of the first (system) message. */
  systemChars: number;
  /** Where the server's critical context starts inside the system message (-1: none). */
  criticalAt: number;
  /** Chars of tool results in the request; of those before the last user message (re-sent history); of exact duplicates. */
  toolResultChars: number;
  historyToolResultChars: number;
  duplicateToolResultChars: number;
}

/** First question of the sample product-brief workflow, the way a model would ask it. */
export const FIRST_QUESTION =
  "Let's write your product brief. First question: what problem does your product solve, and for whom? Describe the people who have it and what they do about it today.";
const NEXT_QUESTION =
  'Thanks, that is clear. Next question: how will you know the product works? Name one or two measurable goals and how you would check them.';
export const PLAIN_ANSWER =
  'Here is a short answer from the benchmark model. It is long enough to arrive as about thirty stream deltas, ' +
  'like a real model answering one or two sentences, and it asks for no tools at all. That is the plain turn.';

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

function hasToolResults(body: ChatRequestBody): boolean {
  return currentTurn(body).some((m) => m.role === 'tool');
}

function calledBefore(body: ChatRequestBody, name: string): boolean {
  return (body.messages ?? []).some((m) => (m.tool_calls ?? []).some((c) => c.function?.name === name));
}

let mode: BenchMode = 'plain';
/** Characters per streamed text delta (the scripted model's default is 8). */
let chunkSize = 8;

const script: ScriptFn = ({ body }): Reply => {
  switch (mode) {
    case 'plain':
      if (hasToolResults(body)) return reply.text(`Tool results: ${summariseToolResults(body).join(', ')}.`);
      return reply.text(PLAIN_ANSWER, { chunkSize });
    case 'tools3':
      if (hasToolResults(body)) return reply.text(`Done: ${summariseToolResults(body).join(', ')}. The bundle has a product-brief workflow.`);
      return reply.toolCalls([
        { name: 'read_file', arguments: { file_path: '{bundle-root}/bundle.yaml' } },
        { name: 'list_files', arguments: { path: '{bundle-root}' } },
        { name: 'search_files', arguments: { path: '{bundle-root}', pattern: 'brief' } },
      ]);
    case 'workflow':
      // With the shortcut the workflow result is already in this turn; without it, the model has
      // to ask for it first (one more round trip), as it would on any other runner.
      if (hasToolResults(body)) return reply.text(FIRST_QUESTION);
      if (!calledBefore(body, 'execute_workflow')) {
        return reply.toolCalls([{ name: 'execute_workflow', arguments: { workflow_path: '{bundle-root}/workflows/product-brief/workflow.yaml' } }]);
      }
      return reply.text(NEXT_QUESTION);
  }
};

function summarise(r: RecordedRequest): ModelRecord {
  const body = r.body ?? {};
  const messages: ChatMessage[] = body.messages ?? [];
  const tag = /bench#(\S+)/.exec(lastUserText(body))?.[1] ?? '';
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  let toolResultChars = 0;
  let historyToolResultChars = 0;
  let duplicateToolResultChars = 0;
  const seen = new Set<string>();
  messages.forEach((m, i) => {
    if (m.role !== 'tool') return;
    const t = textOf(m.content);
    toolResultChars += t.length;
    if (i < lastUser) historyToolResultChars += t.length;
    if (seen.has(t)) duplicateToolResultChars += t.length;
    seen.add(t);
  });
  const system = messages[0]?.role === 'system' ? textOf(messages[0].content) : '';
  return {
    tag,
    status: r.status ?? 0,
    serviceMs: r.serviceMs ?? 0,
    scriptedDelayMs: r.scriptedDelayMs,
    messageChars: JSON.stringify(messages).length,
    toolSchemaChars: JSON.stringify(body.tools ?? []).length,
    messages: messages.length,
    systemChars: system.length,
    criticalAt: system.indexOf('## Critical context'),
    toolResultChars,
    historyToolResultChars,
    duplicateToolResultChars,
  };
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const n = i > 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

async function main() {
  chunkSize = arg('chunk-size', 8);
  const model = await startScriptedModel({
    latencyMs: arg('ttft-ms', 20),
    tokenDelayMs: arg('token-delay-ms', 1),
    script,
    maxRecorded: Number.MAX_SAFE_INTEGER,
  });
  const records: ModelRecord[] = [];
  let lastBody: ChatRequestBody | null = null;
  const compact = () => {
    const live = model.requests;
    let w = 0;
    for (const r of live) {
      if (r.done && r.path === '/v1/chat/completions') {
        records.push(summarise(r));
        if (r.body) lastBody = r.body;
      } else if (!r.done) live[w++] = r;
    }
    live.length = w;
  };
  setInterval(compact, 100);

  const control = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const send = (status: number, value: unknown) => {
        const text = JSON.stringify(value);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      if (req.method === 'POST' && req.url === '/mode') {
        const next = (JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as { mode?: BenchMode }).mode;
        if (next !== 'plain' && next !== 'tools3' && next !== 'workflow') return send(400, { error: 'mode: plain | tools3 | workflow' });
        mode = next;
        return send(200, { mode });
      }
      if (req.url === '/collect') {
        compact();
        const out = records.splice(0, records.length);
        return send(200, { records: out, pending: model.requests.length });
      }
      if (req.url === '/last-body') {
        compact();
        return send(200, { body: lastBody });
      }
      send(404, { error: 'unknown route' });
    });
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
  const { port } = control.address() as AddressInfo;
  process.stdout.write(JSON.stringify({ event: 'bench-model.ready', url: model.url, control: `http://127.0.0.1:${port}` }) + '\n');
  const stop = () => {
    control.close();
    model.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`bench-model: ${(e as Error).stack}\n`);
    process.exit(1);
  });
}
