import { loadAgentYaml } from '../bmad-config';
import { isWorkflowCommand, type AgentDefinition } from '../agents/parser';
import { classifyCriticalActions, startupActions } from '../agents/startup';
import { isReservedVariable } from '../../core/paths';
import { isFailure, type Severity } from '../../core/results';
import { lookUp, sandboxReader, type Place } from './place';
import type { Report, Via } from './report';
import type { Finding, WorkflowChecker } from './workflows';

export interface AgentToCheck {
  id: string;
  /** Absolute path of the agent file. */
  file: string;
  def: AgentDefinition;
}

/** A workflow's finding and the menu item it was reached through; told once every workflow is walked. */
export interface Reached {
  finding: Finding;
  via: Via;
  place: Place;
}

// Every attribute of a menu item that names a file, in the order the parser decides kinds.
const TARGET_ATTRS = ['run-workflow', 'workflow', 'validate-workflow', 'exec', 'tmpl', 'data'] as const;
const RUNS = new Set(['run-workflow', 'workflow', 'validate-workflow', 'exec']);

/**
 * The agent file's own problems, what it loads when it starts (as the chat service would: a
 * config that cannot be loaded stops the start) and every file its menu items name. Workflow
 * findings come back to be told once all workflows are walked.
 */
export async function checkAgent(agent: AgentToCheck, place: Place, checker: WorkflowChecker, report: Report): Promise<Reached[]> {
  const file = place.relative(agent.file);
  const add = (severity: Severity, reason: string, command?: string) =>
    report.add({ file, severity, reason: place.clean(reason), agent: agent.id, ...(command ? { command } : {}) });

  for (const problem of agent.def.problems) add(/no <agent> element/.test(problem) ? 'error' : 'warning', problem);

  const variables: Record<string, string> = {};
  let starts = true;
  const critical = new Set(classifyCriticalActions(agent.def.criticalActions).flatMap((a) => (a.kind === 'load' ? [a.load.path] : [])));
  for (const action of startupActions(agent.def)) {
    if (action.kind !== 'load') continue;
    const requested = action.load.path;
    const read = sandboxReader(place.context({ ...variables }));
    if (/\.ya?ml$/i.test(requested)) {
      const config = await loadAgentYaml(requested, read);
      if (isFailure(config)) {
        add('error', `${agent.id} cannot start: loading ${requested} fails: ${config.error.message}`);
        starts = false;
        continue;
      }
      if (config.replaced) add('note', `${requested} is not available here; ${config.path} is loaded instead`);
      Object.assign(variables, config.variables);
      const missing = action.load.variables.filter((k) => !(k in config.variables) && !isReservedVariable(k));
      if (missing.length) add('warning', `${config.path} does not define ${missing.join(', ')}, which ${agent.id} sets from it at start`);
      continue;
    }
    const loaded = await read(requested);
    if (!isFailure(loaded)) continue;
    if (critical.has(requested)) {
      add('error', `${agent.id} cannot start: its critical action loads ${requested}, which fails: ${loaded.error.message}`);
      starts = false;
    } else add('warning', `${agent.id} asks at start for ${requested}, which cannot be read: ${loaded.error.message}`);
  }

  // Its menu never runs, and without its config every workflow would repeat the same cause.
  if (!starts) return [];
  const ctx = place.context(variables);
  const reached: Reached[] = [];
  for (const c of agent.def.commands) {
    for (const attr of TARGET_ATTRS) {
      const target = c.attrs[attr]?.trim();
      if (target === undefined) continue;
      if (!target) {
        add('warning', `${c.cmd} has an empty ${attr}=`, c.cmd);
        continue;
      }
      if (target.toLowerCase() === 'todo') {
        add('note', `${c.cmd} ${attr}="todo": not written yet, the agent says so when it is asked`, c.cmd);
        continue;
      }
      // An exec that names no file is an instruction in words.
      if (attr === 'exec' && !isWorkflowCommand({ kind: 'exec', target })) continue;
      if (RUNS.has(attr)) {
        for (const finding of await checker.check(target, ctx)) {
          if (finding.onMenuItem) add(finding.severity, `${c.cmd} ${finding.reason}`, c.cmd);
          else reached.push({ finding, via: { agent: agent.id, command: c.cmd }, place });
        }
        continue;
      }
      const found = await lookUp(target, ctx);
      if (found.refused) add('error', `${c.cmd} points to ${target}, which cannot be read: ${found.refused.error.message}`, c.cmd);
      else if (!found.exists) add('error', `${c.cmd} points to ${target}, which does not exist`, c.cmd);
    }
  }
  return reached;
}

const VIRTUAL_PATH = /\{(?:bundle-root|core-root|project-root|output_folder)\}\/[^\s,;:()'"`]+/g;

/**
 * Tells the workflows' findings, now that every config key workflows read is known. A finding
 * that only repeats another file's own error (every workflow reading a config that is not valid
 * YAML) is left out: that file's line is the one problem to fix.
 */
export function tellReached(reached: Reached[], checker: WorkflowChecker, report: Report): void {
  const broken = report.filesWithErrors();
  for (const { finding, via, place } of reached) {
    const file = place.show(finding.file);
    const cited = [...finding.reason.matchAll(VIRTUAL_PATH)].map((m) => place.show(m[0]));
    if (cited.some((c) => c !== file && broken.has(c))) continue;
    let { severity, reason } = finding;
    if (finding.undefinedName !== undefined) {
      if (checker.configKeys.has(finding.undefinedName)) {
        severity = 'warning';
        reason = `${reason}; workflows read it as {config_source}:${finding.undefinedName}, so the config misses it`;
      } else {
        reason = `${reason}; a value the workflow sets while it runs`;
      }
    }
    report.add({ file, severity, reason: place.clean(reason) }, via);
  }
}
