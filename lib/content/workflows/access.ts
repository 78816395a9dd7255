import { MOUNT_TOKENS, type PathContext } from '../../core/paths';

/**
 * Keys BMAD workflows and step files use for what they write: the conversation must be able to
 * save there, or the model is sent to a place every save will refuse.
 */
const OUTPUT_KEY = /^(default_output_file|output_?file|wip_?file|status_file|sprint_status(_file)?|story_dir|story_location(_absolute)?|dev_story_location|retrospectives_folder|.+_artifacts|.*_output_(file|folder|path|dir))$/i;

export function isOutputKey(key: string): boolean {
  return OUTPUT_KEY.test(key);
}

export interface PathAccess {
  readable: boolean;
  writable: boolean;
  /** Why the path cannot be read, or written when it is an output. */
  reason?: string;
}

/**
 * Where a resolved virtual path lands, decided from its mount alone: values may be globs or
 * name files yet to be written, so nothing is looked up on disk. Reads and writes still go
 * through the sandbox, which has the last word.
 */
export function pathAccess(virtualPath: string, ctx: PathContext): PathAccess {
  if (virtualPath.startsWith(MOUNT_TOKENS.output_folder)) return { readable: true, writable: true };
  if (virtualPath.startsWith(MOUNT_TOKENS['bundle-root']) || virtualPath.startsWith(MOUNT_TOKENS['core-root'])) {
    return { readable: true, writable: false, reason: `${virtualPath} is part of the installed method, which is read-only` };
  }
  if (virtualPath.startsWith('{project-root}')) {
    if (!ctx.project) return { readable: false, writable: false, reason: `${virtualPath} is outside every mount` };
    const names = virtualPath.slice('{project-root}'.length).split('/').filter(Boolean);
    const writable = ctx.project.writable.some((w) => {
      const parts = w.split('/').filter(Boolean);
      return parts.length > 0 && parts.length <= names.length && parts.every((p, i) => p === names[i]);
    });
    return writable ? { readable: true, writable: true } : { readable: true, writable: false, reason: `${virtualPath} is read-only in this project` };
  }
  return { readable: false, writable: false, reason: `${virtualPath} is outside every mount` };
}
