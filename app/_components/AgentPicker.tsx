'use client';

import type { AgentSummary } from '@/types/api';
import { Spinner } from './icons';

export function groupByBundle(agents: AgentSummary[]): [string, AgentSummary[]][] {
  const groups = new Map<string, AgentSummary[]>();
  for (const a of agents) {
    const list = groups.get(a.bundleName) ?? [];
    list.push(a);
    groups.set(a.bundleName, list);
  }
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
}

export interface AgentPickerProps {
  agents: AgentSummary[];
  loading: boolean;
  error: string | null;
  onPick: (agent: AgentSummary) => void;
  onRetry: () => void;
}

export function AgentPicker({ agents, loading, error, onPick, onRetry }: AgentPickerProps) {
  return (
    <section className="picker" aria-labelledby="picker-title">
      <h1 id="picker-title">Choose an agent</h1>
      <p className="picker-lead">Each agent has its own expertise and commands. Pick one to start a conversation.</p>
      {loading ? (
        <p className="msg-pending" role="status">
          <Spinner /> Loading agents…
        </p>
      ) : null}
      {error ? (
        <div className="notice notice-error" role="alert">
          <p>Could not load the agents: {error}</p>
          <button type="button" className="button" onClick={onRetry}>
            Try again
          </button>
        </div>
      ) : null}
      {!loading && !error && agents.length === 0 ? (
        <p className="notice notice-info">No agents are available. Add a bundle under BUNDLES_ROOT (default bmad/custom/bundles) and reload.</p>
      ) : null}
      {groupByBundle(agents).map(([bundle, list]) => (
        <section key={bundle} className="picker-group" aria-labelledby={`bundle-${bundle}`}>
          <h2 id={`bundle-${bundle}`} className="picker-bundle">
            {bundle}
          </h2>
          <ul className="agent-grid">
            {list.map((a) => (
              <li key={a.id}>
                <button type="button" className="agent-card" data-testid="agent-card" data-agent-id={a.id} onClick={() => onPick(a)}>
                  <span className="agent-icon" aria-hidden="true">
                    {a.icon || '🤖'}
                  </span>
                  <span className="agent-text">
                    <span className="agent-name">{a.name}</span>
                    <span className="agent-title">{a.title}</span>
                    {a.description ? <span className="agent-desc">{a.description}</span> : null}
                    {a.commands.length > 0 ? (
                      <span className="agent-meta">
                        {a.commands.length} command{a.commands.length === 1 ? '' : 's'}
                      </span>
                    ) : null}
                  </span>
                </button>
              </li>
            ))}
          </ul>
        </section>
      ))}
    </section>
  );
}
