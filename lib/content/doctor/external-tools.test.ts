import { externalReferences } from './external-tools';

const refs = (key: string, entries: unknown[], section = 'workflow') => externalReferences({ [section]: { [key]: entries } }).map((r) => `${r.key} ${r.server}:${r.tool}`);

describe("the MCP tools BMAD's customize.toml entries name", () => {
  it("finds server:tool in BMAD's own examples", () => {
    expect(
      refs('external_handoffs', [
        "After finalize, upload prd.md and addendum.md to Confluence via corp:confluence_upload (space_key='PROD', parent_page='PRDs', label='prd', author={user_name}).",
        "Mirror the PRD to Notion via notion:create_page (database_id='abc123', title='PRD: '+{project_name}).",
        'When the PRD references a parent initiative, link via corp:jira_link on the epic key in frontmatter.',
      ]),
    ).toEqual(['external_handoffs corp:confluence_upload', 'external_handoffs notion:create_page', 'external_handoffs corp:jira_link']);
    expect(refs('external_sources', ["When researching internal product context, consult corp:kb_search (database='product-docs') before web search."], 'agent')).toEqual(['external_sources corp:kb_search']);
  });

  it('leaves out file: and skill: entries, URLs, times, words before a colon and a sentence end', () => {
    expect(
      refs('external_sources', [
        'file:{project-root}/docs/sources.md',
        'skill:bmad-research',
        'See https://wiki.example.com/page or mailto:team@example.com.',
        'Daily sync at 10:30; Note: ask first.',
        'Use kb:search.',
        42,
        { not: 'text' },
      ]),
    ).toEqual(['external_sources kb:search']);
    expect(externalReferences({ workflow: { other_key: ['corp:x'] } })).toEqual([]);
  });

  it('stays linear on hostile entries', () => {
    const started = performance.now();
    expect(refs('external_sources', ['a'.repeat(100_000) + ':', ':'.repeat(50_000), 'x:'.repeat(20_000)])).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
