import type { AgentCommand } from './parser';

export interface CommandMatch {
  command: AgentCommand;
  /** 0-based position in the agent's command list. */
  index: number;
  /** Text after the command (`*plan a todo app` → `a todo app`); absent when there is none. */
  userInput?: string;
}

/**
 * Recognises a command in a user message: `*plan`, `/plan`, `*plan some text`, the bare name
 * `plan`, or a menu number like `2` (1-based). Case-insensitive.
 *
 * A bare name or a number only counts when it is the whole message: "plan my trip" or "2 users"
 * are ordinary answers, and mistaking them for commands would derail a running workflow.
 */
export function matchCommand(
  agent: { commands: readonly AgentCommand[] } | null | undefined,
  message: string,
): CommandMatch | null {
  const commands = agent?.commands;
  if (!commands?.length || typeof message !== 'string') return null;
  const text = message.trim();
  if (!text) return null;

  const num = /^#?(\d{1,4})\.?$/.exec(text);
  if (num) {
    const index = Number(num[1]) - 1;
    return index >= 0 && index < commands.length ? { command: commands[index], index } : null;
  }

  const prefixed = text[0] === '*' || text[0] === '/';
  const m = /^[*/]?([^\s]+)(?:\s+([\s\S]*))?$/.exec(text);
  if (!m) return null;
  const name = m[1].replace(/^[*/]+/, '').toLowerCase();
  const rest = (m[2] ?? '').trim();
  if (!name || (!prefixed && rest)) return null;

  const index = commands.findIndex((c) => c.cmd.slice(1).toLowerCase() === name);
  if (index < 0) return null;
  const found: CommandMatch = { command: commands[index], index };
  if (rest) found.userInput = rest;
  return found;
}
