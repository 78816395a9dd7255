import path from 'node:path';
import { authorOf, type Caller } from '../core/access';
import { AppError } from '../core/errors';
import { listOutputTree, outputRootOf, readOutputFile } from '../content/outputs';
import { projectDocuments, saveDocument, type Project, type ProjectDocuments } from '../content/projects';
import { getRuntime } from '../engine/runtime';
import type { OutputFileEntry, ProjectDocument, SavedDocumentView } from '../../types/api';
import { canOpenConversation, conversationOf, projectOf, visibleProjects, type BodyOf } from './access';
import { documentViews, outputTreeView, savedDocumentView } from './presenters/documents';

/** A file as the routes send it. */
export interface FileContent {
  name: string;
  content: Buffer;
  contentType: string;
}

/** The documents of a project the caller sees, reading links to conversations as the caller may open them. */
export async function documentsOf(caller: Caller, projectId: string): Promise<ProjectDocuments> {
  const project = await projectOf(caller, projectId);
  return projectDocuments(getRuntime().config.dataDir, project, { canOpenConversation: canOpenConversation(caller) });
}

/** The documents of a project, with who last wrote each. */
export async function listDocuments(caller: Caller, projectId: string): Promise<{ files: ProjectDocument[] }> {
  return { files: documentViews(await (await documentsOf(caller, projectId)).list()) };
}

/** One document by its path relative to the project root (`_bmad-output/prd.md`). */
export async function readProjectFile(caller: Caller, projectId: string, rel: string): Promise<FileContent> {
  return (await documentsOf(caller, projectId)).read(rel);
}

/**
 * A person saves a document; the path is relative to the project root. E_CONFLICT with the current
 * sha256 when it changed since it was read; E_FORBIDDEN outside the folders the project's agents
 * may write, or for a viewer.
 */
export async function saveProjectFile(
  caller: Caller,
  projectId: string,
  rel: string,
  body: BodyOf<{ content: string; ifMatchSha256?: string }>,
  maxBytes: number,
): Promise<SavedDocumentView> {
  const project = await projectOf(caller, projectId, 'write');
  const edit = await body();
  const saved = await saveDocument(getRuntime().config.dataDir, project, {
    path: rel,
    content: edit.content,
    ...(edit.ifMatchSha256 ? { ifMatchSha256: edit.ifMatchSha256 } : {}),
    // The version store keeps one line per author.
    author: authorOf(caller).replace(/\s+/g, ' ').trim().slice(0, 200) || 'user',
    maxBytes,
  });
  return savedDocumentView(saved);
}

/**
 * Where a conversation's files are: its own folder for a bundle agent, the project's shared
 * output folder for a project agent (a project gone since leaves nothing to list).
 */
export async function filesRootOf(conversation: { id: string; projectId?: string }): Promise<string | null> {
  const rt = getRuntime();
  if (!conversation.projectId) return outputRootOf(rt.config, conversation.id);
  const project = await rt.projects.get(conversation.projectId);
  return project ? project.install.outputRoot : null;
}

/** The files a conversation the caller may read wrote (or its project's output folder). */
export async function conversationFiles(caller: Caller, id: string): Promise<{ files: OutputFileEntry[] }> {
  const root = await filesRootOf(await conversationOf(caller, id));
  return { files: root ? outputTreeView(await listOutputTree(root)) : [] };
}

/** One output file of a conversation the caller may read; the sandbox checks the relative path. */
export async function conversationFile(caller: Caller, id: string, rel: string): Promise<FileContent> {
  const root = await filesRootOf(await conversationOf(caller, id));
  if (!root) throw new AppError('E_FILE_NOT_FOUND', `No output file "${rel}".`);
  return readOutputFile(root, rel);
}

/** Documents larger than this come back cut, saying so. */
export const MAX_DOCUMENT_CHARS = 200_000;

/** A document path as a listing gives it (relative to the project's output folder); the project-root form (`_bmad-output/...`) works too. */
export function documentPath(project: Project, rel: string): string {
  const outputRel = path.relative(project.root, project.install.outputRoot).split(path.sep).join('/');
  const clean = rel.replace(/^\/+/, '');
  return outputRel && clean.startsWith(`${outputRel}/`) ? clean.slice(outputRel.length + 1) : clean;
}

export interface DocumentText {
  path: string;
  contentType: string;
  bytes: number;
  text?: string;
  truncated?: boolean;
}

/** A document's text for a model (the MCP server): text files whole (up to the cap), others named by type and size. */
export async function readDocumentText(caller: Caller, projectId: string, rel: string): Promise<DocumentText> {
  const project = await projectOf(caller, projectId);
  const docPath = documentPath(project, rel);
  const file = await projectDocuments(getRuntime().config.dataDir, project).read(docPath);
  const isText = /^text\/|json|yaml|xml|csv|markdown/.test(file.contentType) && !file.content.subarray(0, 8000).includes(0);
  if (!isText) return { path: docPath, contentType: file.contentType, bytes: file.content.byteLength };
  const text = file.content.toString('utf8');
  return {
    path: docPath,
    contentType: file.contentType,
    bytes: file.content.byteLength,
    text: text.length > MAX_DOCUMENT_CHARS ? text.slice(0, MAX_DOCUMENT_CHARS) : text,
    ...(text.length > MAX_DOCUMENT_CHARS ? { truncated: true } : {}),
  };
}

/** The documents of a project for a model (the MCP server): as listed, without links to conversations. */
export async function listDocumentsForModel(caller: Caller, projectId: string): Promise<ProjectDocument[]> {
  return documentViews(await projectDocuments(getRuntime().config.dataDir, await projectOf(caller, projectId)).list());
}

/** Every document of the projects the caller sees, as `bmad://<projectId>/<path>` resources (at most `max`). */
export async function documentResources(caller: Caller, max: number): Promise<{ uri: string; name: string }[]> {
  const dataDir = getRuntime().config.dataDir;
  const resources: { uri: string; name: string }[] = [];
  for (const { project } of await visibleProjects(caller)) {
    for (const doc of await projectDocuments(dataDir, project).list()) {
      if (resources.length >= max) break;
      resources.push({ uri: `bmad://${encodeURIComponent(project.id)}/${doc.path.split('/').map(encodeURIComponent).join('/')}`, name: `${project.id}: ${doc.path}` });
    }
  }
  return resources;
}
