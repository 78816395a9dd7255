import type { CriticalAction } from './actions';
import { collapseSpace, findAll, findFirst, innerText, parseMarkup, type MarkupElement } from './markup';

/**
 * The attribute that says what a command does; 'prompt' is `action="#id"` or a skill agent's
 * prompt item, 'skill' a skill agent's item that invokes a skill, 'none' is e.g. *help.
 */
export type CommandKind =
  | 'skill'
  | 'run-workflow'
  | 'workflow'
  | 'validate-workflow'
  | 'exec'
  | 'action'
  | 'tmpl'
  | 'data'
  | 'prompt'
  | 'none';

export interface AgentCommand {
  /**
   * What the user types, always with one leading `*`: the code of a BMAD trigger
   * (`CP or fuzzy match on create-prd` → `*CP`), otherwise the trigger itself (`*plan`).
   */
  cmd: string;
  /** The short code of a BMAD trigger, as written (`CP`); absent for plain triggers. */
  code?: string;
  /** The command's name in words: `create-prd` for a BMAD trigger, `plan` for `*plan`. */
  name: string;
  /** Further names of a BMAD trigger (`exit, leave, goodbye or dismiss agent` → all but the first). */
  aliases?: string[];
  /**
   * 1-based position in the agent's menu counting every item, also those the command list leaves
   * out (no trigger, duplicates): the numbers the agent shows when it displays its menu.
   */
  number: number;
  /** The item's text, without a leading `[CODE]` that repeats the code. */
  description: string;
  kind: CommandKind;
  /** The deciding attribute's value as written (entities decoded); '' for kind 'none'. */
  target: string;
  /** The item's `data` attribute: a file handed to whatever the command runs. */
  data?: string;
  /** A prompt item's text: what the user asks for by picking it (6.12 `prompt = "..."`). */
  prompt?: string;
  /** Every attribute of the element, e.g. an `exec` that also names a `tmpl`. */
  attrs: Record<string, string>;
}

export interface AgentActivation {
  /** The text of each `<step>`, in order, whitespace collapsed (nested markup kept as written). */
  steps: string[];
  /** The element's whole text, `<menu-handlers>` and `<rules>` included. */
  text: string;
}

export interface AgentPersona {
  role: string;
  identity: string;
  communication_style: string;
  principles: string;
}

export interface AgentPrompt {
  id: string;
  content: string;
}

/** An element of the agent the parser has no field for; kept so nothing the author wrote is lost. */
export interface AgentExtraElement {
  name: string;
  attrs: Record<string, string>;
  text: string;
}

export interface AgentDefinition {
  id: string;
  name: string;
  title: string;
  icon?: string;
  persona: AgentPersona;
  criticalActions: string[];
  commands: AgentCommand[];
  greeting?: string;
  activation?: AgentActivation;
  prompts?: AgentPrompt[];
  extra: AgentExtraElement[];
  /** Attributes of the `<agent>` element. */
  attrs: Record<string, string>;
  /** What a builder should fix; the agent stays usable because the raw text is the model's context. */
  problems: string[];
  /**
   * What the server does when the agent starts, when its format says so itself (a skill agent:
   * its resolved customization, config layers, persistent facts); otherwise the server derives it
   * from the critical actions and the activation's file loads.
   */
  startup?: CriticalAction[];
  /** The whole file, verbatim. */
  raw: string;
}

// When an element carries several, the first listed decides (an exec with a tmpl is an exec).
const KIND_ATTRS = ['run-workflow', 'workflow', 'validate-workflow', 'exec', 'action', 'tmpl', 'data'] as const;

const KNOWN_CHILDREN = new Set([
  'persona',
  'critical-actions',
  'cmds',
  'menu',
  'greeting',
  'activation',
  'prompts',
]);

function lower(attrs: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs)) out[k.toLowerCase()] = v;
  return out;
}

export function normalizeCmd(cmd: string): string {
  const t = cmd.trim().replace(/^[*/]+/, '');
  return t ? `*${t}` : '';
}

export interface ParsedTrigger {
  cmd: string;
  code?: string;
  name: string;
  aliases?: string[];
}

// BMAD's compiler writes `<CODE> or fuzzy match on <name>`; the menu items it adds itself list
// several names (`menu or help`, `exit, leave, goodbye or dismiss agent`).
const COMPOUND_TRIGGER = /^[*/]?([A-Za-z0-9]{1,4})\s+or\s+fuzzy\s+match\s+on(?:\s+(.*))?$/is;

/**
 * Reads an item's `cmd` attribute: a BMAD compound trigger gives a code and names, anything else
 * is a plain trigger whose name is the trigger without its `*` or `/`. Null when it is empty.
 */
export function parseTrigger(raw: string): ParsedTrigger | null {
  const text = collapseSpace(raw ?? '');
  const compound = COMPOUND_TRIGGER.exec(text);
  if (compound) {
    const code = compound[1];
    const names: string[] = [];
    for (const part of (compound[2] ?? '').split(/\s*,\s*|\s+or\s+/i)) {
      const n = part.trim().replace(/^[*/]+/, '').trim();
      if (n && !names.some((x) => x.toLowerCase() === n.toLowerCase())) names.push(n);
    }
    const out: ParsedTrigger = { cmd: `*${code}`, code, name: names[0] ?? code };
    if (names.length > 1) out.aliases = names.slice(1);
    return out;
  }
  const cmd = normalizeCmd(text);
  return cmd ? { cmd, name: cmd.slice(1) } : null;
}

/** BMAD repeats the code at the start of the item's text (`[CP] Create PRD`); the UI shows it apart. */
function withoutCodePrefix(description: string, code: string | undefined): string {
  if (!code) return description;
  const m = /^\[\s*([^\]\s]+)\s*\]\s*/.exec(description);
  return m && m[1].toLowerCase() === code.toLowerCase() ? description.slice(m[0].length) : description;
}

function pickAgent(forest: MarkupElement[]): MarkupElement | undefined {
  const all = findAll(forest, 'agent');
  return all.find((a) => 'id' in lower(a.attrs)) ?? all[0];
}

function field(src: string, scope: MarkupElement | undefined, ...names: string[]): string {
  if (!scope) return '';
  for (const n of names) {
    const el = findFirst(scope.children, n);
    if (el) return innerText(src, el);
  }
  return '';
}

function parseCommand(src: string, el: MarkupElement, number: number): AgentCommand | null {
  const attrs = lower(el.attrs);
  const trigger = parseTrigger(attrs.cmd ?? '');
  if (!trigger) return null;
  let kind: CommandKind = 'none';
  let target = '';
  for (const k of KIND_ATTRS) {
    if (k in attrs) {
      kind = k;
      target = attrs[k].trim();
      break;
    }
  }
  if (kind === 'action' && target.startsWith('#')) kind = 'prompt';
  if (kind === 'none' && 'prompt' in attrs) {
    kind = 'prompt';
    target = attrs.prompt.trim();
  }
  const text = collapseSpace(innerText(src, el)) || collapseSpace(attrs.description ?? attrs.desc ?? '');
  const command: AgentCommand = { cmd: trigger.cmd, name: trigger.name, number, description: withoutCodePrefix(text, trigger.code), kind, target, attrs };
  if (trigger.code) command.code = trigger.code;
  if (trigger.aliases) command.aliases = trigger.aliases;
  if (attrs.data !== undefined && attrs.data.trim()) command.data = attrs.data.trim();
  return command;
}

function parseCommands(src: string, agent: MarkupElement): AgentCommand[] {
  const containers = [...findAll(agent.children, 'cmds'), ...findAll(agent.children, 'menu')].sort((a, b) => a.start - b.start);
  const items: MarkupElement[] = [];
  if (containers.length) {
    for (const c of containers) {
      for (const child of c.children) {
        const n = child.name.toLowerCase();
        if (n === 'c' || n === 'item') items.push(child);
      }
    }
  } else {
    for (const el of [...findAll(agent.children, 'c'), ...findAll(agent.children, 'item')]) {
      if ('cmd' in lower(el.attrs)) items.push(el);
    }
    items.sort((a, b) => a.start - b.start);
  }
  const seen = new Set<string>();
  const out: AgentCommand[] = [];
  for (const [n, el] of items.entries()) {
    const c = parseCommand(src, el, n + 1);
    if (!c) continue;
    const key = c.cmd.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(c);
  }
  return out;
}

function parseCriticalActions(src: string, agent: MarkupElement): string[] {
  const block = findFirst(agent.children, 'critical-actions');
  if (!block) return [];
  const items = findAll(block.children, 'i');
  if (items.length) return items.map((i) => collapseSpace(innerText(src, i))).filter(Boolean);
  return innerText(src, block)
    .split('\n')
    .map((l) => l.replace(/^\s*(?:[-*]|\d+[.)])\s+/, '').trim())
    .filter(Boolean);
}

function parseActivation(src: string, el: MarkupElement): AgentActivation {
  return {
    steps: findAll(el.children, 'step').map((s) => collapseSpace(innerText(src, s))),
    text: innerText(src, el),
  };
}

function parseGreeting(src: string, agent: MarkupElement): string | undefined {
  const g = findFirst(agent.children, 'greeting');
  if (!g) return undefined;
  const messages = findAll(g.children, 'message').map((m) => innerText(src, m)).filter(Boolean);
  const text = messages.length ? messages.join('\n\n') : innerText(src, g);
  return text || undefined;
}

function parsePrompts(src: string, agent: MarkupElement): AgentPrompt[] | undefined {
  const block = findFirst(agent.children, 'prompts');
  if (!block) return undefined;
  return findAll(block.children, 'prompt').map((p, n) => ({
    id: lower(p.attrs).id ?? String(n + 1),
    content: innerText(src, p),
  }));
}

/** Reads an agent file. Never throws: what it cannot find is listed in `problems`. */
export function parseAgentFile(text: string): AgentDefinition {
  const src = typeof text === 'string' ? text : '';
  const agent = pickAgent(parseMarkup(src));
  const empty: AgentPersona = { role: '', identity: '', communication_style: '', principles: '' };
  if (!agent) {
    return {
      id: '',
      name: '',
      title: '',
      persona: empty,
      criticalActions: [],
      commands: [],
      extra: [],
      attrs: {},
      problems: ['no <agent> element found'],
      raw: src,
    };
  }
  const attrs = lower(agent.attrs);
  const problems: string[] = [];
  if (!attrs.id) problems.push('the <agent> element has no id attribute');
  const persona = findFirst(agent.children, 'persona');
  const activationEl = findFirst(agent.children, 'activation');
  const commands = parseCommands(src, agent);
  if (!commands.length) problems.push('no commands found (expected <cmds><c cmd="..."> or <menu><item cmd="...">)');
  const extra = agent.children
    .filter((c) => !KNOWN_CHILDREN.has(c.name.toLowerCase()))
    .map((c) => ({ name: c.name, attrs: c.attrs, text: innerText(src, c) }));
  const def: AgentDefinition = {
    id: attrs.id ?? '',
    name: attrs.name ?? '',
    title: attrs.title ?? '',
    persona: persona
      ? {
          role: field(src, persona, 'role'),
          identity: field(src, persona, 'identity'),
          communication_style: field(src, persona, 'communication_style', 'communication-style', 'style'),
          principles: field(src, persona, 'principles'),
        }
      : empty,
    criticalActions: parseCriticalActions(src, agent),
    commands,
    extra,
    attrs,
    problems,
    raw: src,
  };
  if (attrs.icon) def.icon = attrs.icon;
  const greeting = parseGreeting(src, agent);
  if (greeting) def.greeting = greeting;
  if (activationEl) def.activation = parseActivation(src, activationEl);
  const prompts = parsePrompts(src, agent);
  if (prompts) def.prompts = prompts;
  return def;
}

/** A command the server can run as a workflow before the first model call. */
export function isWorkflowCommand(cmd: { kind?: string; target?: string } | null | undefined): boolean {
  if (!cmd) return false;
  const t = (cmd.target ?? '').trim();
  if (cmd.kind === 'skill') return t.startsWith('skill:');
  // A skill agent's prompt kept in a file beside it (6.3 `prompt: write-document.md`) is loaded like a task.
  if (cmd.kind === 'prompt') return /^\{[a-z_-]+\}\/.*\.md$/i.test(t);
  if (cmd.kind !== 'run-workflow' && cmd.kind !== 'workflow' && cmd.kind !== 'exec') return false;
  if (t === '' || t.toLowerCase() === 'todo') return false;
  // An exec names a file to follow (a task, a step-file workflow) or a skill; anything else is prose.
  return cmd.kind !== 'exec' || /\.(md|xml|ya?ml)$/i.test(t) || t.startsWith('skill:');
}
