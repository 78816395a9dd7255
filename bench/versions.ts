/**
 * `npx tsx bench/versions.ts [--n 200]` — what versioning costs a write: record() of a 10 kB
 * document in a shadow repository, and save_output with and without the recordWrite hook.
 * Reports, never asserts.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ToolContext } from '../lib/engine/tools/types';
import { fmt, percentile, summary } from './stats';

// Before lib/core/log is loaded (below, by import()), which reads it once.
process.env.LOG_LEVEL ??= 'silent';

const i = process.argv.indexOf('--n');
const N = i > 0 && Number(process.argv[i + 1]) > 0 ? Number(process.argv[i + 1]) : 200;
const author = { agentId: 'pm', conversationId: 'bench' };
const doc = (k: number) => Buffer.from(`# PRD revision ${k}\n${'The product shall do what the brief says. '.repeat(240)}\n`.slice(0, 10_240));

async function timeEach(n: number, fn: (k: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    const t = performance.now();
    await fn(k);
    out.push(performance.now() - t);
  }
  return out;
}

function line(name: string, ms: number[]): string {
  const s = summary(ms);
  const p90 = percentile([...ms].sort((a, b) => a - b), 90);
  return `| ${name} | ${s.n} | ${fmt(s.median)} | ${fmt(p90)} | ${fmt(s.mean)} | ${fmt(s.max)} |`;
}

async function main() {
  const { DEFAULT_LIMITS } = await import('../lib/core/config');
  const { executeTool } = await import('../lib/engine/tools');
  const { openVersionStore, recorderFor } = await import('../lib/content/versions');
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-bench-versions-')));
  try {
    const work = path.join(base, 'project', '_bmad-output');
    await fs.mkdir(work, { recursive: true });
    const store = await openVersionStore({ gitdir: path.join(base, 'data', 'versions', 'p'), workRoot: work });
    const rows: string[] = [];

    const first = await timeEach(1, (k) => store.record({ path: 'docs/prd.md', content: doc(k), author }));
    rows.push(line('record(), first version of a file', first));
    rows.push(line('record(), 10 kB, one file, next versions', await timeEach(N, (k) => store.record({ path: 'docs/prd.md', content: doc(k + 1), author, previous: doc(k) }))));
    rows.push(line('record(), 10 kB, 50 files in 5 folders', await timeEach(N, (k) => store.record({ path: `epics/e${k % 5}/story-${k % 50}.md`, content: doc(k), author }))));
    rows.push(line(`list() of a file with ${N + 1} versions`, await timeEach(20, () => store.list('docs/prd.md'))));
    const versions = await store.list('docs/prd.md');
    rows.push(line('read() of one version', await timeEach(50, (k) => store.read('docs/prd.md', versions[k % versions.length].version))));
    rows.push(line('diff() of two versions', await timeEach(50, (k) => store.diff('docs/prd.md', versions[k + 1].version, versions[k].version))));

    const ctx = (recordWrite?: ToolContext['recordWrite']): ToolContext => ({
      conversationId: 'bench',
      agentId: 'pm',
      bundleRoot: path.join(base, 'bundle'),
      coreRoot: path.join(base, 'core'),
      projectRoot: path.join(base, 'project'),
      outputRoot: work,
      variables: {},
      limits: { ...DEFAULT_LIMITS },
      recordWrite,
    });
    const content = doc(0).toString();
    const save = (c: ToolContext, file: string) => executeTool({ id: 'b', name: 'save_output', arguments: JSON.stringify({ file_path: file, content }) }, c);
    rows.push(line('save_output 10 kB, no hook', await timeEach(N, () => save(ctx(), 'plain.md'))));
    rows.push(line('save_output 10 kB, recordWrite → store', await timeEach(N, () => save(ctx(recorderFor(store, author)), 'versioned.md'))));

    process.stdout.write(
      `load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, ${os.cpus().length} cores\n\n` +
        '| operation | n | median ms | p90 ms | mean ms | max ms |\n|---|---|---|---|---|---|\n' +
        rows.join('\n') +
        '\n',
    );
  } finally {
    await fs.rm(base, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
