import type { CommandSummary } from '@/types/api';

/** Commands are shown and sent as `*name`, whatever prefix the agent file used. */
export function commandText(cmd: string): string {
  return `*${cmd.trim().replace(/^[*/]+/, '')}`;
}

/** The input is a command being typed: `/` or `*` at the start, no space yet. */
export function commandQuery(input: string): string | null {
  const m = /^[/*](\S*)$/.exec(input);
  return m ? m[1].replace(/^\*+/, '').toLowerCase() : null;
}

export function filterCommands(commands: CommandSummary[], query: string): CommandSummary[] {
  const q = query.toLowerCase();
  if (!q) return commands;
  const name = (c: CommandSummary) => c.cmd.replace(/^[*/]+/, '').toLowerCase();
  const starts = commands.filter((c) => name(c).startsWith(q));
  const contains = commands.filter(
    (c) => !name(c).startsWith(q) && (name(c).includes(q) || c.description.toLowerCase().includes(q)),
  );
  return [...starts, ...contains];
}

/**
 * The command a message runs (`*PRD`, `*prd plant shop`, or a bare code or name), as the server
 * reads it: after `*` or `/` the first word, else only a message that is one word. For telling a
 * broken command apart before it is sent.
 */
export function commandOfMessage(commands: CommandSummary[], text: string): CommandSummary | undefined {
  const trimmed = text.trim();
  const prefixed = /^[*/]\S/.test(trimmed);
  const words = trimmed.replace(/^[*/]+/, '').split(/\s+/);
  if (!words[0] || (!prefixed && words.length > 1)) return undefined;
  const typed = words[0].toLowerCase();
  return commands.find((c) => [c.cmd.replace(/^[*/]+/, ''), c.code, c.name].some((n) => n && n.toLowerCase() === typed));
}

/** A command known not to run: refused before it is sent. A suspected one (`warning`) is offered with its problem shown. */
export function cannotRun(c: CommandSummary): boolean {
  return !!c.problem && c.problemSeverity !== 'warning';
}

/** The short mark beside a command with a problem. */
export function problemMark(c: CommandSummary): string {
  return cannotRun(c) ? 'cannot run' : 'may not work';
}
