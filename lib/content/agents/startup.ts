import type { AgentDefinition } from './parser';
import type { CriticalAction } from './actions';

export type { CriticalAction, CriticalLoad } from './actions';

/**
 * What an agent does when it starts, before the first model call: the file loads of its critical
 * actions and of its `<activation>` steps. The chat service carries them out; the doctor checks
 * that they can be.
 */

const LOAD_RE = /^\s*load\s+(?:into\s+memory\s+|and\s+read\s+)?(\S+)(?:\s+(?:and|&)\s+set\s+(?:the\s+)?(?:variables?|vars?)\s*:?\s*(.*))?$/i;

/** Sorts critical-action items into file loads the server performs and instructions for the model. */
export function classifyCriticalActions(items: string[]): CriticalAction[] {
  return items
    .map((raw) => raw.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .map((text): CriticalAction => {
      const m = LOAD_RE.exec(text);
      if (m && /[/{.]/.test(m[1])) {
        const variables = (m[2] ?? '')
          .replace(/\b(?:NOW|now)\b.*$/, '')
          .split(/[,\s]+/)
          .map((v) => v.replace(/[^A-Za-z0-9_-]/g, ''))
          .filter((v) => v && !/^(and|the|variables?)$/i.test(v));
        return { kind: 'load', load: { path: m[1].replace(/[.,;:]+$/, ''), variables }, text };
      }
      return { kind: 'instruction', text };
    });
}

// "Load and read {project-root}/_bmad/bmm/config.yaml NOW", "Load COMPLETE file {project-root}/...md".
const ACTIVATION_LOAD_RE = /^\s*(?:[-*•]\s*)?(?:load|read)\b(?:\s+(?:and\s+read|into\s+memory|the\s+complete\s+file|complete\s+file|the\s+file|file))?\s+(\{[a-z_-]+\}\/[^\s`'"<>]+)/i;

/**
 * The file loads an installed agent's `<activation>` steps ask for before anything else (its
 * config, sidecar files): the server carries these out, as it does critical actions. Steps about
 * the agent file itself or about files to load later (when a command runs) are left to the model.
 */
export function activationLoads(activation: string | undefined): CriticalAction[] {
  if (!activation) return [];
  const out: CriticalAction[] = [];
  const seen = new Set<string>();
  for (const line of activation.split(/\n|(?<=\S)\s+-\s+(?=load\b)/i)) {
    const m = ACTIVATION_LOAD_RE.exec(line);
    if (!m) continue;
    const file = m[1].replace(/[.,;:)]+$/, '');
    if (seen.has(file) || /\{(?!project-root|project_root|bundle-root|core-root)[^}]*\}/.test(file)) continue;
    seen.add(file);
    out.push({ kind: 'load', load: { path: file, variables: [] }, text: line.replace(/\s+/g, ' ').trim() });
  }
  return out;
}

/**
 * What the server does when an agent starts: what its definition lists (a skill agent's startup,
 * read from its customization), else its critical actions, then its activation's loads of files
 * they do not already load.
 */
export function startupActions(agent: Pick<AgentDefinition, 'criticalActions' | 'activation' | 'startup'>): CriticalAction[] {
  if (agent.startup) return agent.startup;
  const critical = classifyCriticalActions(agent.criticalActions);
  const loaded = new Set(critical.flatMap((a) => (a.kind === 'load' ? [a.load.path] : [])));
  return [...critical, ...activationLoads(agent.activation?.text).filter((a) => a.kind === 'load' && !loaded.has(a.load.path))];
}
