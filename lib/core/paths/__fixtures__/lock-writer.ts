// Run by file-lock.test.ts in separate processes (node --import tsx): writers of one file that
// share only the lock folder, as two server instances on one volume do.
//   count <lock folder> <file> <n>        n read-increment-write cycles on a counter file
//   document <lock folder> <work root> <gitdir> <name> <n>
//                                         n writes of one document, each recorded as a version
//                                         with the content it replaced (as the write tools do)
//   hold <lock folder> <file>             takes the lock, says "held", keeps it until killed
import fs from 'node:fs/promises';
import path from 'node:path';
import { setFileLockFolder, withFileLock } from '../file-lock';
import { openVersionStore } from '../../../content/versions';

const [mode, folder, ...rest] = process.argv.slice(2);
const pause = () => new Promise((r) => setTimeout(r, Math.random() * 3));

async function main(): Promise<void> {
  setFileLockFolder(folder!);
  if (mode === 'count') {
    const [file, n] = rest;
    for (let i = 0; i < Number(n); i++) {
      await withFileLock(file!, async () => {
        const value = Number(await fs.readFile(file!, 'utf8').catch(() => '0'));
        await pause();
        await fs.writeFile(file!, String(value + 1));
      });
    }
  } else if (mode === 'document') {
    const [work, gitdir, name, n] = rest;
    const store = await openVersionStore({ gitdir: gitdir!, workRoot: work! });
    const doc = path.join(work!, 'prd.md');
    for (let i = 0; i < Number(n); i++) {
      await withFileLock(doc, async () => {
        const previous = await fs.readFile(doc).catch(() => null);
        await pause();
        const content = Buffer.from(`# PRD\n\nwritten by ${name}, write ${i}\n`);
        await fs.writeFile(doc, content);
        await store.record({ path: 'prd.md', content, previous, author: { agentId: name!, conversationId: `conv-${name}` } });
      });
    }
  } else if (mode === 'hold') {
    const [file] = rest;
    await withFileLock(file!, async () => {
      process.stdout.write('held\n');
      setInterval(() => undefined, 1000);
      await new Promise(() => undefined);
    });
  }
  process.stdout.write('done\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
