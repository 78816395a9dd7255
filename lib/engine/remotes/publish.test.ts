import { hideFolders, pullRequestBody } from './publish';

describe('the pull request body', () => {
  const root = '/srv/bmad/data/projects/shop';
  it('names no server folder, whatever an agent wrote in a commit subject or a command', () => {
    const body = pullRequestBody({
      storyKey: '1-1-login',
      storyFile: '_bmad-output/implementation-artifacts/1-1-login.md',
      workspace: { name: 'login', branch: 'bmad/login', base: 'main' },
      commits: [{ sha: 'a'.repeat(40), subject: `Read ${root}/.env and ${root}/../secrets`, author: `agent ${root}` }],
      commands: [{ command: `cd ${root}/app && npm test`, exitCode: 0 }],
      hide: [root, `${root}/`, '/srv/bmad/data/projects', '/'],
    });
    expect(body).not.toContain('/srv/bmad');
    expect(body).toContain('./.env');
    expect(body).toContain('| `cd ./app && npm test` | 0 |');
  });

  it('a folder inside another is taken out whole, the longest first', () => {
    expect(hideFolders('/a/b/c/x and /a/b/y', ['/a/b', '/a/b/c'])).toBe('./x and ./y');
    // "/" alone would take every slash out: not a folder to hide.
    expect(hideFolders('a/b', ['/'])).toBe('a/b');
  });

  it('a command cannot break out of its table cell or its code span', () => {
    const body = pullRequestBody({ storyKey: null, storyFile: null, workspace: { name: 'w', branch: 'bmad/w', base: 'main' }, commits: [], commands: [{ command: 'jest | x `rm -rf /`\n| evil | 1 |', exitCode: 1 }] });
    const row = body.split('\n').find((l) => l.includes('jest'))!;
    expect(row).toBe("| `jest \\| x 'rm -rf /' \\| evil \\| 1 \\|` | 1 |");
  });
});
