'use client';

import './build.css';
import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import type { WorkspaceView } from '../_lib/workspaces';
import { StartInWorkspaceDialog } from './StartInWorkspaceDialog';
import type { AgentSummary, ProjectDetail, ProjectView } from '@/types/api';
import { projectLabel } from '../_lib/projects';
import { Avatar } from './Avatar';
import { NewProjectDialog } from './NewProjectDialog';
import { ProjectMcpTools } from './ProjectMcpTools';
import { PlusIcon, RefreshIcon, Spinner } from './icons';

export function groupByBundle(agents: AgentSummary[]): [string, AgentSummary[]][] {
  const groups = new Map<string, AgentSummary[]>();
  for (const a of agents) {
    // A project's agents under its folder id: its project_name may be another copy's too.
    const key = a.projectId ?? a.bundleName;
    const list = groups.get(key) ?? [];
    list.push(a);
    groups.set(key, list);
  }
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function projectOptionText(p: ProjectView): string {
  return `${projectLabel(p)} — ${p.bmad.version ? `BMAD ${p.bmad.version}` : 'BMAD'}, ${plural(p.agentCount, 'agent')}`;
}

/** One doctor line (`file: severity: reason`) as its parts, to show the reason first. */
function doctorLine(line: string): { file: string; severity: string; reason: string } {
  const m = /^(.*?): (error|warning|note): (.*)$/s.exec(line);
  return m ? { file: m[1], severity: m[2], reason: m[3] } : { file: '', severity: 'warning', reason: line };
}

/**
 * The doctor's diagnosis of the chosen project: the same lines and count `npm run doctor` prints
 * for its folder, each reason first, then the file to open.
 */
function ProjectDoctor({ detail, error }: { detail: ProjectDetail | null; error: string | null }) {
  if (!detail) {
    return error ? (
      <p className="workspace-doctor" data-testid="project-doctor">
        Could not check the project: {error}
      </p>
    ) : (
      <p className="workspace-doctor" data-testid="project-doctor">
        <Spinner /> Checking the project…
      </p>
    );
  }
  if (detail.problems.length === 0) {
    return (
      <p className="workspace-doctor" data-testid="project-doctor">
        Doctor: no problems found.
      </p>
    );
  }
  return (
    <details className="workspace-problems" data-testid="project-problems">
      <summary>
        Doctor: <span data-testid="doctor-summary">{detail.doctor.summary}</span>
      </summary>
      <ul>
        {detail.problems.map((line, i) => {
          const p = doctorLine(line);
          return (
            <li key={i} className={`doctor-line doctor-${p.severity}`} data-testid="doctor-line" data-line={line}>
              <span className="doctor-severity">{p.severity === 'error' ? 'Error' : 'Warning'}:</span> {p.reason}
              {p.file ? (
                <>
                  {' '}
                  — in <code>{p.file}</code>
                </>
              ) : null}
            </li>
          );
        })}
      </ul>
      <p className="workspace-doctor-hint">
        The same check runs from a terminal: <code>npm run doctor -- &lt;project folder&gt;</code>.
      </p>
    </details>
  );
}

/** Where agents come from: the bundles, or one BMAD project whose agents share its documents. */
export interface ProjectChoice {
  projects: ProjectView[];
  loading: boolean;
  error: string | null;
  /** null: the bundles. */
  projectId: string | null;
  /** The chosen project's detail (the doctor's diagnosis); null while it loads. */
  detail?: ProjectDetail | null;
  detailError?: string | null;
  onChange: (projectId: string | null) => void;
  onCreated: (project: ProjectView) => void;
  onRetry: () => void;
}

function ProjectBar({ projects, loading, error, projectId, detail = null, detailError = null, onChange, onCreated, onRetry }: ProjectChoice) {
  const id = useId();
  const [creating, setCreating] = useState(false);
  const project = projects.find((p) => p.id === projectId);
  return (
    <div className="workspace" data-testid="workspace">
      <div className="workspace-bar">
        <label htmlFor={`${id}-ws`} className="workspace-label">
          Project
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
        </select>
        <button type="button" className="button" onClick={() => setCreating(true)}>
          <PlusIcon /> New project
        </button>
      </div>
      <div id={`${id}-meta`} className="workspace-meta">
        {project ? (
          <p>
            {project.name !== project.id ? (
              <>
                Named “{project.name}” in its BMAD config ·{' '}
              </>
            ) : null}
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
      {project ? <ProjectDoctor detail={detail} error={detailError} /> : null}
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
  workspace?: ProjectChoice;
  /** Shown between the project bar and the agents (a project's journey). */
  children?: ReactNode;
  /** Shown below the agents: what grows as it loads goes here, so no card moves once shown. */
  footer?: ReactNode;
  /** Offers "Start in a workspace" on each of a project's agents. */
  onPickInWorkspace?: (agent: AgentSummary, workspace: WorkspaceView) => void;
  /** The agents wait for what comes above them (the journey), so no card moves once shown. */
  holdCards?: boolean;
  /** Below the home's projects: the sample bundles, under a second-level heading. */
  asSection?: boolean;
}

/** An agent card's menu: "Start in a workspace". Escape closes it and gives the focus back. */
function AgentMenu({ agent, onStartInWorkspace }: { agent: AgentSummary; onStartInWorkspace: () => void }) {
  const [open, setOpen] = useState(false);
  const menuId = useId();
  const buttonRef = useRef<HTMLButtonElement>(null);
  const listRef = useRef<HTMLUListElement>(null);
  useEffect(() => {
    if (!open) return;
    listRef.current?.querySelector('button')?.focus();
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      e.preventDefault();
      setOpen(false);
      buttonRef.current?.focus();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);
  return (
    <div className="agent-menu">
      <button
        ref={buttonRef}
        type="button"
        className="icon-button agent-menu-button"
        aria-expanded={open}
        aria-controls={menuId}
        aria-label={`More for ${agent.name}`}
        data-testid="agent-menu"
        onClick={() => setOpen((o) => !o)}
      >
        <span aria-hidden="true">⋯</span>
      </button>
      {open ? (
        <ul id={menuId} ref={listRef} className="switch-agent-list agent-menu-list" aria-label={`Options for ${agent.name}`}>
          <li>
            <button
              type="button"
              className="switch-agent-item"
              data-testid="start-in-workspace"
              onClick={() => {
                setOpen(false);
                onStartInWorkspace();
              }}
            >
              Start in a workspace
            </button>
          </li>
        </ul>
      ) : null}
    </div>
  );
}

export function AgentPicker({ agents, loading: loadingAgents, error, onPick, onRetry, workspace, children, footer, holdCards = false, asSection = false, onPickInWorkspace }: AgentPickerProps) {
  const projectId = workspace?.projectId ?? null;
  const [startIn, setStartIn] = useState<AgentSummary | null>(null);
  const project = workspace?.projects.find((p) => p.id === projectId);
  const loading = loadingAgents || (holdCards && !error);
  const Heading = asSection ? 'h2' : 'h1';
  return (
    <section className={asSection ? 'picker picker-section' : 'picker'} aria-labelledby="picker-title">
      <Heading id="picker-title">{asSection ? 'Sample bundles' : 'Choose an agent'}</Heading>
      <p className="picker-lead">
        {projectId
          ? `The agents of ${project ? projectLabel(project) : projectId} share the project’s documents. Pick one to start a conversation.`
          : 'Each agent has its own expertise and commands. Pick one to start a conversation.'}
      </p>
      {workspace ? <ProjectBar {...workspace} /> : null}
      {/* Above the agents, as docs/bmad-projects.md describes it; its space is kept while it loads. */}
      {children ? <div className="picker-journey">{children}</div> : null}
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
      {(holdCards ? [] : groupByBundle(agents)).map(([bundle, list]) => (
        <section key={bundle} className="picker-group" aria-labelledby={`bundle-${bundle}`}>
          {asSection ? (
            <h3 id={`bundle-${bundle}`} className="picker-bundle">
              {bundle}
            </h3>
          ) : (
            <h2 id={`bundle-${bundle}`} className="picker-bundle">
              {bundle}
            </h2>
          )}
          <ul className="agent-grid">
            {list.map((a) => (
              <li key={a.id} className={onPickInWorkspace && a.projectId ? 'agent-with-menu' : undefined}>
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
                {onPickInWorkspace && a.projectId ? <AgentMenu agent={a} onStartInWorkspace={() => setStartIn(a)} /> : null}
              </li>
            ))}
          </ul>
        </section>
      ))}
      {footer}
      {startIn && startIn.projectId && onPickInWorkspace ? (
        <StartInWorkspaceDialog
          projectId={startIn.projectId}
          agentName={startIn.name}
          onCancel={() => setStartIn(null)}
          onChosen={(w) => {
            const a = startIn;
            setStartIn(null);
            onPickInWorkspace(a, w);
          }}
        />
      ) : null}
    </section>
  );
}
