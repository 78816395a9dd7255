import type { Project } from '../projects';
import type { Problem } from '../../core/results';
import { diagnoseProject } from './project';

/** A check beyond the install's own, run with every diagnosis (e.g. the MCP tools skills name). */
export type ProjectCheck = (project: Project) => Promise<Problem[]>;

export interface DoctorCache {
  /** The project's diagnosis, at most `ttlMs` old; callers during one diagnosis share it. */
  project(project: Project): Promise<Problem[]>;
}

/**
 * A diagnosis loads every workflow of a project (hundreds of files), so it is kept for a short
 * while per project folder. No change stamp would do: an edit deep in a workflow folder changes
 * no folder the install lists, so the age is the only honest bound.
 */
export function createDoctorCache(options: { ttlMs: number; now?: () => number; checks?: ProjectCheck[] }): DoctorCache {
  const now = options.now ?? (() => performance.now());
  const entries = new Map<string, { at: number; promise: Promise<Problem[]> }>();
  return {
    project(project) {
      const hit = entries.get(project.root);
      if (hit && now() - hit.at < options.ttlMs) return hit.promise;
      const checks = options.checks ?? [];
      const promise = checks.length
        ? Promise.all([diagnoseProject(project), ...checks.map((check) => check(project))]).then((lists) => lists.flat())
        : diagnoseProject(project);
      const entry = { at: Number.POSITIVE_INFINITY, promise };
      entries.set(project.root, entry);
      // The age counts from the answer: a slow diagnosis is not stale the moment it lands.
      promise.then(
        () => {
          entry.at = now();
        },
        () => {
          if (entries.get(project.root) === entry) entries.delete(project.root);
        },
      );
      return promise;
    },
  };
}
