import { authorOf, type Caller } from '../core/access';
import { projectDocuments } from '../content/projects';
import { getRuntime } from '../engine/runtime';
import type { ProjectDocumentVersion } from '../../types/api';
import { projectOf, type BodyOf } from './access';
import { documentsOf, type FileContent } from './documents';
import { versionViews } from './presenters/documents';

/** A document's versions, newest first. */
export async function documentVersions(caller: Caller, projectId: string, rel: string): Promise<{ path: string; versions: ProjectDocumentVersion[] }> {
  return { path: rel, versions: versionViews(await (await documentsOf(caller, projectId)).versions(rel)) };
}

/** A document as it was at one version. */
export async function documentAtVersion(caller: Caller, projectId: string, rel: string, version: string): Promise<FileContent> {
  return (await documentsOf(caller, projectId)).readVersion(rel, version);
}

/** What changed in a document since a version (a unified diff). */
export async function documentDiff(caller: Caller, projectId: string, rel: string, version: string): Promise<{ path: string; diff: string }> {
  return { path: rel, diff: await (await documentsOf(caller, projectId)).diff(rel, version) };
}

/** Writes a version of a document back (whoever may write in the project), credited to the caller. */
export async function restoreDocument(caller: Caller, projectId: string, body: BodyOf<{ path: string; version: string }>): Promise<{ path: string; version: string }> {
  const project = await projectOf(caller, projectId, 'write');
  const { path: rel, version } = await body();
  return projectDocuments(getRuntime().config.dataDir, project).restore(rel, version, authorOf(caller));
}
