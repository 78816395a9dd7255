'use client';

import { useId, useState } from 'react';
import type { AgentSummary, ProjectView } from '@/types/api';
import { Avatar } from './Avatar';
import { NewProjectDialog } from './NewProjectDialog';
import { ProjectMcpTools } from './ProjectMcpTools';
import { PlusIcon, RefreshIcon, Spinner } from './icons';

export function groupByBundle(agents: AgentSummary[]): [string, AgentSummary[]][] {
  const groups = new Map<string, AgentSummary[]>();
  for (const a of agents) {
    const list = groups.get(a.bundleName) ?? [];
    list.push(a);
    groups.set(a.bundleName, list);
  }
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function projectOptionText(p: ProjectView): string {
  return `${p.name} (${p.bmad.version ? `BMAD ${p.bmad.version}` : 'BMAD'}, ${plural(p.agentCount, 'agent')})`;
}

/** Where agents come from: the bundles, or one BMAD project whose agents share its documents. */
export interface WorkspaceChoice {
  projects: ProjectView[];
  loading: boolean;
  error: string | null;
  /** null: the bundles. */
  projectId: string | null;
  onChange: (projectId: string | null) => void;
  onCreated: (project: ProjectView) => void;
  onRetry: () => void;
}

function WorkspaceBar({ projects, loading, error, projectId, onChange, onCreated, onRetry }: WorkspaceChoice) {
  const id = useId();
  const [creating, setCreating] = useState(false);
  const project = projects.find((p) => p.id === projectId);
  return (
    <div className="workspace" data-testid="workspace">
      <div className="workspace-bar">
        <label htmlFor={`${id}-ws`} className="workspace-label">
          Workspace
        </label>
        <select id={`${id}-ws`} className="workspace-select" value={projectId ?? ''} onChange={(e) => onChange(e.target.value || null)} aria-describedby={`${id}-meta`}>
          <option value="">Bundles</option>
          {projects.length > 0 ? (
            <optgroup label="Projects">
              {projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {projectOptionText(p)}
                </option>
              ))}
            </optgroup>
          ) : null}
          {/* A project named by the URL but not (yet) listed still shows as chosen. */}
          {projectId && !project ? <option value={projectId}>{projectId}</option> : null}
        </select>
        <button type="button" className="button" onClick={() => setCreating(true)}>
          <PlusIcon /> New project
        </button>
      </div>
      <div id={`${id}-meta`} className="workspace-meta">
        {project ? (
          <p>
            BMAD {project.bmad.version ?? '(version unknown)'}
            {project.bmad.modules.length ? ` · ${project.bmad.modules.join(', ')}` : ''} · {plural(project.agentCount, 'agent')} · documents in{' '}
            <code>{project.outputFolder}</code>
          </p>
        ) : !projectId ? (
          <p>Agents from the installed bundles; each conversation keeps its own files.</p>
        ) : null}
        {loading ? (
          <p>
            <Spinner /> Loading projects…
          </p>
        ) : null}
      </div>
      {error ? (
        <p className="workspace-error" role="alert">
          Could not load the projects: {error}{' '}
          <button type="button" className="link-button" onClick={onRetry}>
            <RefreshIcon /> Retry
          </button>
        </p>
      ) : null}
      {project && project.problems.length > 0 ? (
        <details className="workspace-problems" data-testid="project-problems">
          <summary>{plural(project.problems.length, 'setup problem')}</summary>
          <ul>
            {project.problems.map((p, i) => (
              <li key={i}>{p}</li>
            ))}
          </ul>
        </details>
      ) : null}
      {project ? <ProjectMcpTools projectId={project.id} /> : null}
      {creating ? (
        <NewProjectDialog
          onCancel={() => setCreating(false)}
          onCreated={(p) => {
            setCreating(false);
            onCreated(p);
          }}
        />
      ) : null}
    </div>
  );
}

export interface AgentPickerProps {
  agents: AgentSummary[];
  loading: boolean;
  error: string | null;
  onPick: (agent: AgentSummary) => void;
  onRetry: () => void;
  /** Without it the picker offers the bundles' agents only. */
  workspace?: WorkspaceChoice;
}

export function AgentPicker({ agents, loading, error, onPick, onRetry, workspace }: AgentPickerProps) {
  const projectId = workspace?.projectId ?? null;
  const project = workspace?.projects.find((p) => p.id === projectId);
  return (
    <section className="picker" aria-labelledby="picker-title">
      <h1 id="picker-title">Choose an agent</h1>
      <p className="picker-lead">
        {projectId
          ? `The agents of ${project?.name ?? projectId} share the project’s documents. Pick one to start a conversation.`
          : 'Each agent has its own expertise and commands. Pick one to start a conversation.'}
      </p>
      {workspace ? <WorkspaceBar {...workspace} /> : null}
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
        <p className="notice notice-info">
          {projectId
            ? 'This project has no agents. Its BMAD install may be incomplete; see its setup problems.'
            : 'No agents are available. Add a bundle under BUNDLES_ROOT (default bmad/custom/bundles) and reload.'}
        </p>
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
                  <Avatar icon={a.icon} name={a.name} className="agent-icon" />
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
