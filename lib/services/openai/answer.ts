import type { ToolCall } from '../../model/llm/types';
import type { TurnEvent } from '../../engine/chat';
import type { ToolResult } from '../../core/results';

/**
 * A turn's answer as one text, the way an OpenAI client receives it: the agent's words, and each
 * tool call where it happened as the block Open WebUI draws for its own tool calls
 * (`serialize_content_blocks` in its backend/open_webui/utils/middleware.py):
 *
 *   <details type="tool_calls" done="true" id="…" name="…" arguments="…" result="…" files="" embeds="">
 *   <summary>Tool Executed</summary>
 *   save_output: ok · {"path":"…","bytes":1234}
 *   </details>
 *
 * Attribute values are HTML-escaped (`arguments` the call's JSON arguments, `result` a JSON
 * string of the short result, as Open WebUI writes it). Open WebUI draws the block from its
 * attributes and never shows the line inside; a client that shows HTML as it is, or drops the
 * tags, still reads "Tool Executed" and that line. A blank line before and after keeps the block
 * one HTML block in Markdown, so the words around it stay Markdown.
 */

/** A string argument or result field past this many characters is cut: the block says what was done, not the whole document. */
const FIELD_CHARS = 200;
/** The result line past this many characters is cut. */
const RESULT_CHARS = 400;

/** Python's html.escape(…, quote=True), which Open WebUI uses for these attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#x27;'));
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}

/** A value with its long strings cut, at any depth (arrays and objects kept as they are otherwise). */
function shortened(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return cut(value, FIELD_CHARS);
  if (depth > 4 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.slice(0, 20).map((v) => shortened(v, depth + 1));
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, shortened(v, depth + 1)]));
}

/** The call's arguments as JSON, long strings cut; arguments that are not JSON are shown as the text they are, cut. */
function argumentsText(call: ToolCall): string {
  try {
    return JSON.stringify(shortened(JSON.parse(call.arguments || '{}')));
  } catch {
    return JSON.stringify(cut(call.arguments, FIELD_CHARS));
  }
}

/** "ok · {…}" or "failed · CODE: message": what a person needs to see of a result. */
export function shortResult(result: ToolResult): string {
  if (!result.ok) return cut(`failed · ${result.error.code}: ${result.error.message}`, RESULT_CHARS).replace(/\s+/g, ' ');
  const { ok: _ok, ...rest } = result;
  const fields = Object.keys(rest).length ? ` · ${JSON.stringify(shortened(rest))}` : '';
  return cut(`ok${fields}`, RESULT_CHARS).replace(/\s+/g, ' ');
}

export function toolBlock(call: ToolCall, result: ToolResult): string {
  const short = shortResult(result);
  const attrs = [
    ['type', 'tool_calls'],
    ['done', 'true'],
    ['id', call.id],
    ['name', call.name],
    ['arguments', argumentsText(call)],
    ['result', JSON.stringify(short)],
    ['files', ''],
    ['embeds', ''],
  ]
    .map(([k, v]) => `${k}="${escapeHtml(v!)}"`)
    .join(' ');
  return `<details ${attrs}>\n<summary>Tool Executed</summary>\n${escapeHtml(`${call.name}: ${short}`)}\n</details>\n\n`;
}

/** Builds the answer text from a turn's events, piece by piece (each piece is what a stream sends next). */
export class AnswerText {
  content = '';

  /** The text this event adds to the answer ('' for none). */
  push(event: TurnEvent): string {
    let piece = '';
    if (event.type === 'text-delta') piece = event.delta;
    else if (event.type === 'tool-result') {
      const c = this.content;
      const gap = !c || c.endsWith('\n\n') ? '' : c.endsWith('\n') ? '\n' : '\n\n';
      piece = gap + toolBlock(event.call, event.result);
    }
    this.content += piece;
    return piece;
  }
}
