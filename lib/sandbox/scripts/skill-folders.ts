import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isDeniedProjectName } from '../../core/paths';

/** An installed skill: a folder holding SKILL.md (and maybe `scripts/`). */
export interface SkillFolder {
  name: string;
  /** Real absolute path (server side only). */
  real: string;
}

async function isFile(p: string): Promise<boolean> {
  return fs.lstat(p).then((s) => s.isFile(), () => false);
}

async function realDirs(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory() && !isDeniedProjectName(e.name)).map((e) => path.join(dir, e.name));
}

const MAX_METHOD_ENTRIES = 20_000;

/**
 * Where a BMAD install put its skills: a tool folder's `skills/` at the top of the project
 * (`.claude/skills/<name>`, `.agents/skills/<name>`, ...) from 6.3 on, or inside the method
 * folder (6.2). Links are not followed: a skill is a real folder of the project.
 */
export async function findSkillFolders(projectReal: string, methodReal: string | null): Promise<SkillFolder[]> {
  const found: SkillFolder[] = [];
  for (const top of await realDirs(projectReal)) {
    if (!path.basename(top).startsWith('.')) continue;
    const skills = path.join(top, 'skills');
    if (!(await fs.lstat(skills).then((s) => s.isDirectory(), () => false))) continue;
    for (const dir of await realDirs(skills)) {
      if (await isFile(path.join(dir, 'SKILL.md'))) found.push({ name: path.basename(dir), real: dir });
    }
  }
  if (methodReal) {
    const queue = [{ dir: methodReal, depth: 0 }];
    let seen = 0;
    while (queue.length && seen < MAX_METHOD_ENTRIES) {
      const { dir, depth } = queue.shift() as { dir: string; depth: number };
      const subs = await realDirs(dir);
      seen += subs.length;
      for (const sub of subs) {
        if (await isFile(path.join(sub, 'SKILL.md'))) found.push({ name: path.basename(sub), real: sub });
        else if (depth < 5) queue.push({ dir: sub, depth: depth + 1 });
      }
    }
  }
  return found;
}
