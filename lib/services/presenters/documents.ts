import type { OutputEntry } from '../../content/outputs';
import type { DocumentFile, DocumentVersion, DocumentWriter, SavedDocument } from '../../content/projects';
import type { OutputFileEntry, ProjectDocument, ProjectDocumentVersion, SavedDocumentView } from '../../../types/api';
import type { Assert, NoExtraFields } from './fields';

type _Document = Assert<NoExtraFields<DocumentFile, ProjectDocument>>;
type _Writer = Assert<NoExtraFields<DocumentWriter, NonNullable<ProjectDocument['lastWriter']>>>;
type _Version = Assert<NoExtraFields<DocumentVersion, ProjectDocumentVersion>>;
type _Output = Assert<NoExtraFields<OutputEntry, OutputFileEntry>>;
type _Saved = Assert<NoExtraFields<SavedDocument, SavedDocumentView>>;

/** A project's documents as the API lists them, with who last wrote each. */
export function documentViews(files: DocumentFile[]): ProjectDocument[] {
  return files;
}

/** A document's kept versions as the API lists them. */
export function versionViews(versions: DocumentVersion[]): ProjectDocumentVersion[] {
  return versions;
}

/** A folder's files as the API lists them, as a tree. */
export function outputTreeView(entries: OutputEntry[]): OutputFileEntry[] {
  return entries;
}

/** A person's save as the API answers it. */
export function savedDocumentView(saved: SavedDocument): SavedDocumentView {
  return saved;
}
