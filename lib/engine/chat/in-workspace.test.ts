import { syncNotes, turnCommitMessage } from './in-workspace';

describe('the turn commit', () => {
  it('is titled after the story or the request, with the agent; one bounded line; the turn in the body', () => {
    const turn = { agent: 'bmad-agent-dev', conversationId: 'conv-1', request: 'Add the flagFromName helper\nand tests', turnId: 'msg-1' };
    expect(turnCommitMessage(turn, { key: '1-2-flag-from-name', title: 'flagFromName helper' })).toBe('Story 1-2: flagFromName helper — bmad-agent-dev\n\nStory: 1-2-flag-from-name\nConversation: conv-1\nTurn: msg-1\nAgent: bmad-agent-dev\n');
    expect(turnCommitMessage(turn).split('\n')[0]).toBe('Add the flagFromName helper — bmad-agent-dev');
    const long = turnCommitMessage({ ...turn, request: `\n\n${'word '.repeat(200)}\u0007\r\n` }).split('\n')[0]!;
    expect(long.length).toBeLessThanOrEqual(100);
    expect(long).toMatch(/^word word .*… — bmad-agent-dev$/);
    expect(turnCommitMessage({ ...turn, request: '' }).split('\n')[0]).toBe('Agent turn — bmad-agent-dev');
    expect(turnCommitMessage(turn, { key: '3-1-x', title: `evil\ntitle ${'x'.repeat(300)}` }).split('\n')[0]!.length).toBeLessThanOrEqual(100);
    expect(turnCommitMessage(turn)).not.toContain('Changes of an agent turn');
  });
});

describe('the notes of a turn\'s sync', () => {
  it('name the method paths left out, and a branch not carried with why', () => {
    const dropped = { head: 'h', committed: true, synced: true, dropped: { commits: 2, shas: ['a', 'b'], paths: ['_bmad/core/x.md', '.claude/skills/bmad-dev/SKILL.md'], more: true } };
    const [note] = syncNotes(dropped, 'bmad/story-1');
    expect(note).toMatch(/^2 commit\(s\) .*installed BMAD method \(`_bmad\/core\/x.md`, `.claude\/skills\/bmad-dev\/SKILL.md`, …\).*left out of the project's branch bmad\/story-1/);
    const refused = { head: 'h', committed: false, synced: false, refused: { code: 'E_TOO_LARGE' as const, message: 'too big.' } };
    expect(syncNotes(refused, 'bmad/story-1')).toEqual(["The workspace's work was not carried to the project's branch bmad/story-1: too big."]);
    expect(syncNotes({ head: 'h', committed: true, synced: true }, 'bmad/story-1')).toEqual([]);
  });
});
