'use client';

import { useEffect, useState } from 'react';
import type { ProjectMcpServer } from '@/types/api';
import { api } from '../_lib/api';
import { Spinner } from './icons';

const STATE_WORDS: Record<ProjectMcpServer['state'], string> = {
  idle: 'not started yet',
  connecting: 'connecting',
  ready: 'ready',
  down: 'down',
  unconfigured: 'not configured',
};

function stateText(s: ProjectMcpServer): string {
  return `${STATE_WORDS[s.state] ?? s.state}${s.problem ? ` (${s.problem})` : ''}${s.restarts ? `, restarted ${s.restarts}×` : ''}`;
}

/**
 * The MCP tools a project's agents may use, by server, with each server's state. Nothing shows
 * when no server serves the project. Opening the list reaches the servers not listed yet (as a
 * turn would), so merely choosing a project never starts one.
 */
export function ProjectMcpTools({ projectId }: { projectId: string }) {
  const [servers, setServers] = useState<ProjectMcpServer[] | null>(null);
  const [listing, setListing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [listError, setListError] = useState<string | null>(null);

  useEffect(() => {
    const ac = new AbortController();
    setServers(null);
    setError(null);
    setListError(null);
    api.projectMcp(projectId, false, ac.signal).then(setServers, (e: Error) => {
      if (e.name !== 'AbortError') setError(e.message);
    });
    return () => ac.abort();
  }, [projectId]);

  if (error) return null;
  if (!servers || servers.length === 0) return null;
  const toolCount = servers.reduce((n, s) => n + s.tools.length, 0);

  const onToggle = (open: boolean) => {
    if (!open || listing || servers.every((s) => s.tools.length > 0 || s.state === 'unconfigured')) return;
    setListing(true);
    setListError(null);
    api
      .projectMcp(projectId, true)
      .then(setServers, (e: Error) => setListError(e.message))
      .finally(() => setListing(false));
  };

  return (
    <details className="workspace-problems project-mcp" data-testid="project-mcp" onToggle={(e) => onToggle((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>
        MCP tools: {servers.length} {servers.length === 1 ? 'server' : 'servers'}
        {toolCount ? `, ${toolCount} ${toolCount === 1 ? 'tool' : 'tools'}` : ''}
      </summary>
      {listing ? (
        <p role="status">
          <Spinner /> Asking the servers for their tools…
        </p>
      ) : null}
      {listError ? <p role="alert">Could not ask the servers for their tools: {listError}</p> : null}
      <ul>
        {servers.map((s) => (
          <li key={s.name}>
            <strong>{s.name}</strong> ({s.transport === 'http' ? 'HTTP' : 'stdio'}): {stateText(s)}
            {s.tools.length ? (
              <ul aria-label={`Tools of ${s.name}`}>
                {s.tools.map((t) => (
                  <li key={t.name}>
                    <code>{t.reference}</code>
                    {t.name !== `${s.name}__${t.tool}` ? (
                      <>
                        {' '}
                        (called <code>{t.name}</code>)
                      </>
                    ) : null}
                  </li>
                ))}
              </ul>
            ) : null}
          </li>
        ))}
      </ul>
    </details>
  );
}
