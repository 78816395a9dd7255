import { githubOperation, githubRequestProblem } from './github-openapi';

// The judge the fake GitHub uses must refuse what GitHub's description does not allow, or the
// forge tests could not fail on a wrong request.
describe("GitHub's OpenAPI description as a judge of requests", () => {
  const q = (s = '') => new URLSearchParams(s);
  it('allows the requests the GitHub client makes', () => {
    expect(githubRequestProblem('POST', '/repos/team/app/pulls', q(), { title: 't', head: 'bmad/x', base: 'main', body: 'b', draft: false })).toBeNull();
    expect(githubRequestProblem('PATCH', '/repos/team/app/pulls/3', q(), { title: 't', body: 'b' })).toBeNull();
    expect(githubRequestProblem('GET', '/repos/team/app/pulls', q('state=open&head=team:bmad/x&base=main&per_page=10'), undefined)).toBeNull();
    expect(githubRequestProblem('GET', '/repos/team/app/commits/abc/check-runs', q('per_page=100'), undefined)).toBeNull();
    expect(githubOperation('POST', '/repos/team/app/pulls')).toBe('pulls/create');
  });

  it('refuses unknown paths, methods, query parameters, values and body fields', () => {
    expect(githubRequestProblem('GET', '/repos/team/app/merge_requests', q(), undefined)).toMatch(/no such path/);
    expect(githubRequestProblem('DELETE', '/repos/team/app/pulls/3', q(), undefined)).toMatch(/no such operation/);
    expect(githubRequestProblem('GET', '/repos/team/app/pulls', q('source_branch=x'), undefined)).toMatch(/not described/);
    expect(githubRequestProblem('GET', '/repos/team/app/pulls', q('state=opened'), undefined)).toMatch(/not one of/);
    expect(githubRequestProblem('POST', '/repos/team/app/pulls', q(), { title: 't', head: 'h', base: 'main', description: 'b' })).toMatch(/does not match/);
    expect(githubRequestProblem('POST', '/repos/team/app/pulls', q(), { title: 't', base: 'main' })).toMatch(/does not match/);
    expect(githubRequestProblem('PATCH', '/repos/team/app/pulls/3', q(), { draft: true })).toMatch(/does not match/);
    expect(githubRequestProblem('POST', '/repos/team/app/pulls', q(), undefined)).toMatch(/required/);
  });
});
