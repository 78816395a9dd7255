import type { PathContext } from '../../core/paths';
import { fileExists, joinVirtual } from './files';
import { expandText, type VariableSources } from './variables';

// A quoted or backticked file reference with a folder part: `./steps/step-01.md`, '../data/x.csv',
// `steps/step-01-session-setup.md`. Bare names stay: they are as often prose as paths.
const RELATIVE_REF = /([`'"])((?:\.{1,2}\/)?(?:[\w.-]+\/)+[\w.-]+\.(?:md|ya?ml|xml|json|csv|txt))\1/g;
const FENCED = /^(```|~~~)/;

/** Fenced code blocks are examples and templates the model copies: their text stays as written. */
function splitFences(text: string): Array<{ code: boolean; text: string }> {
  const parts: Array<{ code: boolean; text: string }> = [];
  let current: string[] = [];
  let inCode = false;
  for (const line of text.split(/(?<=\n)/)) {
    if (FENCED.test(line.trimStart())) {
      if (!inCode) {
        if (current.length) parts.push({ code: false, text: current.join('') });
        current = [line];
        inCode = true;
      } else {
        current.push(line);
        parts.push({ code: true, text: current.join('') });
        current = [];
        inCode = false;
      }
      continue;
    }
    current.push(line);
  }
  if (current.length) parts.push({ code: inCode, text: current.join('') });
  return parts;
}

/** Each relative file reference outside code blocks that names an existing file, as its full virtual path. */
async function absoluteRefs(text: string, baseDir: string, ctx: PathContext): Promise<string> {
  const found = new Map<string, string | null>();
  for (const part of splitFences(text)) {
    if (part.code) continue;
    for (const m of part.text.matchAll(RELATIVE_REF)) {
      const ref = m[2];
      if (found.has(ref)) continue;
      const joined = joinVirtual(baseDir, ref, ctx);
      found.set(ref, joined.ok && (await fileExists(joined.path, ctx)) ? joined.path : null);
    }
  }
  if (![...found.values()].some(Boolean)) return text;
  return splitFences(text)
    .map((part) => (part.code ? part.text : part.text.replace(RELATIVE_REF, (all, q: string, ref: string) => (found.get(ref) ? `${q}${found.get(ref)}${q}` : all))))
    .join('');
}

/**
 * A file's text as the model should read it: the variables its workflow defines expanded and its
 * relative file references made full virtual paths, so following it never needs a relative read.
 */
export async function resolveContent(text: string, sources: VariableSources, variables: Record<string, unknown>, baseDir: string): Promise<string> {
  return absoluteRefs(expandText(text, sources, variables), baseDir, sources.ctx);
}
