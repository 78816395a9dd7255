import type { ConversationDetail } from '@/types/api';
import { parseRoute, routeHref } from './route';
import { ApiError } from './api';
import { commandLog, commandOutcome, elapsedText, outputBlocks, parseUnifiedDiff, setupStart, workspaceActionError, workspaceNameProblem, workspaceStateText } from './workspaces';

describe('parseUnifiedDiff', () => {
  it('splits git diff output into files of numbered lines', () => {
    const text = [
      'diff --git a/src/a.js b/src/a.js',
      'index 1..2 100644',
      '--- a/src/a.js',
      '+++ b/src/a.js',
      '@@ -1,3 +1,3 @@',
      ' one',
      '-two',
      '+TWO',
      ' three',
      'diff --git a/new.txt b/new.txt',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/new.txt',
      '@@ -0,0 +1 @@',
      '+hello',
      'diff --git a/gone.txt b/gone.txt',
      'deleted file mode 100644',
      '--- a/gone.txt',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-bye',
      'diff --git a/img.png b/img.png',
      'Binary files a/img.png and b/img.png differ',
      'diff --git "a/sp ace.md" "b/sp ace.md"',
      '--- "a/sp ace.md"',
      '+++ "b/sp ace.md"',
      '@@ -1 +1 @@',
      '-x',
      '\\ No newline at end of file',
      '+y',
      '',
    ].join('\n');
    const files = parseUnifiedDiff(text);
    expect(files.map((f) => f.path)).toEqual(['src/a.js', 'new.txt', 'gone.txt', 'img.png', 'sp ace.md']);
    const a = files[0]!.lines.filter((l) => l.kind !== 'meta');
    expect(a).toEqual([
      { kind: 'hunk', text: '@@ -1,3 +1,3 @@' },
      { kind: 'context', text: 'one', oldNo: 1, newNo: 1 },
      { kind: 'del', text: 'two', oldNo: 2 },
      { kind: 'add', text: 'TWO', newNo: 2 },
      { kind: 'context', text: 'three', oldNo: 3, newNo: 3 },
    ]);
    expect(files[1]!.lines.find((l) => l.kind === 'add')).toEqual({ kind: 'add', text: 'hello', newNo: 1 });
    expect(files[2]!.lines.find((l) => l.kind === 'del')).toEqual({ kind: 'del', text: 'bye', oldNo: 1 });
    expect(files[3]!.binary).toBe(true);
    expect(files[4]!.lines.filter((l) => l.kind === 'add' || l.kind === 'del').map((l) => l.text)).toEqual(['x', 'y']);
  });

  it('takes linear time on a diff of many lines (200,000 lines in seconds, not the hours a quadratic pass would take)', () => {
    const lines = ['diff --git a/big b/big', '--- a/big', '+++ b/big', '@@ -1,1 +1,200000 @@'];
    for (let i = 0; i < 200_000; i++) lines.push(`+${'x'.repeat(20)}${i}`);
    const t = performance.now();
    const files = parseUnifiedDiff(lines.join('\n'));
    expect(performance.now() - t).toBeLessThan(5000);
    expect(files[0]!.lines).toHaveLength(200_004);
    expect(files[0]!.lines.filter((l) => l.kind === 'add')).toHaveLength(200_000);
  });
});

it('checks a workspace name as the server does', () => {
  expect(workspaceNameProblem('fix-sum_2.1')).toBeNull();
  expect(workspaceNameProblem('')).toMatch(/Give the workspace a name/);
  expect(workspaceNameProblem('a/b')).toMatch(/cannot be used/);
  expect(workspaceNameProblem('a b')).toMatch(/cannot be used/);
});

it("reads the command log from conversations' stored run_command calls", () => {
  const conv = {
    id: 'c1',
    messages: [
      { id: 'm1', role: 'user', content: 'go', timestamp: '2026-01-01T00:00:00Z' },
      {
        id: 'm2',
        role: 'assistant',
        content: '',
        timestamp: '2026-01-01T00:00:01Z',
        functionCalls: [
          { id: 'a', name: 'read_file', arguments: {}, result: {} },
          { id: 'b', name: 'run_command', arguments: { command: 'npm test', cwd: '{project-root}/pkg' }, result: { ok: true, exit_code: 1, stdout: 'FAIL', stderr: '', duration_ms: 900, stopped: null } },
          { id: 'c', name: 'run_command', arguments: { command: 'rm -rf /' }, result: { ok: false, error: 'Access denied' } },
        ],
      },
    ],
  } as unknown as ConversationDetail;
  const log = commandLog([conv]);
  expect(log).toHaveLength(2);
  expect(log[0]).toMatchObject({ conversationId: 'c1', command: 'npm test', cwd: '{project-root}/pkg', at: '2026-01-01T00:00:01Z' });
  expect(commandOutcome(log[0]!.result)).toBe('exit code 1 · 900 ms');
  expect(log[1]).toMatchObject({ command: 'rm -rf /', result: null, error: 'Access denied' });
});

it('keeps a new conversation’s workspace in the URL, only within a project', () => {
  const r = { kind: 'new' as const, agentId: 'dev', projectId: 'shop', workspaceId: 'ws_1' };
  expect(routeHref(r)).toBe('/?p=shop&agent=dev&ws=ws_1');
  expect(parseRoute('?p=shop&agent=dev&ws=ws_1')).toEqual(r);
  expect(parseRoute('?agent=dev&ws=ws_1')).toEqual({ kind: 'new', agentId: 'dev' });
});

describe('what the workspace screens say', () => {
  it('orders output by its transcript, else stdout then stderr, keeping the tail when long', () => {
    const transcript = [
      { stream: 'stdout' as const, text: 'one ' },
      { stream: 'stdout' as const, text: 'two\n' },
      { stream: 'stderr' as const, text: 'warn\n' },
      { stream: 'stdout' as const, text: 'three\n' },
    ];
    expect(outputBlocks({ stdout: 'x', stderr: 'y', transcript })).toEqual({
      ordered: true,
      omitted: 0,
      blocks: [
        { stream: 'stdout', text: 'one two\n' },
        { stream: 'stderr', text: 'warn\n' },
        { stream: 'stdout', text: 'three\n' },
      ],
    });
    expect(outputBlocks({ stdout: 'out', stderr: 'err' })).toEqual({ ordered: false, omitted: 0, blocks: [{ stream: 'stdout', text: 'out' }, { stream: 'stderr', text: 'err' }] });
    expect(outputBlocks({ stdout: '', stderr: 'err', transcript: [] }).blocks).toEqual([{ stream: 'stderr', text: 'err' }]);
    // Past the limit the earliest characters go, across chunks.
    expect(outputBlocks({ stdout: '', stderr: '', transcript }, 8)).toEqual({ ordered: true, omitted: 11, blocks: [{ stream: 'stderr', text: 'n\n' }, { stream: 'stdout', text: 'three\n' }] });
    expect(outputBlocks({ stdout: '', stderr: '' })).toEqual({ ordered: false, omitted: 0, blocks: [] });
  });

  it("says a workspace's state: ahead and behind while open, where it went once merged", () => {
    const w = { status: 'open' as const, base: 'main', ahead: 1, behind: 4 };
    expect(workspaceStateText(w)).toBe('1 ahead, 4 behind main');
    expect(workspaceStateText({ ...w, ahead: null })).toBe('');
    expect(workspaceStateText({ ...w, ahead: undefined, behind: undefined })).toBe('');
    expect(workspaceStateText({ ...w, status: 'merged', mergedCommit: 'a'.repeat(40), mergedInto: 'develop', mergedAt: '2026-01-01T00:00:00Z', mergedBy: 'Ada' }, () => 'yesterday')).toBe('Merged into develop at aaaaaaa yesterday by Ada');
    expect(workspaceStateText({ ...w, status: 'merged' })).toBe('Merged into main');
    expect(workspaceStateText({ ...w, status: 'discarded' })).toBe('Discarded');
  });

  it('counts a running clock and finds when a setup started', () => {
    expect([elapsedText(0), elapsedText(7_900), elapsedText(754_000), elapsedText(3_723_000), elapsedText(-5)]).toEqual(['0:00', '0:07', '12:34', '1:02:03', '0:00']);
    expect(setupStart({ status: 'running', startedAt: '2026-01-01T00:00:10Z', at: '2026-01-01T00:00:00Z' })).toBe(Date.parse('2026-01-01T00:00:10Z'));
    expect(setupStart({ status: 'running', at: '2026-01-01T00:00:00Z' })).toBe(Date.parse('2026-01-01T00:00:00Z'));
    expect(setupStart({ status: 'ok', at: '2026-01-01T00:00:00Z' })).toBeNull();
    expect(setupStart(null)).toBeNull();
  });

  it('says why a merge or discard was refused in words a person can act on', () => {
    const err = (code: string, extra: Record<string, unknown> = {}, message = 'refused') => new ApiError(message, code, 409, undefined, { code, ...extra });
    expect(workspaceActionError(err('E_MERGE_CONFLICT', { paths: ['a.js'] }), 'merge', 'main')).toEqual({ message: 'The merge into main conflicts; nothing was changed. Conflicting files:', paths: ['a.js'] });
    expect(workspaceActionError(err('E_BASE_DIRTY'), 'merge', 'main').message).toMatch(/^The project folder has uncommitted changes, so nothing was merged/);
    expect(workspaceActionError(err('E_GIT_LOCKED', { lock: '.git/refs/heads/main.lock' }), 'discard', 'main').message).toBe(
      'Git’s lock file .git/refs/heads/main.lock is in the project repository, so nothing was discarded: a git command that stopped halfway left it, or one is still running. When no git runs on the project, delete .git/refs/heads/main.lock, then discard again.',
    );
    expect(workspaceActionError(err('E_GIT_LOCKED', {}, 'A lock is left.'), 'merge', 'main').message).toBe('A lock is left. Nothing was changed.');
    expect(workspaceActionError(new Error('offline'), 'merge', 'main')).toEqual({ message: 'offline' });
  });
});
