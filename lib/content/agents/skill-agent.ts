import { centralConfigLayers, customizationLayers, isTable, substituteCustomization, type Merged, type TomlTable } from '../bmad-config';
import { splitFrontmatter } from '../../core/frontmatter';
import type { AgentCommand, AgentDefinition } from './parser';
import { classifyCriticalActions, type CriticalAction } from './startup';

/** What an agent skill is built from, read by the caller (catalog or test) as the install left it. */
export interface SkillAgentSource {
  /** The agent's id in the project: its skill's name. */
  id: string;
  skill: { name: string; relDir: string };
  /** SKILL.md as written. */
  skillMd: string;
  /** 6.12: customize.toml merged with its `_bmad/custom/` overrides. */
  customization?: Merged;
  /** 6.3: bmad-skill-manifest.yaml (`type: agent`, displayName, title, icon, role, ...). */
  meta?: Record<string, unknown>;
  /** The install's own word on the agent: `[agents.<skill>]` of the central config, or its agent-manifest.csv row. */
  roster?: { name?: string; title?: string; icon?: string; description?: string };
  /** `_bmad` (or `bmad`): where config and overrides live, relative to the project. */
  installFolder: string;
  /** The module whose config.yaml the agent loads (`bmm`). */
  module: string;
  /** Whether the install has a central config (`_bmad/config.toml`, 6.12). */
  centralConfig: boolean;
  /** Names of the project's installed skills: a menu item naming another is reported. */
  skillNames: ReadonlySet<string>;
  /** Names of the files in the skill folder (prompt files of 6.3 menus). */
  files: ReadonlySet<string>;
}

const PROJECT = '{project-root}';

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() ? v.trim() : undefined;
}

function textOf(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => String(x).trim()).filter(Boolean).join(' ');
  return str(v) ?? '';
}

/** The text of a `## Heading` section of a markdown body, up to the next heading of that level or above. */
function section(body: string, heading: RegExp): string {
  const lines = body.split(/\r?\n/);
  const start = lines.findIndex((l) => /^##\s/.test(l) && heading.test(l.replace(/^##\s+/, '')));
  if (start < 0) return '';
  const out: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,2}\s/.test(line)) break;
    out.push(line);
  }
  return out.join('\n').trim();
}

function cells(row: string): string[] {
  return row.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

interface Built {
  commands: AgentCommand[];
  problems: string[];
}

function skillCommand(number: number, code: string, description: string, skill: string, src: SkillAgentSource, problems: string[], attrs: Record<string, string>): AgentCommand {
  if (!src.skillNames.has(skill)) problems.push(`menu item ${code} names the skill ${skill}, which is not installed`);
  const command: AgentCommand = { cmd: `*${code}`, code, name: skill, number, description, kind: 'skill', target: `skill:${skill}`, attrs };
  // `*create-prd` as compiled agents named it (bmad-create-prd), still typed from habit.
  const short = skill.replace(/^bmad-/i, '');
  if (short !== skill && short.toLowerCase() !== code.toLowerCase()) command.aliases = [short];
  return command;
}

/** 6.12: `[[agent.menu]]` items, each with a `code` and one of `skill` or `prompt`. */
function menuCommands(menu: unknown, src: SkillAgentSource): Built {
  const problems: string[] = [];
  const commands: AgentCommand[] = [];
  const seen = new Set<string>();
  (Array.isArray(menu) ? menu : []).forEach((item, i) => {
    const number = i + 1;
    if (!isTable(item)) {
      problems.push(`menu item ${number} is not a table`);
      return;
    }
    const code = str(item.code);
    if (!code || /\s/.test(code)) {
      problems.push(`menu item ${number} has no usable code`);
      return;
    }
    if (seen.has(code.toLowerCase())) return;
    seen.add(code.toLowerCase());
    const description = str(item.description) ?? '';
    const skill = str(item.skill);
    const prompt = str(item.prompt);
    const attrs: Record<string, string> = Object.fromEntries(Object.entries(item).filter(([, v]) => typeof v === 'string') as Array<[string, string]>);
    if (skill && prompt) problems.push(`menu item ${code} has both a skill and a prompt; the skill is used`);
    if (skill) commands.push(skillCommand(number, code, description, skill, src, problems, attrs));
    else if (prompt) commands.push({ cmd: `*${code}`, code, name: code, number, description, kind: 'prompt', target: prompt, prompt, attrs });
    else {
      problems.push(`menu item ${code} has neither a skill nor a prompt`);
      commands.push({ cmd: `*${code}`, code, name: code, number, description, kind: 'none', target: '', attrs });
    }
  });
  return { commands, problems };
}

/** 6.3: the `## Capabilities` table (`| Code | Description | Skill |`, cells `bmad-x`, `skill: bmad-x` or `prompt: file.md`). */
function capabilityCommands(body: string, src: SkillAgentSource): Built {
  const problems: string[] = [];
  const commands: AgentCommand[] = [];
  const rows = section(body, /^capabilities\b/i)
    .split(/\r?\n/)
    .filter((l) => l.trim().startsWith('|'))
    .map(cells);
  const data = rows.slice(1).filter((r) => !r.every((c) => /^:?-{2,}:?$/.test(c) || c === ''));
  data.forEach((row, i) => {
    const [code, description = '', what = ''] = row;
    const number = i + 1;
    if (!code || /\s/.test(code)) {
      problems.push(`capability ${number} has no usable code`);
      return;
    }
    const attrs: Record<string, string> = { code, description, target: what };
    const m = /^(skill|prompt)\s*:\s*(.+)$/i.exec(what);
    const kind = m ? m[1].toLowerCase() : 'skill';
    const value = (m ? m[2] : what).trim().replace(/^`|`$/g, '');
    if (!value) {
      problems.push(`capability ${code} names nothing to run`);
      commands.push({ cmd: `*${code}`, code, name: code, number, description, kind: 'none', target: '', attrs });
    } else if (kind === 'prompt') {
      // "prompts are always in the same folder as this skill"
      if (!src.files.has(value)) problems.push(`capability ${code} names the prompt ${value}, which is not in ${src.skill.relDir}`);
      commands.push({ cmd: `*${code}`, code, name: value.replace(/\.md$/i, ''), number, description, kind: 'prompt', target: `${PROJECT}/${src.skill.relDir}/${value}`, attrs });
    } else {
      commands.push(skillCommand(number, code, description, value, src, problems, attrs));
    }
  });
  return { commands, problems };
}

/** `file:<path or glob>` (persistent facts, activation steps), or a sentence that loads a file. */
function fileLoad(entry: string, why: string): CriticalAction | null {
  const file = /^file:\s*(.+)$/i.exec(entry.trim());
  if (file) {
    const p = file[1].trim();
    return { kind: 'load', load: { path: p, variables: [], optional: true, ...(/[*?[]/.test(p) ? { glob: true } : {}) }, text: `${why}: ${entry.trim()}` };
  }
  const [classified] = classifyCriticalActions([entry]);
  if (classified?.kind === 'load') return { kind: 'load', load: { ...classified.load, optional: true, ...(/[*?[]/.test(classified.load.path) ? { glob: true } : {}) }, text: `${why}: ${classified.text}` };
  return null;
}

function steps(entries: unknown, why: string): CriticalAction[] {
  return (Array.isArray(entries) ? entries : []).flatMap((e): CriticalAction[] => {
    if (typeof e !== 'string' || !e.trim()) return [];
    return [fileLoad(e, why) ?? { kind: 'instruction', text: `${why}: ${e.trim()}` }];
  });
}

function facts(entries: unknown, why: string): CriticalAction[] {
  return (Array.isArray(entries) ? entries : []).flatMap((e): CriticalAction[] => {
    if (typeof e !== 'string' || !e.trim()) return [];
    return [fileLoad(e, why) ?? { kind: 'fact', text: e.trim() }];
  });
}

function configLoads(src: SkillAgentSource, body: string): CriticalAction[] {
  const install = `${PROJECT}/${src.installFolder}`;
  // The config the skill's own activation names, else its module's.
  const named = /Load config from `?(\{project-root\}\/[^\s`]+\.ya?ml)`?/i.exec(body)?.[1];
  const moduleConfig = named ?? `${install}/${src.module}/config.yaml`;
  const out: CriticalAction[] = [{ kind: 'load', load: { path: moduleConfig, variables: [], optional: src.centralConfig }, text: `Load config from ${moduleConfig}` }];
  if (src.centralConfig) {
    // BMAD's resolve_config.py reads these four layers over the module configs.
    for (const layer of centralConfigLayers(install)) {
      out.push({ kind: 'load', load: { path: layer, variables: [], optional: true, quiet: true, tables: ['core', `modules.${src.module}`] }, text: `Load the central config layer ${layer}` });
    }
  }
  return out;
}

/** 6.3 activation: "Search for `**\/project-context.md`. If found, load ..." is a glob the server can run. */
function searchLoads(body: string): CriticalAction[] {
  const activation = section(body, /^on activation\b/i);
  const out: CriticalAction[] = [];
  for (const m of activation.matchAll(/Search for `([^`]+)`[^.\n]*\.\s*If found, load/gi)) {
    const glob = m[1].startsWith('{') ? m[1] : `${PROJECT}/${m[1].replace(/^\.?\//, '')}`;
    out.push({ kind: 'load', load: { path: glob, variables: [], optional: true, glob: true }, text: `Load project context: every file matching ${glob}` });
  }
  return out;
}

/**
 * An agent skill as an agent definition: name, title, icon, persona, menu and what its
 * activation loads, from its customize.toml merged with the project's overrides (6.12) or from
 * its SKILL.md and bmad-skill-manifest.yaml (6.3). The SKILL.md text, with `{skill-root}`,
 * `{skill-name}` and `{agent.*}` resolved, is the model's operating instructions.
 */
export function skillAgentDefinition(src: SkillAgentSource): AgentDefinition {
  const { data: front, body } = splitFrontmatter(src.skillMd);
  const skillRoot = `${PROJECT}/${src.skill.relDir}`;
  const block: TomlTable = isTable(src.customization?.data.agent) ? (src.customization?.data.agent as TomlTable) : {};
  const meta = src.meta ?? {};
  const problems = [...(src.customization?.problems ?? [])];
  const heading = /^#\s+(.+)$/m.exec(body)?.[1]?.split(/\s+[—–-]\s+/);

  const name = str(block.name) ?? src.roster?.name ?? str(meta.displayName) ?? heading?.[0]?.trim() ?? src.id;
  const title = str(block.title) ?? src.roster?.title ?? str(meta.title) ?? heading?.[1]?.trim() ?? '';
  const icon = str(block.icon) ?? src.roster?.icon ?? str(meta.icon);
  const persona = {
    role: textOf(block.role) || textOf(meta.role),
    identity: textOf(block.identity) || textOf(meta.identity) || section(body, /^identity\b/i),
    communication_style: textOf(block.communication_style) || textOf(meta.communicationStyle) || section(body, /^communication style\b/i),
    principles: textOf(block.principles) || textOf(meta.principles) || section(body, /^principles\b/i),
  };

  const built = 'menu' in block ? menuCommands(block.menu, src) : capabilityCommands(body, src);
  problems.push(...built.problems);
  if (!built.commands.length) problems.push('no menu found (expected [[agent.menu]] in customize.toml or a ## Capabilities table in SKILL.md)');

  // The agent block is the customization's own word on every `{agent.*}` in SKILL.md.
  const resolved = substituteCustomization(src.skillMd, src.customization?.data ?? {});
  const raw = resolved.text.split('{skill-root}').join(skillRoot).split('{skill-name}').join(src.skill.name);
  for (const key of resolved.unknown) problems.push(`SKILL.md uses {${key}}, which its customization does not define`);

  const startup: CriticalAction[] = [...configLoads(src, body)];
  if (src.customization) {
    const c = src.customization;
    const absent = customizationLayers(skillRoot, '{bundle-root}', src.skill.name).filter((l) => !c.merged.includes(l) && !c.invalid.includes(l));
    const notes = [absent.length ? `not present: ${absent.join(', ')}` : '', c.invalid.length ? `left out as not valid TOML: ${c.invalid.join(', ')}` : ''].filter(Boolean);
    startup.push({
      kind: 'done',
      text: `Resolved the agent block (your "Resolve the Agent Block" step; do not run resolve_customization.py): merged ${c.merged.join(' → ') || 'no layer'} by BMAD's rules${notes.length ? ` (${notes.join('; ')})` : ''}. Every {agent.*} in your instructions already shows the result`,
      content: JSON.stringify({ agent: block }, null, 2),
    });
    startup.push(...steps(block.activation_steps_prepend, 'Activation step (prepend)'));
    startup.push(...facts(block.persistent_facts, 'Persistent fact'));
    startup.push(...steps(block.activation_steps_append, 'Activation step (append)'));
  } else {
    startup.push(...searchLoads(body));
  }

  const attrs: Record<string, string> = { id: src.id, name, title, skill: src.skill.name };
  const description = src.roster?.description ?? str(meta.capabilities) ?? str(front.description);
  if (description) attrs.capabilities = description;
  if (icon) attrs.icon = icon;
  const def: AgentDefinition = {
    id: src.id,
    name,
    title,
    persona,
    criticalActions: [],
    commands: built.commands,
    extra: [],
    attrs,
    problems,
    raw,
    startup,
  };
  if (icon) def.icon = icon;
  return def;
}

