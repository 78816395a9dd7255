/**
 * Context figures: tokens per workflow start, tokens over a 20-turn workflow session, how much of
 * each request repeats the previous one (what a provider's prompt cache can serve), and the
 * largest request on a profile with an 8 k window. Tokens are counted at the model server with
 * lib/engine/context's counter (cl100k_base, the vocabulary the server uses for a model it does not know).
 */
import fs from 'node:fs';
import path from 'node:path';
import { getJson, post, postJson } from './client';
import type { ModelRecord, RequestTokenCount } from './model';
import { startApp, type AppServer, type BenchModel, type Folders } from './proc';
import { FRAMING } from '../lib/engine/context';

export const SMALL_WINDOW = 8192;
export const SMALL_MAX_OUTPUT = 1024;

export interface SessionFigures {
  profile: string;
  contextWindow: number;
  turns: number;
  requests: number;
  errors: number;
  firstError?: string;
  /** Σ prompt tokens of every request of the session (what the provider is sent, and bills). */
  totalTokens: number;
  largestRequest: number;
  lastRequest: number;
  /** Requests whose messages start with the whole previous request. */
  exactExtensions: number;
  compactions: number;
  /** Share of each request's tokens that repeat the previous request's prefix (tools + leading equal messages). */
  prefixShare: { mean: number; median: number; min: number; atCompaction: number[] };
  /** Σ of those repeated tokens: what a prompt cache could serve. */
  repeatedTokens: number;
}

export interface ContextFigures {
  /** `*plan` with the command shortcut: the one request up to the first question. */
  workflowStart: { requests: number; tokens: number; charsOver4: number; systemPrompt: number; toolSchemas: number; workflowResult: number };
  roomy: SessionFigures;
  small: SessionFigures;
}

const MODELS_FILE = (url: string) => `# bench: one endpoint, two windows
default: roomy
profiles:
  roomy: { baseURL: ${url}, model: scripted, contextWindow: 128000, maxOutputTokens: 4096 }
  small: { baseURL: ${url}, model: scripted, contextWindow: ${SMALL_WINDOW}, maxOutputTokens: ${SMALL_MAX_OUTPUT} }
`;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};

/** Tokens of `next` that repeat `prev` from the start: the tool schemas, then every leading message that is the same. */
function repeated(prev: RequestTokenCount, next: RequestTokenCount): { tokens: number; extension: boolean } {
  if (prev.toolsKey !== next.toolsKey) return { tokens: 0, extension: false };
  let i = 0;
  while (i < prev.keys.length && i < next.keys.length && prev.keys[i] === next.keys[i]) i++;
  const tokens = next.tools + next.messages.slice(0, i).reduce((a, b) => a + b, 0);
  return { tokens, extension: i === prev.keys.length };
}

async function session(app: AppServer, model: BenchModel, profile: string, turns: number): Promise<{ figures: SessionFigures; first: ModelRecord | undefined }> {
  await postJson(`${model.control}/mode`, { mode: 'session', count: true });
  await getJson(`${model.control}/collect`);
  let errors = 0;
  let firstError: string | undefined;
  let compactions = 0;
  const records: ModelRecord[] = [];
  const collect = async () => {
    await new Promise((r) => setTimeout(r, 30));
    records.push(...(await getJson<{ records: ModelRecord[] }>(`${model.control}/collect`)).records);
  };
  const turn = async (message: string, conversationId?: string) => {
    const t = await post(app.url, '/api/chat', { agentId: 'product-lead', message, stream: true, model: profile, ...(conversationId ? { conversationId } : {}) }, { keepBody: true });
    if (t.error) {
      errors++;
      firstError ??= t.error;
    }
    await collect();
    compactions += (t.body ?? '').split('"type":"data-compaction"').length - 1;
    return t;
  };
  const start = await turn('*plan');
  const first = records[0];
  for (let i = 1; i < turns; i++) await turn(`Answer ${i}: busy parents lose school forms in email and paper piles, and want one place that reminds them before each deadline.`, start.conversationId);

  const counts = records.map((r) => r.tokens!).filter(Boolean);
  const shares: number[] = [];
  const atCompaction: number[] = [];
  let exact = 0;
  let repeatedTokens = 0;
  for (let k = 1; k < counts.length; k++) {
    const r = repeated(counts[k - 1], counts[k]);
    const share = r.tokens / counts[k].total;
    shares.push(share);
    repeatedTokens += r.tokens;
    if (r.extension) exact++;
    else atCompaction.push(Math.round(share * 1000) / 1000);
  }
  const totals = counts.map((c) => c.total);
  return {
    first,
    figures: {
      profile,
      contextWindow: profile === 'small' ? SMALL_WINDOW : 128000,
      turns,
      requests: counts.length,
      errors,
      firstError,
      totalTokens: totals.reduce((a, b) => a + b, 0),
      largestRequest: Math.max(...totals),
      lastRequest: totals[totals.length - 1] ?? 0,
      exactExtensions: exact,
      compactions,
      prefixShare: { mean: shares.reduce((a, b) => a + b, 0) / Math.max(1, shares.length), median: median(shares), min: Math.min(...shares), atCompaction },
      repeatedTokens,
    },
  };
}

export async function contextFigures(appDir: string, folders: Folders, model: BenchModel, env: Record<string, string>, turns: number, say: (s: string) => void): Promise<ContextFigures> {
  const file = path.join(folders.root, 'models.yaml');
  fs.writeFileSync(file, MODELS_FILE(model.url));
  const app = await startApp(appDir, folders, { ...env, MODELS_FILE: file });
  try {
    const roomy = await session(app, model, 'roomy', turns);
    say(`context: roomy ${roomy.figures.requests} requests, ${roomy.figures.totalTokens} tokens, largest ${roomy.figures.largestRequest}, errors ${roomy.figures.errors}`);
    const small = await session(app, model, 'small', turns);
    say(`context: small (8 k) ${small.figures.requests} requests, ${small.figures.totalTokens} tokens, largest ${small.figures.largestRequest}, ${small.figures.compactions} compactions, errors ${small.figures.errors}${small.figures.firstError ? ` (${small.figures.firstError.slice(0, 300)})` : ''}`);
    const f = roomy.first!;
    const t = f.tokens!;
    // [0] system prompt, [1] *plan, [2] the server's execute_workflow call, [3] its result.
    const workflowStart = {
      requests: 1,
      tokens: t.total,
      charsOver4: Math.ceil(f.messageChars / 4) + Math.ceil(f.toolSchemaChars / 4),
      systemPrompt: t.messages[0] ?? 0,
      toolSchemas: t.tools,
      workflowResult: t.messages[3] ?? 0,
    };
    return { workflowStart, roomy: roomy.figures, small: small.figures };
  } finally {
    await app.stop();
  }
}

export function contextMarkdown(c: ContextFigures): string {
  const n = (x: number) => Math.round(x).toLocaleString('en');
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const w = c.workflowStart;
  const row = (s: SessionFigures) =>
    `| ${s.profile} (${n(s.contextWindow)} window) | ${s.requests} | ${n(s.totalTokens)} | ${n(s.largestRequest)} | ${n(s.lastRequest)} | ${s.compactions} | ${s.exactExtensions} of ${s.requests - 1} | ${pct(s.prefixShare.mean)} / ${pct(s.prefixShare.median)} / ${pct(s.prefixShare.min)} | ${n(s.repeatedTokens)} | ${s.errors} |`;
  return [
    `#### 7. Context: tokens, prefix reuse, an 8 k window`,
    `Workflow start (\`*plan\` with the command shortcut, one request to the first question): **${n(w.tokens)} tokens** counted with cl100k_base and the framing of lib/engine/context (${FRAMING.perMessage} per message, ${FRAMING.toolsPreamble} around the schemas) — system prompt ${n(w.systemPrompt)}, tool schemas ${n(w.toolSchemas)}, workflow result ${n(w.workflowResult)}; the old estimate (characters ÷ 4 of the JSON) said ${n(w.charsOver4)}.`,
    `A ${c.roomy.turns}-turn workflow session (\`*plan\`, then answers; after each answer the model saves the whole brief so far with save_output, then asks the next question):`,
    [
      '| profile | requests | tokens sent, Σ | largest request | last request | compactions | requests extending the previous whole | prefix share mean / median / min | repeated tokens Σ | errors |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      row(c.roomy),
      row(c.small),
    ].join('\n'),
    `Largest request with the 8 k window: **${n(c.small.largestRequest)} tokens** (limit ${n(SMALL_WINDOW - SMALL_MAX_OUTPUT)} = ${n(SMALL_WINDOW)} − ${n(SMALL_MAX_OUTPUT)} kept for the answer)${c.small.largestRequest <= SMALL_WINDOW ? '' : ' — OVER THE WINDOW'}. Prefix share at the requests that followed a compaction: ${c.small.prefixShare.atCompaction.map(pct).join(', ') || 'none'}.`,
  ].join('\n\n');
}
