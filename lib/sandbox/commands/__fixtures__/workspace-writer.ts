// Run by snapshot.test.ts in a separate process (node --import tsx): a file tool of another
// instance, sharing only the lock folder, writing into a workspace's checkout.
//   <lock folder> <checkout> <file inside> <content>
import fs from 'node:fs/promises';
import path from 'node:path';
import { setFileLockFolder } from '../../../core/paths';
import { withWorkspaceLock } from '../workspace-lock';

const [folder, checkout, file, content] = process.argv.slice(2);

async function main(): Promise<void> {
  setFileLockFolder(folder!);
  await withWorkspaceLock(checkout!, () => fs.writeFile(path.join(checkout!, file!), content!));
  process.stdout.write('done\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
