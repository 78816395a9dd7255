import { collapseSpace, findAll, findFirst, innerText, parseMarkup, type MarkupElement } from './markup';

/** The attribute that says what a command does; 'prompt' is `action="#id"`, 'none' is e.g. *help. */
export type CommandKind =
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
  /** Always starts with `*`, e.g. `*plan`. */
  cmd: string;
  description: string;
  kind: CommandKind;
  /** The deciding attribute's value as written (entities decoded); '' for kind 'none'. */
  target: string;
  /** Every attribute of the element, e.g. an `exec` that also names a `tmpl`. */
  attrs: Record<string, string>;
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
  activation?: string;
  prompts?: AgentPrompt[];
  extra: AgentExtraElement[];
  /** Attributes of the `<agent>` element. */
  attrs: Record<string, string>;
  /** What a builder should fix; the agent stays usable because the raw text is the model's context. */
  problems: string[];
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

function parseCommand(src: string, el: MarkupElement): AgentCommand | null {
  const attrs = lower(el.attrs);
  const cmd = normalizeCmd(attrs.cmd ?? '');
  if (!cmd) return null;
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
  const description = collapseSpace(innerText(src, el)) || collapseSpace(attrs.description ?? attrs.desc ?? '');
  return { cmd, description, kind, target, attrs };
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
  for (const el of items) {
    const c = parseCommand(src, el);
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
  if (activationEl) def.activation = innerText(src, activationEl);
  const prompts = parsePrompts(src, agent);
  if (prompts) def.prompts = prompts;
  return def;
}

/** A command the server can run as a workflow before the first model call. */
export function isWorkflowCommand(cmd: { kind?: string; target?: string } | null | undefined): boolean {
  if (!cmd || (cmd.kind !== 'run-workflow' && cmd.kind !== 'workflow')) return false;
  const t = (cmd.target ?? '').trim();
  return t !== '' && t.toLowerCase() !== 'todo';
}
