import fs from 'node:fs/promises';
import path from 'node:path';
import {
  createBundleScanner,
  type BundleScanner,
  type BundleSnapshot,
  type OfferedAgentRef,
  type ScannedAgent,
  type ScannedBundle,
} from '../bundles/scanner';
import type { FsLimitOverrides } from '../bundles/schema';
import { parseAgentFile, type AgentDefinition } from './parser';
import { bundleWorkspace, type Workspace } from './workspace';

export interface CatalogOptions {
  /** When set, command targets under `{core-root}/` are checked too by listBundles. */
  coreRoot?: string;
  /**
   * A full scan younger than this is reused by listAgents/listBundles, and a bundle checked this
   * recently by getAgent (0: always revalidate). The agent list is polled by every open page and
   * every chat request gets its agent; edits still show within this delay.
   */
  revalidateMs?: number;
  /** `{project-root}` of bundle agents (the server's working folder). */
  projectRoot?: string;
  /** OUTPUT_PATH: bundle conversations write into `<outputPath>/<conversationId>`. */
  outputPath?: string;
}

/** A menu command as an agent's listing shows it. */
export interface CommandListing {
  /** What the user types: `*plan`, or `*CP` for a BMAD trigger. */
  cmd: string;
  description: string;
  kind?: string;
  target?: string;
  /** A BMAD trigger's code (`CP`). */
  code?: string;
  /** A BMAD trigger's name (`create-prd`). */
  name?: string;
  aliases?: string[];
  /** A file the command hands to what it runs (the item's `data` attribute). */
  data?: string;
  /** Why the command cannot run as installed, in words a user can act on. */
  problem?: string;
}

/** An agent as a catalog lists it for someone picking one: labels, menu and greeting. */
export interface AgentListing {
  id: string;
  name: string;
  title: string;
  icon?: string;
  description?: string;
  /** The bundle's name, or the project's for a project agent. */
  bundleName: string;
  /** Set for the agents of a BMAD project (their ids are unique inside the project only). */
  projectId?: string;
  commands: CommandListing[];
  greeting?: string;
}

export interface BundleAgentView {
  id: string;
  name: string;
  title: string;
  icon?: string;
  description?: string;
  /** Relative to the bundle folder. */
  file: string;
  entryPoint: boolean;
  offered: boolean;
  commands: CommandListing[];
}

/** One bundle as builders see it (GET /api/bundles). No absolute paths. */
export interface BundleView {
  folder: string;
  name: string;
  type?: 'bundle' | 'standalone';
  version?: string;
  description?: string;
  valid: boolean;
  problems: string[];
  agents: BundleAgentView[];
  resources?: Record<string, unknown>;
  coreDependencies?: string[];
  limits: FsLimitOverrides;
}

export interface LoadedAgent {
  /** Parsed agent file; the id comes from bundle.yaml, and so do name, title and icon when it gives them. */
  agent: AgentDefinition;
  bundle: {
    name: string;
    folder: string;
    /** Absolute bundle folder: the `{bundle-root}` mount. */
    root: string;
    /**
     * Size-limit overrides: the bundle's `tools.fs`, then the agent's. Only keys the bundle
     * sets are present; apply them over the server's limits.
     */
    limits: FsLimitOverrides;
  };
  summary: AgentListing;
}

/** An agent ready to chat: its definition and the workspace its tools run in. */
export interface ResolvedAgent extends LoadedAgent {
  workspace: Workspace;
}

export interface Catalog {
  readonly bundlesRoot: string;
  /** Every bundle folder, valid or not, with its problems. */
  listBundles(): Promise<BundleView[]>;
  /** Agents users may pick: entry points of valid bundles and standalone agents. */
  listAgents(): Promise<AgentListing[]>;
  /** An offered agent by id (case-insensitive), or null. */
  getAgent(agentId: string): Promise<ResolvedAgent | null>;
}

interface DefEntry {
  stamp: string;
  promise: Promise<AgentDefinition | null>;
}

const CHECKED_KINDS = new Set(['run-workflow', 'workflow', 'validate-workflow', 'exec', 'tmpl', 'data']);

// A plain trigger's name is its cmd without the `*`: saying it again would only add noise.
export function commandSummaries(def: AgentDefinition): CommandListing[] {
  return def.commands.map(({ cmd, description, kind, target, code, name, aliases, data }) => {
    const s: CommandListing = { cmd, description, kind, target };
    if (code) {
      s.code = code;
      s.name = name;
    }
    if (aliases?.length) s.aliases = aliases;
    if (data) s.data = data;
    return s;
  });
}

/**
 * bundle.yaml may leave name and title out: the agent file's `<agent name title>` says them too.
 * The name ends at the id so there is always something to show; a title repeating the id would
 * add nothing, so it stays empty (the picker and the prompt skip an empty title).
 */
function labels(agent: ScannedAgent, def: AgentDefinition | null): { name: string; title: string } {
  return {
    name: agent.name ?? (def?.name.trim() || agent.id),
    title: agent.title ?? (def?.title.trim() || ''),
  };
}

function toSummary(bundle: ScannedBundle, agent: ScannedAgent, def: AgentDefinition): AgentListing {
  const s: AgentListing = {
    id: agent.id,
    ...labels(agent, def),
    bundleName: bundle.name,
    commands: commandSummaries(def),
  };
  const icon = agent.icon ?? def.icon;
  if (icon) s.icon = icon;
  if (agent.description) s.description = agent.description;
  if (def.greeting) s.greeting = def.greeting;
  return s;
}

function rel(...parts: string[]): string {
  return parts.join('/').replace(/\\/g, '/').replace(/\/{2,}/g, '/');
}

export function createCatalog(bundlesRoot: string, options: CatalogOptions = {}): Catalog {
  const scanner: BundleScanner = createBundleScanner(bundlesRoot);
  const defs = new Map<string, DefEntry>();
  let summaries: { generation: number; list: AgentListing[] } | null = null;
  const loaded = new Map<string, { generation: number; def: AgentDefinition; value: ResolvedAgent }>();
  let last: BundleSnapshot | null = null;

  function loadDef(agent: ScannedAgent): Promise<AgentDefinition | null> {
    if (!agent.path) return Promise.resolve(null);
    const hit = defs.get(agent.path);
    if (hit && hit.stamp === agent.stamp) return hit.promise;
    const promise = fs.readFile(agent.path, 'utf8').then(parseAgentFile, () => null);
    defs.set(agent.path, { stamp: agent.stamp, promise });
    // A failed read is retried next time rather than remembered.
    promise.then((d) => {
      if (!d && defs.get(agent.path)?.promise === promise) defs.delete(agent.path);
    });
    return promise;
  }

  function adopt(snap: BundleSnapshot): BundleSnapshot {
    if (last && last.generation !== snap.generation) {
      // Drop parsed files no bundle points at any more.
      const live = new Set<string>();
      for (const b of snap.bundles) for (const a of b.agents) if (a.path) live.add(a.path);
      for (const p of [...defs.keys()]) if (!live.has(p)) defs.delete(p);
      loaded.clear();
    }
    last = snap;
    return snap;
  }

  let scannedAt = 0;
  /** When getAgent last confirmed each bundle folder unchanged. */
  const checkedAt = new Map<string, number>();
  let inFlight: Promise<BundleSnapshot> | null = null;

  async function snapshot(): Promise<BundleSnapshot> {
    const fresh = options.revalidateMs ?? 0;
    if (last && fresh > 0 && performance.now() - scannedAt < fresh) return last;
    // Concurrent callers share one scan.
    inFlight ??= scanner.scan().then(
      (snap) => {
        inFlight = null;
        scannedAt = performance.now();
        return adopt(snap);
      },
      (e) => {
        inFlight = null;
        throw e;
      },
    );
    return inFlight;
  }

  async function listAgents(): Promise<AgentListing[]> {
    const snap = await snapshot();
    if (summaries && summaries.generation === snap.generation) return summaries.list;
    const refs = [...snap.offered.values()];
    const parsed = await Promise.all(refs.map((r) => loadDef(r.agent)));
    const list: AgentListing[] = [];
    let complete = true;
    refs.forEach((r, i) => {
      const def = parsed[i];
      if (def) list.push(toSummary(r.bundle, r.agent, def));
      else complete = false;
    });
    if (complete) summaries = { generation: snap.generation, list };
    return list;
  }

  async function targetProblems(bundle: ScannedBundle, agent: ScannedAgent, def: AgentDefinition): Promise<string[]> {
    const checks = def.commands
      .filter((c) => CHECKED_KINDS.has(c.kind))
      .map((c) => {
        const m = /^\{(bundle-root|core-root)\}\/(.+)$/.exec(c.target);
        if (!m || m[2].split('/').includes('..') || /\{[^}]*\}/.test(m[2])) return null;
        const base = m[1] === 'bundle-root' ? bundle.root : options.coreRoot;
        if (!base) return null;
        return { c, abs: path.join(base, m[2]) };
      })
      .filter((x): x is NonNullable<typeof x> => x !== null);
    const exists = await Promise.all(checks.map(({ abs }) => fs.stat(abs).then(() => true, () => false)));
    return checks
      .filter((_, i) => !exists[i])
      .map(({ c }) => `${rel(bundle.folder, agent.file)}: ${c.cmd} points to ${c.target}, which does not exist`);
  }

  async function listBundles(): Promise<BundleView[]> {
    const snap = await snapshot();
    const views = await Promise.all(
      snap.bundles.map(async (b): Promise<BundleView> => {
        const problems = [...b.problems];
        const agents = await Promise.all(
          b.agents.map(async (a): Promise<BundleAgentView> => {
            // Listed agents have a file inside their bundle, so reading it is safe even when the
            // bundle offers nobody: builders still want the file's own problems.
            const def = await loadDef(a);
            if (!def) problems.push(`${rel(b.folder, a.file)} could not be read`);
            if (def) {
              for (const p of def.problems) problems.push(`${rel(b.folder, a.file)}: ${p}`);
              problems.push(...(await targetProblems(b, a, def)));
            }
            const v: BundleAgentView = {
              id: a.id,
              ...labels(a, def),
              file: a.file,
              entryPoint: a.entryPoint,
              offered: a.offered,
              commands: def ? commandSummaries(def) : [],
            };
            const icon = a.icon ?? def?.icon;
            if (icon) v.icon = icon;
            if (a.description) v.description = a.description;
            return v;
          }),
        );
        const view: BundleView = { folder: b.folder, name: b.name, valid: b.valid, problems, agents, limits: b.limits };
        if (b.type) view.type = b.type;
        if (b.version) view.version = b.version;
        if (b.description) view.description = b.description;
        if (b.resources) view.resources = b.resources;
        if (b.coreDependencies) view.coreDependencies = b.coreDependencies;
        return view;
      }),
    );
    return views;
  }

  async function getAgent(agentId: string): Promise<ResolvedAgent | null> {
    if (typeof agentId !== 'string' || !agentId) return null;
    const key = agentId.toLowerCase();
    let ref: OfferedAgentRef | undefined = last?.offered.get(key);
    let snap: BundleSnapshot;
    const fresh = options.revalidateMs ?? 0;
    if (ref && last && fresh > 0 && performance.now() - (checkedAt.get(ref.bundle.folder) ?? -Infinity) < fresh) {
      // Checked moments ago: every stat costs a thread-pool round trip, and each chat request is here.
      snap = last;
    } else if (ref) {
      // A chat turn only needs its own bundle to be current.
      const folder = ref.bundle.folder;
      snap = adopt(await scanner.check(folder));
      checkedAt.set(folder, performance.now());
    } else {
      snap = await snapshot();
    }
    ref = snap.offered.get(key);
    if (!ref) return null;
    const def = await loadDef(ref.agent);
    if (!def) return null;
    const hit = loaded.get(key);
    if (hit && hit.generation === snap.generation && hit.def === def) return hit.value;
    const { bundle, agent } = ref;
    const merged: AgentDefinition = { ...def, id: agent.id, ...labels(agent, def) };
    const icon = agent.icon ?? def.icon;
    if (icon) merged.icon = icon;
    const home = { name: bundle.name, folder: bundle.folder, root: bundle.root, limits: { ...bundle.limits, ...agent.limits } };
    const value: ResolvedAgent = {
      agent: merged,
      bundle: home,
      summary: toSummary(bundle, agent, def),
      workspace: bundleWorkspace(
        { coreRoot: options.coreRoot ?? path.resolve('bmad/core'), projectRoot: options.projectRoot ?? process.cwd(), outputPath: options.outputPath ?? path.resolve('output') },
        home,
      ),
    };
    loaded.set(key, { generation: snap.generation, def, value });
    return value;
  }

  return { bundlesRoot: scanner.root, listBundles, listAgents, getAgent };
}
