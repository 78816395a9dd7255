// Run by sprint.test.ts in a separate process (node --import tsx): a second server instance
// changing stories of the same sprint status, sharing only the lock folder and the repository.
//   <lock folder> <project root> <artifacts> <by> <key>=<status> ...
import { setFileLockFolder } from '../../../core/paths/file-lock';
import { setStoryStatus } from '../status';

const [folder, root, artifacts, by, ...changes] = process.argv.slice(2);

async function main(): Promise<void> {
  setFileLockFolder(folder!);
  await Promise.all(
    changes.map((c) => {
      const [key, status] = c.split('=');
      return setStoryStatus({ root: root!, artifacts: artifacts!, baseBranch: 'main' }, key, status, { name: by! });
    }),
  );
  process.stdout.write('ok\n');
}

main().catch((e) => {
  process.stderr.write(String((e as Error)?.stack ?? e));
  process.exit(1);
});
