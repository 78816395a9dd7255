import type { AgentCommand } from './parser';

/** How the message named the command. */
export type MatchedBy = 'number' | 'code' | 'name' | 'alias' | 'near-miss';

export interface CommandMatch {
  command: AgentCommand;
  /** 0-based position in the agent's command list. */
  index: number;
  /** Text after the command (`*plan a todo app` → `a todo app`); absent when there is none. */
  userInput?: string;
  by: MatchedBy;
}

/**
 * What a message said about the agent's commands:
 * - `command`: exactly one command was named;
 * - `ambiguous`: the message looks like a command but fits several equally well (so far only a
 *   near miss as close to two names); none is run, and `candidates` (menu order) let the caller
 *   have the agent ask which one was meant (see `describeAmbiguity`);
 * - `none`: an ordinary message.
 */
export type CommandResolution =
  | { kind: 'command'; match: CommandMatch }
  | { kind: 'ambiguous'; typed: string; candidates: CommandMatch[]; userInput?: string }
  | { kind: 'none' };

type Agentish = { commands: readonly AgentCommand[] } | null | undefined;

const NONE: CommandResolution = { kind: 'none' };

// Shorter names are too close to everyday words ("chat" is one edit from "cat", "that") and
// codes are two letters: a near miss of either is more likely an answer than a command.
const NEAR_MISS_MIN_LENGTH = 5;
// Without `*` or `/` a near miss of a plain word is too often an answer: "track" is one edit
// from alpha TEA's *trace, whose workflow the server would start. Hyphenated names
// (`create-prd`) are not words anyone answers with, so a typo of one is still a command.
const isCompoundName = (name: string) => name.includes('-');
// Enough for the multi-word names BMAD writes ("dismiss agent") while keeping the search tiny.
const MAX_NAME_WORDS = 4;

/** Optimal string alignment distance, stopping early once it exceeds `max`. */
function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) rows.push([i]);
  for (let j = 1; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    let best = Infinity;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2][j - 2] + 1);
      rows[i][j] = d;
      if (d < best) best = d;
    }
    if (best > max) return max + 1;
  }
  return rows[a.length][b.length];
}

function namesOf(c: AgentCommand): string[] {
  return [c.name, ...(c.aliases ?? [])].filter(Boolean);
}

/** Commands that `typed` names exactly; a code outranks a name, a name outranks an alias. */
function exactMatches(commands: readonly AgentCommand[], typed: string): CommandMatch[] {
  const t = typed.toLowerCase();
  const tiers: Record<'code' | 'name' | 'alias', CommandMatch[]> = { code: [], name: [], alias: [] };
  commands.forEach((command, index) => {
    if (command.code?.toLowerCase() === t) tiers.code.push({ command, index, by: 'code' });
    else if (command.name.toLowerCase() === t) tiers.name.push({ command, index, by: 'name' });
    else if (command.aliases?.some((a) => a.toLowerCase() === t)) tiers.alias.push({ command, index, by: 'alias' });
  });
  return tiers.code.length ? tiers.code : tiers.name.length ? tiers.name : tiers.alias;
}

function nearMisses(commands: readonly AgentCommand[], typed: string, prefixed: boolean): CommandMatch[] {
  const t = typed.toLowerCase();
  if (t.length < NEAR_MISS_MIN_LENGTH - 1) return [];
  const out: CommandMatch[] = [];
  commands.forEach((command, index) => {
    const close = namesOf(command).some(
      (n) => n.length >= NEAR_MISS_MIN_LENGTH && (prefixed || isCompoundName(n)) && editDistance(t, n.toLowerCase(), 1) === 1,
    );
    if (close) out.push({ command, index, by: 'near-miss' });
  });
  return out;
}

function decide(found: CommandMatch[], typed: string, userInput: string): CommandResolution | null {
  if (!found.length) return null;
  if (found.length === 1) {
    const match = found[0];
    if (userInput) match.userInput = userInput;
    return { kind: 'command', match };
  }
  const out: CommandResolution = { kind: 'ambiguous', typed, candidates: found };
  if (userInput) out.userInput = userInput;
  return out;
}

/**
 * Recognises a command in a user message, case-insensitively:
 * - the menu number (`2`, `#2`, `2.`), counted over every item of the menu as BMAD numbers them;
 * - the code or the name, with or without `*` or `/`: `*CP`, `CP`, `/CP`, `*create-prd`,
 *   `create-prd`, an alias (`dismiss agent`); a plain trigger's name (`*plan`, `plan`);
 * - a near miss of a name of 5 characters or more (one insertion, deletion, substitution or
 *   transposition: `creat-prd`), only when nothing matches exactly; never of a code, and
 *   without `*` or `/` only of a hyphenated name (`*goodby` is Dismiss, `goodby` is an answer).
 *
 * After `*` or `/` the rest of the message is the user's input (`*CP my app idea`). Without
 * them, a number, code or name only counts as the whole message: "plan my trip" or "2 users" are
 * ordinary answers, and mistaking them for commands would derail a running workflow.
 */
export function resolveCommand(agent: Agentish, message: string): CommandResolution {
  const commands = agent?.commands;
  if (!commands?.length || typeof message !== 'string') return NONE;
  const text = message.trim();
  if (!text) return NONE;

  const num = /^#?(\d{1,4})\.?$/.exec(text);
  if (num) {
    const n = Number(num[1]);
    const index = commands.findIndex((c) => c.number === n);
    return index >= 0 ? { kind: 'command', match: { command: commands[index], index, by: 'number' } } : NONE;
  }

  const prefixed = text[0] === '*' || text[0] === '/';
  // "* research" is a markdown bullet in an answer, not a command.
  if (prefixed && /^[*/]+\s/.test(text)) return NONE;
  const body = text.replace(/^[*/]+/, '').trim();
  if (!body) return NONE;
  const words = body.split(/\s+/);
  if (!prefixed) {
    if (words.length > MAX_NAME_WORDS) return NONE;
    return decide(exactMatches(commands, words.join(' ')), body, '') ?? decide(nearMisses(commands, words.join(' '), false), body, '') ?? NONE;
  }

  // The longest run of leading words that names a command wins, so `*dismiss agent` is one
  // command and `*CP dismiss agent` is CP with input.
  const rest = (k: number) => body.replace(new RegExp(`^(?:\\S+\\s+){${k}}`), '').trim();
  for (let k = Math.min(words.length, MAX_NAME_WORDS); k >= 1; k--) {
    const typed = words.slice(0, k).join(' ');
    const hit = decide(exactMatches(commands, typed), typed, k < words.length ? rest(k) : '');
    if (hit) return hit;
  }
  return decide(nearMisses(commands, words[0], true), words[0], words.length > 1 ? rest(1) : '') ?? NONE;
}

/** The one command a message names, or null (also when it could mean several: see `resolveCommand`). */
export function matchCommand(agent: Agentish, message: string): CommandMatch | null {
  const r = resolveCommand(agent, message);
  return r.kind === 'command' ? r.match : null;
}

/**
 * A note for the model when a message could mean several commands, so the agent asks instead of
 * guessing; '' for any other resolution.
 */
export function describeAmbiguity(resolution: CommandResolution): string {
  if (resolution.kind !== 'ambiguous') return '';
  const options = resolution.candidates.map(({ command: c }) => {
    const name = c.code && c.name && c.name !== c.code ? ` (${c.name})` : '';
    return `${c.number}. ${c.cmd}${name}${c.description ? `: ${c.description}` : ''}`;
  });
  return `The user's message "${resolution.typed}" could mean more than one menu item:\n${options.join('\n')}\nAsk which one they meant; do not run any of them yet.`;
}

/**
 * A prompt item's text for the model when the user picked it (6.12 `prompt = "..."`): the
 * user's message stays as typed, and the prompt follows it as a server note; '' otherwise.
 */
export function describePrompt(resolution: CommandResolution): string {
  if (resolution.kind !== 'command' || !resolution.match.command.prompt) return '';
  const { command: c, userInput } = resolution.match;
  const input = typeof userInput === 'string' && userInput ? `\n\nWhat the user added: ${userInput}` : '';
  return `The user picked menu item ${c.cmd}${c.description ? ` (${c.description})` : ''}. Carry out its prompt now:\n\n${c.prompt}${input}`;
}

/** The server note a message calls for: the candidates of an ambiguous command, a picked prompt item's prompt; '' for none. */
export function commandNote(resolution: CommandResolution): string {
  return describeAmbiguity(resolution) || describePrompt(resolution);
}
