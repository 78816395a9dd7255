import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ProjectMcpServer } from '@/types/api';
import { ProjectMcpTools } from './ProjectMcpTools';

let calls: string[];
let listed: ProjectMcpServer[];
let known: ProjectMcpServer[];
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });

beforeEach(() => {
  calls = [];
  known = [
    { name: 'corp', transport: 'stdio', state: 'idle', restarts: 0, tools: [] },
    { name: 'tracker', transport: 'http', state: 'down', problem: 'ECONNREFUSED', restarts: 1, tools: [{ name: 'tracker__create_issue', tool: 'create_issue', reference: 'tracker:create_issue' }] },
  ];
  listed = [
    { ...known[0]!, state: 'ready', tools: [{ name: 'corp__echo', tool: 'echo', reference: 'corp:echo' }, { name: 'corp__kb_search_1a2b3c', tool: 'kb.search', reference: 'corp:kb.search' }] },
    known[1]!,
  ];
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string) => {
    calls.push(url);
    if (url === '/api/projects/shop/mcp') return json(200, { success: true, data: { servers: known } });
    if (url === '/api/projects/shop/mcp?list=1') return json(200, { success: true, data: { servers: listed } });
    if (url === '/api/projects/plain/mcp') return json(200, { success: true, data: { servers: [] } });
    return json(404, { success: false, error: 'not found', code: 'E_PROJECT_NOT_FOUND' });
  });
});

it("shows each server's state without starting any; opening the list asks the servers for their tools", async () => {
  render(<ProjectMcpTools projectId="shop" />);
  const summary = await screen.findByText(/MCP tools: 2 servers, 1 tool/);
  expect(screen.getByText(/not started yet/)).toBeTruthy();
  expect(screen.getByText(/down \(ECONNREFUSED\), restarted 1×/)).toBeTruthy();
  expect(calls).toEqual(['/api/projects/shop/mcp']);

  await userEvent.click(summary);
  await waitFor(() => expect(screen.getByText('corp:echo')).toBeTruthy());
  expect(calls).toEqual(['/api/projects/shop/mcp', '/api/projects/shop/mcp?list=1']);
  expect(screen.getByText('corp:kb.search')).toBeTruthy();
  // A function name that had to change is shown beside the skills' name.
  expect(screen.getByText('corp__kb_search_1a2b3c')).toBeTruthy();
  expect(screen.getByRole('list', { name: 'Tools of tracker' })).toBeTruthy();
});

it('shows nothing for a project no MCP server serves, or when the list cannot be had', async () => {
  const { container, rerender } = render(<ProjectMcpTools projectId="plain" />);
  await waitFor(() => expect(calls).toEqual(['/api/projects/plain/mcp']));
  expect(container.innerHTML).toBe('');
  rerender(<ProjectMcpTools projectId="gone" />);
  await waitFor(() => expect(calls).toHaveLength(2));
  expect(container.innerHTML).toBe('');
});
