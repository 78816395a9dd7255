import path from 'node:path';
import { openVersionStore, type VersionStore } from '../versions';

/**
 * The version store of a project: a shadow repository under DATA_DIR (never inside the project,
 * where tools reach), versioning the whole project folder so writes to writable folders such as
 * `docs/` keep their history too.
 */
export function projectVersions(dataDir: string, project: { id: string; root: string }): Promise<VersionStore> {
  return openVersionStore({ gitdir: path.join(/*turbopackIgnore: true*/ dataDir, 'versions', project.id), workRoot: project.root });
}
