import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Project } from '../projects';
import type { Problem } from '../../core/results';
import { customizationLayers, isTable, parseToml } from '../bmad-config';

/** What the check needs of the MCP servers: their names, projects and problems, and the tools one offers. */
export interface ExternalToolServers {
  /** `problem`: why the server cannot be used (a variable it names is not set), in words without values. */
  servers(): readonly { name: string; projects?: string[]; problem?: string }[];
  /** The tools a server offers (listing them may connect it); null when it cannot be reached. */
  toolNames(server: string): Promise<string[] | null>;
}

/** The keys of a skill's customize.toml whose entries name the organisation's MCP tools. */
export const EXTERNAL_KEYS = ['external_sources', 'external_handoffs'] as const;

/** Prefixes BMAD uses for things that are not MCP servers (`file:`, `skill:`) and URL schemes. */
const NOT_SERVERS = new Set(['file', 'skill', 'http', 'https', 'mailto', 'ftp', 'data']);
const MAX_ENTRY_CHARS = 4_000;
const MAX_ENTRIES = 200;
// A name, a colon, a tool name: `corp:confluence_upload`. Bounded classes, no nesting: linear in the entry.
const REFERENCE = /(?<![\w.:/@-])([A-Za-z][A-Za-z0-9_-]{0,31}):([A-Za-z_][A-Za-z0-9_.-]{0,127})/g;

/** A diagnosis waits this long for a server's tool list; a server slower than that is checked by name only. */
const LIST_WAIT_MS = 3_000;

function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise.catch(() => null), new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)))]).finally(() => clearTimeout(timer));
}

export interface ExternalReference {
  server: string;
  tool: string;
  /** `external_sources` or `external_handoffs`. */
  key: string;
}

/** The `server:tool` references in entries of external_sources / external_handoffs (natural-language directives). */
export function externalReferences(table: Record<string, unknown>): ExternalReference[] {
  const out: ExternalReference[] = [];
  for (const section of ['workflow', 'agent']) {
    const t = table[section];
    if (!isTable(t)) continue;
    for (const key of EXTERNAL_KEYS) {
      const list = t[key];
      if (!Array.isArray(list)) continue;
      for (const entry of list.slice(0, MAX_ENTRIES)) {
        if (typeof entry !== 'string') continue;
        for (const m of entry.slice(0, MAX_ENTRY_CHARS).matchAll(REFERENCE)) {
          const server = m[1]!;
          const tool = m[2]!.replace(/[.-]+$/, '');
          if (NOT_SERVERS.has(server.toLowerCase()) || !tool) continue;
          out.push({ server, tool, key });
        }
      }
    }
  }
  return out;
}

/**
 * The MCP tools a project's skills name in their customize.toml layers (`server:tool` in
 * external_sources / external_handoffs) that no configured server offers this project. One warning
 * per reference and layer: BMAD skips an unavailable tool, so the skill still runs without it.
 */
export async function checkExternalTools(project: Project, servers: ExternalToolServers): Promise<Problem[]> {
  const configured = new Map(servers.servers().map((s) => [s.name, s]));
  const toolLists = new Map<string, Promise<string[] | null>>();
  const problems: Problem[] = [];
  for (const skill of project.install.skills) {
    if (!skill.customizable) continue;
    const layers = customizationLayers(skill.dir, project.install.root, skill.name);
    for (const file of layers) {
      const text = await fs.readFile(file, 'utf8').catch(() => null);
      if (text === null) continue;
      const parsed = parseToml(text);
      if (!parsed.ok) continue;
      const rel = path.relative(project.root, file).split(path.sep).join('/');
      const seen = new Set<string>();
      for (const ref of externalReferences(parsed.data)) {
        const name = `${ref.server}:${ref.tool}`;
        if (seen.has(name)) continue;
        seen.add(name);
        const server = configured.get(ref.server);
        let reason: string | null = null;
        if (!server) reason = `no MCP server ${ref.server}`;
        else if (server.projects && !server.projects.includes(project.id)) reason = `MCP server ${ref.server} is not for this project (projects: ${server.projects.join(', ')})`;
        // Never started, so its tools are offered to no turn.
        else if (server.problem) reason = `MCP server ${ref.server} cannot be used (${server.problem})`;
        else {
          if (!toolLists.has(ref.server)) toolLists.set(ref.server, within(servers.toolNames(ref.server), LIST_WAIT_MS));
          const tools = await toolLists.get(ref.server)!;
          if (tools && !tools.includes(ref.tool)) reason = `MCP server ${ref.server} has no tool ${ref.tool}`;
        }
        if (reason) problems.push({ file: rel, severity: 'warning', reason: `external tool ${name}: ${reason}` });
      }
    }
  }
  return problems;
}

/** The check as the doctor's cache runs it. */
export function externalToolCheck(servers: ExternalToolServers): (project: Project) => Promise<Problem[]> {
  return (project) => checkExternalTools(project, servers);
}
