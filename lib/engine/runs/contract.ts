import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { InstalledSkill } from '../../content/skills';
import type { HeadlessContract } from './types';

/**
 * Which skills of an install can run headless, read from the skills' own files as BMAD (6.7 on)
 * writes them: a `references/headless.md` (prd, ux, architecture, brainstorming), an
 * `assets/headless-schemas.md` (spec, and prd / ux beside their headless.md), or a JSON status
 * block the skill's text introduces as its headless output (product-brief, deep-recon,
 * sprint-planning under `## Headless Mode`; prfaq's `--headless` result in its verdict step).
 * A skill that only mentions a headless flag but promises no JSON result (retrospective) has no
 * contract a run could check.
 */

const CONTRACT_FILES = ['references/headless.md', 'assets/headless-schemas.md'];
/** Files a run reads at most per skill, and the bytes of each. */
const MAX_FILES = 40;
const MAX_BYTES = 512 * 1024;
const JSON_STATUS = /```json\s*\{\s*"status"/g;
// How far before a JSON block the word "headless" must appear to make it the headless result.
const LOOKBEHIND = 600;

async function readSmall(file: string): Promise<string | null> {
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile() || stat.size > MAX_BYTES) return null;
    return await fs.readFile(file, 'utf8');
  } catch {
    return null;
  }
}

async function markdownIn(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith('.md')).map((e) => path.join(dir, e.name)).sort();
}

/** A JSON status block the text presents as its headless output. */
function headlessJsonBlock(text: string): boolean {
  for (const m of text.matchAll(JSON_STATUS)) {
    if (/headless/i.test(text.slice(Math.max(0, m.index - LOOKBEHIND), m.index))) return true;
  }
  return false;
}

/** The headless contract of one installed skill, or null when it has none. */
export async function headlessContract(skill: InstalledSkill): Promise<HeadlessContract | null> {
  const skillMd = await readSmall(path.join(skill.dir, 'SKILL.md'));
  if (skillMd === null) return null;
  const files: Array<{ rel: string; text: string }> = [];
  for (const rel of CONTRACT_FILES) {
    const text = await readSmall(path.join(skill.dir, rel));
    if (text !== null) files.push({ rel, text });
  }
  const texts: Array<{ rel: string; text: string }> = [{ rel: 'SKILL.md', text: skillMd }];
  for (const file of (await markdownIn(path.join(skill.dir, 'references'))).slice(0, MAX_FILES)) {
    const rel = `references/${path.basename(file)}`;
    if (files.some((f) => f.rel === rel)) continue;
    const text = await readSmall(file);
    if (text !== null) texts.push({ rel, text });
  }
  if (!files.length) {
    const declared = texts.filter((t) => headlessJsonBlock(t.text));
    if (!declared.length) return null;
    files.push(...declared);
  }
  const everything = [...files, ...texts];
  return {
    skill: skill.name,
    // prfaq (and retrospective) take a CLI-style argument; the others read "headless: true".
    flag: /(^|[\s`(])--headless\b/.test(skillMd) ? '--headless' : 'headless: true',
    intentRequired: everything.some((f) => /```json\s*\{[^`]*?"intent"\s*:/.test(f.text)),
    files: [...new Set(files.map((f) => `${skill.relDir}/${f.rel}`))],
  };
}

/** Every skill of the install that has a headless contract, by name. */
export async function headlessContracts(skills: readonly InstalledSkill[]): Promise<Map<string, HeadlessContract>> {
  const out = new Map<string, HeadlessContract>();
  for (const skill of skills) {
    if (skill.agent || out.has(skill.name)) continue;
    const contract = await headlessContract(skill);
    if (contract) out.set(skill.name, contract);
  }
  return out;
}
