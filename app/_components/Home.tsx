'use client';

import { useEffect, useState, type MouseEvent } from 'react';
import type { ProjectJourney, ProjectView } from '@/types/api';
import { api } from '../_lib/api';
import { dateTime, relativeTime } from '../_lib/format';
import { projectLabel } from '../_lib/projects';
import { routeHref } from '../_lib/route';
import { RefreshIcon, Spinner } from './icons';

const ROLE_TEXT = { owner: 'Owner', editor: 'Editor', viewer: 'Viewer (read only)' } as const;

/** Where a project's journey stands, in one line: the phase under way and the step to take next. */
export function journeyLine(j: ProjectJourney): { phase: string | null; next: string | null } {
  const phases = j.phases.filter((p) => p.id !== 'anytime');
  const current = phases.find((p) => p.status === 'started') ?? phases.find((p) => p.status === 'not-started') ?? null;
  const allDone = phases.length > 0 && phases.every((p) => p.status === 'done');
  const first = j.next.find((n) => n.required) ?? j.next[0];
  return { phase: allDone ? 'Every phase done' : (current?.name ?? null), next: first ? first.label : null };
}

/** Read only once the card is on screen, so the list itself stays a cheap call. */
function JourneyStage({ projectId }: { projectId: string }) {
  const [state, setState] = useState<{ line?: ReturnType<typeof journeyLine>; failed?: boolean }>({});
  useEffect(() => {
    const ctrl = new AbortController();
    api.journey(projectId, ctrl.signal).then(
      (j) => setState({ line: journeyLine(j) }),
      (e: Error) => e?.name !== 'AbortError' && setState({ failed: true }),
    );
    return () => ctrl.abort();
  }, [projectId]);
  if (state.failed) return <span className="home-stage">Journey not available</span>;
  if (!state.line)
    return (
      <span className="home-stage">
        <Spinner /> Reading the journey…
      </span>
    );
  const { phase, next } = state.line;
  return (
    <span className="home-stage" data-testid="home-stage">
      {phase ? <>Now: {phase}</> : 'Not started'}
      {next ? <> · Next: {next}</> : null}
    </span>
  );
}

export interface HomeProps {
  projects: ProjectView[];
  loading: boolean;
  error: string | null;
  onOpen: (projectId: string) => void;
  onRetry: () => void;
}

/** The first screen: the projects this person can see, each with where it stands; the sample bundles come below. */
export function Home({ projects, loading, error, onOpen, onRetry }: HomeProps) {
  const open = (id: string) => (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    onOpen(id);
  };
  return (
    <section className="home" aria-labelledby="home-title" data-testid="home">
      <h1 id="home-title">Your projects</h1>
      {error ? (
        <p className="notice notice-error" role="alert">
          Could not load the projects: {error}{' '}
          <button type="button" className="link-button" onClick={onRetry}>
            <RefreshIcon /> Retry
          </button>
        </p>
      ) : null}
      {/* The list keeps its place while it loads, so the bundles below never jump. */}
      <div className="home-projects" aria-busy={loading || undefined}>
        {loading && projects.length === 0 ? (
          <p className="msg-pending">
            <Spinner /> Loading projects…
          </p>
        ) : projects.length === 0 && !error ? (
          <p className="notice notice-info" data-testid="home-empty">
            No projects yet. Create one with New project below, or ask an admin to add you to your team’s project.
          </p>
        ) : (
          <ul className="home-list">
            {projects.map((p) => (
              <li key={p.id} className="home-card" data-testid="home-project" data-project-id={p.id}>
                <a className="home-link" href={routeHref({ kind: 'picker', projectId: p.id })} onClick={open(p.id)}>
                  <span className="home-name">{projectLabel(p)}</span>
                </a>
                <span className="home-meta">
                  BMAD {p.bmad.version ?? '(version unknown)'} · {p.agentCount} agent{p.agentCount === 1 ? '' : 's'}
                  {p.role ? <> · {ROLE_TEXT[p.role]}</> : null}
                </span>
                <JourneyStage projectId={p.id} />
                <span className="home-activity" data-testid="home-activity">
                  {p.lastActivity ? (
                    <>
                      Last activity <time dateTime={p.lastActivity} title={dateTime(p.lastActivity)}>{relativeTime(p.lastActivity)}</time>
                    </>
                  ) : (
                    'No conversations yet'
                  )}
                </span>
              </li>
            ))}
          </ul>
        )}
      </div>
    </section>
  );
}
