import { parse as parseCsv } from 'csv-parse/sync';
import { expandVariables, MOUNT_TOKENS, type PathContext } from '../paths';
import { fail, isFailure, type ToolFailure } from '../results';
import { dirnameVirtual, fileExists, readText } from './files';
import { splitFrontmatter } from './frontmatter';

/** Where BMAD (6.2 on) lists its skills: `canonicalId,name,...,path` with paths relative to the project. */
const SKILL_MANIFEST = `${MOUNT_TOKENS['bundle-root']}/_config/skill-manifest.csv`;
const SKILL_REF = /^skill:\s*([A-Za-z0-9][\w.-]*)$/;
// What a SKILL.md says when the skill is a workflow.md beside it.
const POINTER = /^\s*Follow the instructions in `?\.\/workflow\.md`?\.?\s*$/i;

export function isSkillRef(target: string): boolean {
  return SKILL_REF.test(target.trim());
}

/**
 * A menu's `skill:<name>` as the file to load: the skill's workflow.md when its SKILL.md only
 * points there, else the SKILL.md itself.
 */
export async function skillFile(target: string, ctx: PathContext): Promise<string | ToolFailure> {
  const name = (SKILL_REF.exec(target.trim()) as RegExpExecArray)[1];
  const manifest = await readText(SKILL_MANIFEST, ctx);
  if (isFailure(manifest)) return fail('ENOENT', `${target}: this install has no skill list (${SKILL_MANIFEST})`, { path: SKILL_MANIFEST });
  let rows: Array<Record<string, string>>;
  try {
    rows = parseCsv(manifest.content, { columns: true, skip_empty_lines: true, relax_column_count: true }) as Array<Record<string, string>>;
  } catch {
    return fail('E_INVALID_ARGS', `${target}: ${SKILL_MANIFEST} is not a readable CSV file`, { path: SKILL_MANIFEST });
  }
  const row = rows.find((r) => r.canonicalId === name) ?? rows.find((r) => r.name === name);
  if (!row?.path) return fail('ENOENT', `${target}: no skill named ${name} in ${SKILL_MANIFEST}`, { path: SKILL_MANIFEST });
  const skillMd = expandVariables(`{project-root}/${row.path.replace(/^\/+/, '')}`, { roots: ctx }).text;
  const skill = await readText(skillMd, ctx);
  if (isFailure(skill)) return skill;
  const workflowMd = `${dirnameVirtual(skill.path)}/workflow.md`;
  if (POINTER.test(splitFrontmatter(skill.content).body) && (await fileExists(workflowMd, ctx))) return workflowMd;
  return skill.path;
}
