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
 * The command a message runs when it is nothing but that command (`*PRD`, `*prd`, or its code or
 * name), for telling a broken one apart before it is sent.
 */
export function commandOfMessage(commands: CommandSummary[], text: string): CommandSummary | undefined {
  const typed = text.trim().replace(/^[*/]+/, '').toLowerCase();
  if (!typed || /\s/.test(typed)) return undefined;
  return commands.find((c) => [c.cmd.replace(/^[*/]+/, ''), c.code, c.name].some((n) => n && n.toLowerCase() === typed));
}
