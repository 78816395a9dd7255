import crypto from 'node:crypto';
import { forgeWebhooks, readEvent, webhookKind } from './webhooks';

const body = Buffer.from(JSON.stringify({ action: 'closed', number: 3, pull_request: { number: 3, state: 'closed', merged: true, merge_commit_sha: 'b'.repeat(40), head: { sha: 'a'.repeat(40) } } }));
const hmac = (secret: string, b: Uint8Array) => crypto.createHmac('sha256', secret).update(b).digest('hex');

describe('webhook verification', () => {
  it('GitHub: X-Hub-Signature-256 over the raw body, nothing else', () => {
    const v = forgeWebhooks.github;
    expect(v.verify(new Headers({ 'x-hub-signature-256': `sha256=${hmac('s3cret', body)}` }), body, 's3cret')).toBe(true);
    expect(v.verify(new Headers({ 'x-hub-signature-256': `sha256=${hmac('other', body)}` }), body, 's3cret')).toBe(false);
    expect(v.verify(new Headers({ 'x-hub-signature-256': `sha256=${hmac('s3cret', body)}` }), Buffer.concat([body, Buffer.from(' ')]), 's3cret')).toBe(false);
    expect(v.verify(new Headers({ 'x-hub-signature-256': hmac('s3cret', body) }), body, 's3cret')).toBe(false);
    expect(v.verify(new Headers({ 'x-hub-signature': `sha1=${crypto.createHmac('sha1', 's3cret').update(body).digest('hex')}` }), body, 's3cret')).toBe(false);
    expect(v.verify(new Headers(), body, 's3cret')).toBe(false);
    expect(v.deliveryId(new Headers({ 'x-github-delivery': 'd-1' }))).toBe('d-1');
  });

  it('GitLab: X-Gitlab-Token is the secret itself', () => {
    const v = forgeWebhooks.gitlab;
    expect(v.verify(new Headers({ 'x-gitlab-token': 's3cret' }), body, 's3cret')).toBe(true);
    expect(v.verify(new Headers({ 'x-gitlab-token': 's3cre' }), body, 's3cret')).toBe(false);
    expect(v.verify(new Headers(), body, 's3cret')).toBe(false);
    expect(v.deliveryId(new Headers({ 'x-gitlab-event-uuid': 'u-1' }))).toBe('u-1');
  });

  it('Gitea and Forgejo: the bare hex HMAC in X-Gitea-Signature (or X-Forgejo-Signature)', () => {
    const v = forgeWebhooks.gitea;
    expect(v.verify(new Headers({ 'x-gitea-signature': hmac('s3cret', body) }), body, 's3cret')).toBe(true);
    expect(v.verify(new Headers({ 'x-forgejo-signature': hmac('s3cret', body) }), body, 's3cret')).toBe(true);
    expect(v.verify(new Headers({ 'x-gitea-signature': hmac('s3cret', Buffer.from('{}')) }), body, 's3cret')).toBe(false);
  });

  it('tells the forges apart (Gitea sends a GitHub header too) and reads only what the board acts on', () => {
    expect(webhookKind(new Headers({ 'x-gitea-event': 'pull_request', 'x-github-event': 'pull_request' }))).toBe('gitea');
    expect(webhookKind(new Headers({ 'x-github-event': 'pull_request' }))).toBe('github');
    expect(webhookKind(new Headers({ 'x-gitlab-event': 'Merge Request Hook' }))).toBe('gitlab');
    expect(webhookKind(new Headers())).toBeNull();
    expect(readEvent('github', new Headers({ 'x-github-event': 'pull_request' }), JSON.parse(body.toString()))).toEqual({ type: 'pull-request', number: 3, state: 'merged', headSha: 'a'.repeat(40), url: null, draft: null, mergeCommit: 'b'.repeat(40), repository: null, headRef: null });
    expect(readEvent('gitlab', new Headers({ 'x-gitlab-event': 'Merge Request Hook' }), { object_kind: 'merge_request', object_attributes: { iid: 4, state: 'closed' } })).toMatchObject({ type: 'pull-request', number: 4, state: 'closed', mergeCommit: null });
    expect(readEvent('gitea', new Headers({ 'x-gitea-event': 'status' }), { sha: 'abc1234' })).toEqual({ type: 'checks', sha: 'abc1234' });
    // A "commit" that would walk the API's paths is not one.
    expect(readEvent('gitea', new Headers({ 'x-gitea-event': 'status' }), { sha: '../../admin' })).toEqual({ type: 'ignored', event: 'status' });
    expect(readEvent('github', new Headers({ 'x-github-event': 'push' }), {})).toEqual({ type: 'ignored', event: 'push' });
  });

  it('a signed delivery is still a stranger\'s text: links only http(s), ids only strings, its repository and head read', () => {
    const gh = readEvent('github', new Headers({ 'x-github-event': 'pull_request' }), { repository: { full_name: 'team/app' }, pull_request: { number: 2, state: 'open', html_url: 'javascript:alert(1)', head: { sha: { $gt: '' }, ref: 'bmad/x' } } });
    expect(gh).toMatchObject({ type: 'pull-request', url: null, headSha: null, repository: 'team/app', headRef: 'bmad/x' });
    const gl = readEvent('gitlab', new Headers({ 'x-gitlab-event': 'Merge Request Hook' }), { object_kind: 'merge_request', project: { path_with_namespace: 'group/sub/app' }, object_attributes: { iid: 4, state: 'opened', url: 'data:text/html,x', source_branch: 'bmad/y', last_commit: { id: 'c'.repeat(40) } } });
    expect(gl).toMatchObject({ url: null, headSha: 'c'.repeat(40), repository: 'group/sub/app', headRef: 'bmad/y' });
    const gt = readEvent('gitea', new Headers({ 'x-gitea-event': 'pull_request' }), { repository: { full_name: 'o/r' }, pull_request: { number: 5, html_url: 'https://git.example.com/o/r/pulls/5', head: { ref: 'bmad/z' } } });
    expect(gt).toMatchObject({ url: 'https://git.example.com/o/r/pulls/5', repository: 'o/r', headRef: 'bmad/z' });
  });

  it('compares tokens and signatures whatever their length (no throw on a short or long one)', () => {
    for (const sig of ['', 'a', 'sha256=', `sha256=${'0'.repeat(64)}`, `sha256=${'0'.repeat(65)}`, 'x'.repeat(100_000)]) {
      expect(forgeWebhooks.github.verify(new Headers({ 'x-hub-signature-256': sig }), body, 's3cret')).toBe(false);
      expect(forgeWebhooks.gitea.verify(new Headers({ 'x-gitea-signature': sig }), body, 's3cret')).toBe(false);
      expect(forgeWebhooks.gitlab.verify(new Headers({ 'x-gitlab-token': sig }), body, 's3cret')).toBe(false);
    }
  });
});
