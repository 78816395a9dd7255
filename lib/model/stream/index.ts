import type { TurnEvent, StopReason } from '../loop/types';
import { costOf, type ModelPrice } from '../../core/models';
import type { ToolResult } from '../../core/results';

/** The profile a turn runs on, told to the client with the conversation. */
export interface StreamModel {
  profile: string;
  model: string;
  price?: ModelPrice;
}

/** Headers of the AI SDK UI message stream protocol v1, so `useChat` can consume it. */
export const UI_STREAM_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
  'x-vercel-ai-ui-message-stream': 'v1',
};

export type UiChunk = Record<string, unknown> & { type: string };

export function sse(chunk: UiChunk | '[DONE]'): string {
  return `data: ${chunk === '[DONE]' ? chunk : JSON.stringify(chunk)}\n\n`;
}

function errorText(result: ToolResult): string | null {
  if (result.ok) return null;
  return `${result.error.code}: ${result.error.message}`;
}

/**
 * Turns the events of one turn into UI message stream chunks. Stateful: it opens and closes
 * text parts around tool calls so text never runs into a tool part.
 */
export class UiStreamEncoder {
  private textId: string | null = null;
  private textCount = 0;
  private stepOpen = false;

  constructor(
    private readonly messageId: string,
    private readonly model?: StreamModel,
  ) {}

  begin(conversationId: string, userMessageId?: string): UiChunk[] {
    const m = this.model;
    return [
      { type: 'start', messageId: this.messageId },
      { type: 'data-conversation', data: { conversationId, ...(m ? { profile: m.profile, model: m.model } : {}) } },
      // The stored id of the message this turn answers: what an edit of it names later.
      ...(userMessageId ? [{ type: 'data-user-message', data: { id: userMessageId }, transient: true }] : []),
    ];
  }

  private closeText(out: UiChunk[]) {
    if (this.textId) {
      out.push({ type: 'text-end', id: this.textId });
      this.textId = null;
    }
  }

  private openStep(out: UiChunk[]) {
    if (!this.stepOpen) {
      out.push({ type: 'start-step' });
      this.stepOpen = true;
    }
  }

  private closeStep(out: UiChunk[]) {
    this.closeText(out);
    if (this.stepOpen) {
      out.push({ type: 'finish-step' });
      this.stepOpen = false;
    }
  }

  encode(event: TurnEvent): UiChunk[] {
    const out: UiChunk[] = [];
    switch (event.type) {
      case 'step-start':
        this.closeStep(out);
        this.openStep(out);
        break;
      case 'text-delta':
        if (!event.delta) break;
        this.openStep(out);
        if (!this.textId) {
          this.textId = `${this.messageId}-t${this.textCount++}`;
          out.push({ type: 'text-start', id: this.textId });
        }
        out.push({ type: 'text-delta', id: this.textId, delta: event.delta });
        break;
      case 'tool-call':
        this.openStep(out);
        this.closeText(out);
        out.push({
          type: 'tool-input-available',
          toolCallId: event.call.id,
          toolName: event.call.name,
          input: event.input,
          dynamic: true,
        });
        break;
      case 'tool-result': {
        const err = errorText(event.result);
        out.push(
          err === null
            ? { type: 'tool-output-available', toolCallId: event.call.id, output: event.result, dynamic: true }
            : { type: 'tool-output-error', toolCallId: event.call.id, errorText: err, dynamic: true },
        );
        break;
      }
      case 'step-finish':
        this.closeStep(out);
        break;
      case 'assistant-message':
        break;
      case 'subagent-tool': {
        // A data part rather than a tool part: useChat would list a nested call as the turn's own.
        // The same id again updates the part in place, so a call shows running, then its outcome.
        const err = event.result ? errorText(event.result) : null;
        out.push({
          type: 'data-subagent',
          id: `${event.parentToolCallId}:${event.seq}`,
          data: {
            parentToolCallId: event.parentToolCallId,
            toolCallId: event.call.id,
            toolName: event.call.name,
            input: event.input,
            step: event.step,
            state: !event.result ? 'running' : err === null ? 'done' : 'failed',
            ...(err !== null ? { errorText: err } : {}),
          },
        });
        break;
      }
      case 'compaction':
        out.push({ type: 'data-compaction', data: { ...event.report } });
        break;
      case 'finish': {
        this.closeStep(out);
        const cost = costOf(this.model?.price, event.usage);
        out.push({ type: 'data-usage', data: { ...event.usage, cachedTokens: event.usage.cachedTokens ?? 0, ...(cost !== undefined ? { cost } : {}), iterations: event.iterations } });
        out.push({ type: 'data-stop', data: { stopReason: event.stopReason } });
        out.push({ type: 'finish', finishReason: finishReason(event.stopReason) });
        break;
      }
      case 'error':
        this.closeStep(out);
        // The text is the message alone, as in a JSON error body; the code comes beside it, as
        // `code` does there, in a data part that precedes the error (a reader stops at the error).
        out.push({ type: 'data-error', data: { code: event.error.code, message: event.error.message }, transient: true });
        out.push({ type: 'error', errorText: event.error.message });
        break;
    }
    return out;
  }
}

function finishReason(stop: StopReason): string {
  if (stop === 'max_iterations') return 'length';
  if (stop === 'aborted') return 'other';
  return 'stop';
}
