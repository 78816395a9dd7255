/**
 * The README and the reference in docs/ held to the code: links and anchors resolve, the
 * configuration table names exactly the variables the server reads, and every status paired with
 * an error code is the status the server answers with it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { statusOf, type ApiErrorCode } from '@/lib/errors';

const ROOT = path.resolve(__dirname, '..');
const DOCS = path.join(ROOT, 'docs');
const read = (file: string) => fs.readFileSync(file, 'utf8');
const docFiles = () => fs.readdirSync(DOCS).filter((f) => f.endsWith('.md')).map((f) => path.join(DOCS, f));
const pages = () => [path.join(ROOT, 'README.md'), path.join(ROOT, 'ARCHITECTURE.md'), ...docFiles()];
const rel = (file: string) => path.relative(ROOT, file);

/** Prose only: what stands in fenced code blocks is an example, not a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6} +(.+)$/gm)) {
    out.add(m[1].trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-'));
  }
  return out;
}

/** Source files the server and its CLIs run (tests excluded). */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|tsx|js|mjs)$/.test(e.name) && !/\.test\.tsx?$/.test(e.name)) out.push(p);
    }
  };
  for (const dir of ['lib', 'app', 'scripts']) walk(path.join(ROOT, dir));
  return [...out, path.join(ROOT, 'proxy.ts'), path.join(ROOT, 'instrumentation.ts')];
}

describe('README and docs', () => {
  it('every relative link names a file that exists, and every anchor a heading of it', () => {
    const broken: string[] = [];
    let links = 0;
    for (const file of pages()) {
      for (const m of prose(read(file)).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/i.test(target)) continue;
        links++;
        const [where, anchor] = target.split('#');
        const to = where ? path.resolve(path.dirname(file), where) : file;
        if (!fs.existsSync(to)) broken.push(`${rel(file)}: ${target} (no such file)`);
        else if (anchor && !anchors(read(to)).has(anchor)) broken.push(`${rel(file)}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
    expect(links).toBeGreaterThan(30);
  });

  it('the README links every file of docs/', () => {
    const readme = read(path.join(ROOT, 'README.md'));
    const unlinked = docFiles().map((f) => `docs/${path.basename(f)}`).filter((f) => !readme.includes(`](${f})`));
    expect(unlinked).toEqual([]);
  });

  it('the configuration table names exactly the variables the server reads', () => {
    const text = read(path.join(DOCS, 'configuration.md'));
    const table = text.slice(text.indexOf('| variable |'), text.indexOf('\n\n', text.indexOf('| variable |')));
    const documented = new Set([...table.matchAll(/`([A-Z][A-Z0-9_]{2,})`/g)].map((m) => m[1]));
    const read_ = new Map<string, string>();
    for (const file of sources()) {
      for (const m of read(file).matchAll(/\benv(?:\.([A-Z][A-Z0-9_]+)|\[['"]([A-Z][A-Z0-9_]+)['"]\])/g)) {
        const name = m[1] ?? m[2];
        if (!read_.has(name)) read_.set(name, rel(file));
      }
    }
    // Read by the platform or by the CLIs (documented with them, in docs/operations.md and
    // docs/headless-runs.md), not server configuration.
    const notConfiguration = ['NODE_ENV', 'NEXT_RUNTIME', 'NEXT_PHASE', 'PATH', 'INIT_CWD', 'GIT_CONFIG_COUNT', 'BMAD_TOKEN', 'BMAD_URL', 'SMOKE_TIMEOUT_MS'];
    const undocumented = [...read_].filter(([name]) => !documented.has(name) && !notConfiguration.includes(name)).map(([n, f]) => `${n} (${f})`);
    expect(undocumented).toEqual([]);
    // A variable named in the table that nothing reads is a promise the server does not keep.
    const unread = [...documented].filter((name) => !read_.has(name));
    expect(unread).toEqual([]);
    for (const name of ['BMAD_TOKEN', 'BMAD_URL']) expect(docFiles().filter((f) => read(f).includes(`\`${name}\``))).not.toEqual([]);
    expect(read_.size).toBeGreaterThan(40);
  });

  it('every status written beside an error code is the status the server answers with it', () => {
    const wrong: string[] = [];
    let pairs = 0;
    for (const file of [path.join(ROOT, 'README.md'), ...docFiles()]) {
      for (const m of read(file).matchAll(/\b([1-5]\d\d)\s*`?\s*(E_[A-Z0-9_]+)/g)) {
        const status = statusOf(m[2] as ApiErrorCode);
        if (status === undefined) continue;
        pairs++;
        if (status !== Number(m[1])) wrong.push(`${rel(file)}: ${m[1]} ${m[2]} (the server answers ${status})`);
      }
    }
    expect(wrong).toEqual([]);
    expect(pairs).toBeGreaterThan(20);
  });

  it('every error code the docs name exists in the code', () => {
    const code = sources().map(read).join('\n');
    const unknown = new Set<string>();
    for (const file of [path.join(ROOT, 'README.md'), ...docFiles()]) {
      for (const m of read(file).matchAll(/\bE_[A-Z0-9_]+/g)) if (!code.includes(`'${m[0]}'`) && !code.includes(`"${m[0]}"`)) unknown.add(`${rel(file)}: ${m[0]}`);
    }
    expect([...unknown]).toEqual([]);
  });
});
