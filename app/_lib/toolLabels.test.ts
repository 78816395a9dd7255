import { mcpToolOf, toolLabel, toolStatusText } from './toolLabels';

describe('MCP tool calls', () => {
  it('name the server and the tool', () => {
    expect(toolLabel('corp__confluence_upload', { title: 'PRD' }, 'running')).toEqual({ verb: 'Calling', target: 'confluence_upload', suffix: 'on corp' });
    expect(toolLabel('everything__get-env', {}, 'done', { ok: true, server: 'everything', tool: 'get-env', content: '{}' })).toEqual({ verb: 'Called', target: 'get-env', suffix: 'on everything' });
    expect(toolLabel('web__echo', {}, 'failed')).toMatchObject({ verb: 'Could not call', target: 'echo', suffix: 'on web' });
    expect(toolStatusText('corp__jira_link')).toBe('Running jira_link on corp…');
  });

  it("use the result's real tool name when the function name had to change", () => {
    expect(toolLabel('corp__kb_search_1a2b3c', {}, 'done', { ok: true, server: 'corp', tool: 'kb.search' })).toMatchObject({ target: 'kb.search', suffix: 'on corp' });
  });

  it('leave the built-in tools alone', () => {
    expect(mcpToolOf('read_file')).toBeNull();
    expect(mcpToolOf('spawn_subagent')).toBeNull();
    expect(toolLabel('read_file', { file_path: '{output_folder}/prd.md' }, 'done')).toMatchObject({ verb: 'Read', target: 'prd.md' });
    expect(toolLabel('mystery_tool', {}, 'done')).toEqual({ verb: 'Called', target: 'mystery_tool' });
  });
});
