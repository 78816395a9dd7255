import type {
  ChatMessage,
  ChatRequestBody,
  ErrorReply,
  HangReply,
  MessageReply,
  Reply,
  ScriptFn,
  ScriptedToolCall,
} from './types';

/** Builders so scripts read like the conversation they stage. */
export const reply = {
  text(text: string, extra: Partial<Omit<MessageReply, 'type' | 'text'>> = {}): MessageReply {
    return { type: 'message', text, ...extra };
  },
  toolCalls(calls: ScriptedToolCall[], extra: Partial<Omit<MessageReply, 'type' | 'toolCalls'>> = {}): MessageReply {
    return { type: 'message', toolCalls: calls, ...extra };
  },
  error(status: number, extra: Partial<Omit<ErrorReply, 'type' | 'status'>> = {}): ErrorReply {
    return { type: 'error', status, ...extra };
  },
  hang(): HangReply {
    return { type: 'hang' };
  },
};

export const GREETING = 'Hello from the scripted model.';

/** Messages after the last user message: what happened so far in the current turn. */
export function currentTurn(body: ChatRequestBody): ChatMessage[] {
  const messages = body.messages ?? [];
  let i = messages.length - 1;
  while (i >= 0 && messages[i].role !== 'user') i--;
  return messages.slice(i + 1);
}

export function lastUserText(body: ChatRequestBody): string {
  const messages = body.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') return textOf(messages[i].content);
  }
  return '';
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  }
  return '';
}

export function toolNames(body: ChatRequestBody): string[] {
  return (body.tools ?? []).map((t) => t.function?.name).filter((n): n is string => typeof n === 'string');
}

/**
 * One line per tool result of the current turn, e.g. "list_files ok" or "read_file failed (ENOENT)".
 * Results are JSON `{ ok, error?: { code } }` as the app's tools return them; anything else is "done".
 */
export function summariseToolResults(body: ChatRequestBody): string[] {
  const turn = currentTurn(body);
  const names = new Map<string, string>();
  for (const m of turn) for (const c of m.tool_calls ?? []) if (c.id) names.set(c.id, c.function?.name ?? 'unknown');
  return turn
    .filter((m) => m.role === 'tool')
    .map((m) => {
      const name = names.get(m.tool_call_id ?? '') ?? m.name ?? 'unknown';
      let outcome = 'done';
      try {
        const parsed = JSON.parse(textOf(m.content)) as { ok?: boolean; error?: { code?: string } };
        if (parsed.ok === true) outcome = 'ok';
        else if (parsed.ok === false) outcome = `failed (${parsed.error?.code ?? 'error'})`;
      } catch {
        // Non-JSON tool output is still a result; "done" says so without guessing.
      }
      return `${name} ${outcome}`;
    });
}

function hasToolResults(body: ChatRequestBody): boolean {
  return currentTurn(body).some((m) => m.role === 'tool');
}

function answerAfterTools(body: ChatRequestBody): MessageReply {
  return reply.text(`Tool results: ${summariseToolResults(body).join(', ')}. Done.`);
}

/** Calls `calls` once per turn, then summarises; falls back to text when a tool is not offered. */
function toolThenAnswer(calls: ScriptedToolCall[], extra: Partial<MessageReply> = {}): ScriptFn {
  return ({ body }) => {
    if (hasToolResults(body)) return answerAfterTools(body);
    const offered = new Set(toolNames(body));
    const missing = calls.filter((c) => !offered.has(c.name)).map((c) => c.name);
    if (missing.length > 0) return reply.text(`The ${missing.join(', ')} tool is not available.`);
    return { type: 'message', toolCalls: calls, ...extra };
  };
}

const plain: ScriptFn = ({ body }) => {
  if (hasToolResults(body)) return answerAfterTools(body);
  const said = lastUserText(body).replace(/\s+/g, ' ').trim().slice(0, 80);
  return reply.text(said ? `${GREETING} You said: "${said}"` : GREETING);
};

const LOREM =
  'This is a long streamed answer from the scripted model. It arrives token by token so that ' +
  'streaming, stopping and cancellation can be watched and tested. Each word is its own delta, ' +
  'with a pause between them, the way a slow local model would answer on modest hardware. ';

export const NOTE_PATH = 'scripted-note.md';
export const NOTE_CONTENT = '# Scripted note\n\nWritten by the scripted model.\n\n- one\n- two\n';

export const PRD_PATH = '{output_folder}/planning-artifacts/prd.md';
export const PRD_CONTENT = '---\ntitle: Scripted PRD\nstatus: draft\n---\n\n# PRD\n\n## Goals\n\n- Parents find every school form in one place.\n';
export const HEADLESS_QUESTION = 'Who is the primary user of this product?';
/** What a person answers HEADLESS_QUESTION with (POST /api/runs/:id/answer). */
export const HEADLESS_ANSWER = 'Parents of primary-school children; teachers come later.';

/** The parsed result of the current turn's save_output call, or null when there was none. */
function savedPath(body: ChatRequestBody): string | null {
  const turn = currentTurn(body);
  const ids = new Set(turn.flatMap((m) => (m.tool_calls ?? []).filter((c) => c.function?.name === 'save_output').map((c) => c.id)));
  for (const m of turn) {
    if (m.role !== 'tool' || !ids.has(m.tool_call_id)) continue;
    try {
      const r = JSON.parse(textOf(m.content)) as { ok?: boolean; path?: string };
      if (r.ok && typeof r.path === 'string') return r.path;
    } catch {
      // not a result this scenario wrote
    }
  }
  return null;
}

/** A headless run of bmad-prd: save the PRD, then end with the contract's JSON status. */
function headlessPrd(status: 'complete' | 'partial'): ScriptFn {
  return ({ body }) => {
    const saved = savedPath(body);
    if (!saved) {
      if (!toolNames(body).includes('save_output')) return reply.text('The save_output tool is not available.');
      return reply.toolCalls([{ name: 'save_output', arguments: { file_path: PRD_PATH, content: PRD_CONTENT } }]);
    }
    const result = {
      status,
      intent: 'create',
      prd: saved,
      assumptions: ['The product targets parents of school-age children.'],
      open_questions: status === 'partial' ? ['Which pricing tier ships first?'] : [],
    };
    return reply.text(`The PRD is written. {doc_workspace} is bound to the planning artifacts.\n\n\`\`\`json\n${JSON.stringify(result, null, 2)}\n\`\`\``);
  };
}

/**
 * Named behaviours, selectable with the model name `scripted:<name>`, the `x-scripted-scenario`
 * header, or the server's `scenario` option. `error-<status>` works for any status.
 */
export const SCENARIOS: Record<string, ScriptFn> = {
  /** Greets (quoting the user); after tool results, summarises them. */
  plain,
  /** Repeats the last user message verbatim. */
  echo: ({ body }) => reply.text(lastUserText(body) || GREETING),
  /** list_files on the bundle root, then an answer naming the tool. */
  'tool-then-answer': toolThenAnswer([{ name: 'list_files', arguments: { path: '{bundle-root}' } }]),
  /** save_output of a small markdown file, then an answer. */
  'write-file': toolThenAnswer([{ name: 'save_output', arguments: { file_path: NOTE_PATH, content: NOTE_CONTENT } }]),
  /** Two tool calls in one message (list_files and read_file of bundle.yaml), then an answer. */
  'parallel-tools': toolThenAnswer([
    { name: 'list_files', arguments: { path: '{bundle-root}' } },
    { name: 'read_file', arguments: { file_path: '{bundle-root}/bundle.yaml' } },
  ]),
  /** read_file with malformed JSON arguments, then an answer (shows the error reaching the model). */
  'bad-args': toolThenAnswer([{ name: 'read_file', arguments: '{"file_path": ' }]),
  /** A call to a tool that does not exist, then an answer. */
  'unknown-tool': ({ body }) =>
    hasToolResults(body) ? answerAfterTools(body) : reply.toolCalls([{ name: 'no_such_tool', arguments: {} }]),
  /** tool-then-answer through every wire quirk: no ids, no index, finish_reason stop, "" arguments, no usage. */
  quirky: ({ body }) =>
    hasToolResults(body)
      ? reply.text(`Tool results: ${summariseToolResults(body).join(', ')}. Done.`, { usage: false })
      : reply.toolCalls([{ name: 'list_files', arguments: '' }], {
          quirks: { omitIds: true, omitIndex: true },
          finishReason: 'stop',
          usage: false,
        }),
  /**
   * What `npm run smoke` asks of a real model: read the file named in the message with read_file,
   * then answer with what the file says.
   */
  smoke: ({ body }) => {
    const turn = currentTurn(body);
    const result = turn.find((m) => m.role === 'tool');
    if (result) {
      const text = textOf(result.content);
      let content = text;
      try {
        content = String((JSON.parse(text) as { content?: unknown }).content ?? text);
      } catch {
        // keep the raw text
      }
      return reply.text(content.trim());
    }
    const wanted = /file_path\s+"([^"]+)"/.exec(lastUserText(body));
    if (!wanted || !toolNames(body).includes('read_file')) return reply.text('No file to read.');
    return reply.toolCalls([{ name: 'read_file', arguments: { file_path: wanted[1] } }]);
  },
  /**
   * Calls the tool the user names, `call <tool> {json arguments}`, once; then answers with the
   * summary and what the tool returned (its `content` or its error message, cut at 4,000 chars).
   * A tool not offered: the answer lists the offered ones.
   */
  'call-tool': ({ body }) => {
    const result = currentTurn(body).find((m) => m.role === 'tool');
    if (result) {
      const text = textOf(result.content);
      let said = text;
      try {
        const parsed = JSON.parse(text) as { content?: unknown; error?: { message?: unknown } };
        said = String(parsed.content ?? parsed.error?.message ?? text);
      } catch {
        // keep the raw text
      }
      return reply.text(`Tool results: ${summariseToolResults(body).join(', ')}. Result: ${said.slice(0, 4000)}`);
    }
    const wanted = /\bcall\s+([A-Za-z0-9_-]{1,64})(?:\s+(\{[\s\S]*\}))?/.exec(lastUserText(body));
    if (!wanted) return reply.text('Say "call <tool> {arguments}".');
    const offered = toolNames(body);
    if (!offered.includes(wanted[1])) return reply.text(`The ${wanted[1]} tool is not offered. Offered: ${offered.join(', ')}.`);
    return reply.toolCalls([{ name: wanted[1], arguments: wanted[2] ?? '{}' }]);
  },
  /** Calls list_files forever: exercises the step limit. */
  'loop-forever': ({ body }, ctx) => {
    const name = toolNames(body).includes('list_files') ? 'list_files' : toolNames(body)[0];
    if (!name) return reply.text('No tools were offered, so there is nothing to loop on.');
    return reply.toolCalls([{ name, arguments: name === 'list_files' ? { path: '{bundle-root}' } : {} }], {
      text: `Step ${ctx.callIndex + 1}. `,
    });
  },
  /** A long answer, one word per delta, with a pause between words (40 ms unless the server sets one). */
  slow: (_req, ctx) => reply.text(LOREM.repeat(3), { chunkSize: 0, tokenDelayMs: ctx.tokenDelayMs || 40 }),
  /** Never answers. */
  hang: () => reply.hang(),
  /** A headless run that saves the PRD with save_output and ends with a valid `complete` JSON status. */
  'headless-complete': headlessPrd('complete'),
  /** The same, ending `partial` with an open question. */
  'headless-partial': headlessPrd('partial'),
  /** A model that asks a question every time, whatever it is told. */
  'headless-question': () => reply.text(`Before I draft anything I need one answer.\n\n**${HEADLESS_QUESTION}**`),
  /** Asks HEADLESS_QUESTION until a user message holds HEADLESS_ANSWER; then works as headless-complete. */
  'headless-until-answered': (req, ctx) => {
    const answered = (req.body.messages ?? []).some((m) => m.role === 'user' && textOf(m.content).includes(HEADLESS_ANSWER));
    if (!answered) return reply.text(`I need one answer before drafting.\n\n**${HEADLESS_QUESTION}**`);
    return headlessPrd('complete')(req, ctx);
  },
  /** A final answer without any JSON. */
  'headless-no-json': () => reply.text('I drafted the PRD and saved it in the planning artifacts.'),
};

/** Resolves a scenario name, including the `error-<status>` family. */
export function scenarioFor(name: string): ScriptFn | undefined {
  if (SCENARIOS[name]) return SCENARIOS[name];
  const m = /^error-(\d{3})$/.exec(name);
  if (m) {
    const status = Number(m[1]);
    return () => reply.error(status, status === 429 ? { headers: { 'retry-after-ms': '10' } } : {});
  }
  return undefined;
}

export function scenarioNames(): string[] {
  return [...Object.keys(SCENARIOS), 'error-401', 'error-404', 'error-429', 'error-500'];
}

export type { Reply };
