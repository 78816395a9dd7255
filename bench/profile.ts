/**
 * `npx tsx bench/profile.ts [plain|tools3] [turns]` — CPU profile of the server over N sequential
 * turns (node --cpu-prof on `next start`), then the top self-time functions. A diagnostic for
 * what bench/run.ts reports, not part of `npm run bench`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { post, postJson } from './client';
import { makeFolders, snapshotBuild, startApp, startModel, treeCpuMs } from './proc';

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[] }

async function main() {
  const mode = (process.argv[2] ?? 'plain') as 'plain' | 'tools3';
  const turns = Number(process.argv[3] ?? 300);
  const profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-prof-'));
  const { appDir } = await snapshotBuild((s) => process.stderr.write(s + '\n'));
  const model = await startModel(5, 0);
  const folders = await makeFolders('bench-prof');
  const app = await startApp(appDir, folders, {
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'bench',
    OPENAI_MODEL: 'scripted',
  }, ['--cpu-prof', `--cpu-prof-dir=${profDir}`]).catch(async (e) => {
    await model.stop();
    throw e;
  });
  await postJson(`${model.control}/mode`, { mode });
  let conv: string | undefined;
  const c0 = treeCpuMs(app.pid);
  for (let i = 0; i < turns; i++) {
    const t = await post(app.url, '/api/chat', { agentId: 'product-lead', message: `bench#x-${i} hi`, stream: true, ...(conv && i % 4 ? { conversationId: conv } : {}) });
    if (t.error) throw new Error(t.error);
    conv = i % 4 ? conv : t.conversationId;
  }
  const c1 = treeCpuMs(app.pid);
  process.stderr.write(`CPU per turn: ${((c1.userMs + c1.sysMs - c0.userMs - c0.sysMs) / turns).toFixed(2)} ms\n`);
  await app.stop();
  await model.stop();
  const files = fs.readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
  for (const f of files) {
    const p = JSON.parse(fs.readFileSync(path.join(profDir, f), 'utf8')) as Profile;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    // Start-up (module loading) is not per-turn cost: count from the first sample inside a turn.
    const inTurn = (id: number) => {
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) if (byId.get(cur)!.callFrame.functionName === 'beginTurn') return true;
      return false;
    };
    const from = p.samples.findIndex(inTurn);
    const self = new Map<number, number>();
    p.samples.forEach((id, i) => {
      if (i >= from) self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
    });
    const total = [...self.values()].reduce((a, b) => a + b, 0);
    const agg = new Map<string, number>();
    const incl = new Map<string, number>();
    for (const [id, t] of self) {
      const n = byId.get(id)!;
      const key = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^.*\/(node_modules|\.next)\//, '$1/')}:${n.callFrame.lineNumber}`;
      agg.set(key, (agg.get(key) ?? 0) + t);
      const seen = new Set<string>();
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const m = byId.get(cur)!;
        const k = `${m.callFrame.functionName || '(anon)'} ${m.callFrame.url.replace(/^.*\/(node_modules|\.next)\//, '$1/')}:${m.callFrame.lineNumber}`;
        if (seen.has(k)) continue;
        seen.add(k);
        incl.set(k, (incl.get(k) ?? 0) + t);
      }
    }
    process.stdout.write(`\n== ${f}: ${(total / 1000).toFixed(0)} ms sampled after start-up, ${(total / 1000 / turns).toFixed(2)} ms per turn (idle included)\n-- self\n`);
    for (const [k, t] of [...agg.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40)) process.stdout.write(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${k}\n`);
    process.stdout.write('-- inclusive\n');
    for (const [k, t] of [...incl.entries()].sort((a, b) => b[1] - a[1]).slice(0, 90)) process.stdout.write(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${k}\n`);
  }
  fs.rmSync(appDir, { recursive: true, force: true });
  fs.rmSync(folders.root, { recursive: true, force: true });
  process.stderr.write(`profiles in ${profDir}\n`);
}

main().catch((e) => {
  process.stderr.write(String((e as Error).stack) + '\n');
  process.exit(1);
});
