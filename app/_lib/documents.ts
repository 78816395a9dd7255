/**
 * Where a file a tool wrote can be read back: tools name files by virtual path
 * (`{output_folder}/brief.md`), the files APIs by a path relative to the output folder.
 */
export function outputRelativePath(virtualPath: string, projectOutputFolder?: string | null): string | null {
  const prefixes = ['{output_folder}/'];
  if (projectOutputFolder) prefixes.push(`${projectOutputFolder.replace(/\/+$/, '')}/`);
  for (const prefix of prefixes) {
    if (virtualPath.startsWith(prefix)) {
      const rest = virtualPath.slice(prefix.length).replace(/^\/+/, '');
      return rest && !rest.split('/').includes('..') ? rest : null;
    }
  }
  return null;
}
