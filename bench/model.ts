/**
 * The benchmark's model: test/scripted-model in its own process (so its work never competes with
 * the bench driver's event loop), answering per "mode" set by the driver, plus a small control
 * server that hands back compact per-request records (the scripted server keeps whole bodies,
 * which at thousands of requests would cost the model process more than it measures).
 *
 *   node --import tsx bench/model.ts --ttft-ms 20 --token-delay-ms 1
 * prints {"event":"bench-model.ready","url":".../v1","control":"http://..."} once listening.
 *
 * Control: POST /mode {mode, count?}; GET /collect (records since the last collect, then forgets them);
 * GET /last-body (the newest chat request body, to replay it straight at the model). With
 * `count`, each record also holds the request's tokens as lib/engine/context counts them (cl100k_base,
 * the vocabulary the server uses for a model it does not know), message by message.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { countRequest, loadTokenizer, type Tokenizer } from '../lib/engine/context';
import type { ToolDefinition } from '../lib/model/llm/types';
import { currentTurn, lastUserText, reply, startScriptedModel, summariseToolResults } from '../test/scripted-model';
import type { ChatMessage, ChatRequestBody, RecordedRequest, Reply, ScriptFn } from '../test/scripted-model';

export type BenchMode = 'plain' | 'tools3' | 'workflow' | 'session';

/** A request's tokens, counted as the server counts them. */
export interface RequestTokenCount {
  total: number;
  tools: number;
  /** Per message, in order. */
  messages: number[];
  /** Per message, a short hash of its JSON: where two requests stop being the same. */
  keys: string[];
  toolsKey: string;
}

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
  /** Set while counting is on (POST /mode {count: true}). */
  tokens?: RequestTokenCount;
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
let counting = false;
let tokenizer: Tokenizer | null = null;

/**
 * The document of a BMAD workflow session so far: one section per answer. The model saves it
 * whole after every answer (save_output), as BMAD's template-output steps do.
 */
export function sessionDocument(answers: number): string {
  const sections = Array.from({ length: answers }, (_, i) =>
    `## Section ${i + 1}\n\n${`Answer ${i + 1} says that busy parents lose school forms in email and paper piles; the product collects them in one place and reminds them before each deadline. `.repeat(3)}`,
  );
  return `# Product brief\n\n${sections.join('\n\n')}\n`;
}
export const SESSION_QUESTION = (n: number) =>
  `Thanks, I added that to the brief as section ${n}. Next question: what else should the brief say about who uses the product, what they do today, and how you would measure that it works for them?`;
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
    case 'session': {
      // The first turn is the workflow start (its result is already there): ask. Each answer
      // after it: save the brief so far, then ask the next question.
      const n = /^Answer (\d+)/.exec(lastUserText(body))?.[1];
      if (!n) return reply.text(FIRST_QUESTION);
      if (hasToolResults(body)) return reply.text(SESSION_QUESTION(Number(n)));
      return reply.toolCalls([{ name: 'save_output', arguments: { file_path: 'product-brief.md', content: sessionDocument(Number(n)) } }]);
    }
  }
};

function countTokens(body: ChatRequestBody): RequestTokenCount | undefined {
  if (!counting || !tokenizer) return undefined;
  const messages = (body.messages ?? []) as unknown as ChatCompletionMessageParam[];
  const tools = (body.tools ?? []) as unknown as ToolDefinition[];
  const c = countRequest(tokenizer, { messages, tools });
  const key = (v: unknown) => createHash('sha1').update(JSON.stringify(v)).digest('base64').slice(0, 12);
  return { total: c.total, tools: c.tools, messages: c.messages, keys: messages.map(key), toolsKey: key(tools) };
}

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
    ...(counting ? { tokens: countTokens(body) } : {}),
  };
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const n = i > 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

async function main() {
  chunkSize = arg('chunk-size', 8);
  tokenizer = await loadTokenizer('cl100k_base');
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
        const asked = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as { mode?: BenchMode; count?: boolean };
        const next = asked.mode;
        if (next !== 'plain' && next !== 'tools3' && next !== 'workflow' && next !== 'session') return send(400, { error: 'mode: plain | tools3 | workflow | session' });
        // Records made so far are summarised under the old setting.
        compact();
        mode = next;
        counting = asked.count === true;
        return send(200, { mode, count: counting });
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
