'use client';

import { useEffect, useId, useRef, useState } from 'react';
import type { AgentSummary, JourneyStatus, ProjectJourney as Journey } from '@/types/api';
import { api } from '../_lib/api';
import { Spinner } from './icons';

export interface ProjectJourneyProps {
  projectId: string;
  /** Virtual path of the project's output folder (`{project-root}/_bmad-output`): its documents open in the panel. */
  outputFolder: string | null;
  /** The config's document folders beyond the output folder (virtual paths). */
  documentFolders?: string[];
  agents: AgentSummary[];
  /** Bumped when documents may have changed. */
  refreshKey?: number;
  /** Opens a document of the output folder (path relative to it). */
  onOpenDocument: (outputRelativePath: string) => void;
  /** Starts an agent on a command in a new conversation. */
  onStart: (agentId: string, command: string) => void;
  /** The journey (or its error) is on screen: what comes below it can show without moving after. */
  onSettled?: () => void;
}

const STATUS_TEXT: Record<JourneyStatus, string> = { done: 'Done', started: 'Started', 'not-started': 'Not started' };

/**
 * `_bmad-output/planning-artifacts/prd.md` → `planning-artifacts/prd.md` when inside the output
 * folder; a document of another document folder keeps its path in the project, as the listing names it.
 */
function insideOutput(path: string, outputFolder: string | null, documentFolders: string[] = []): string | null {
  const base = outputFolder?.replace(/^\{project-root\}\/?/, '').replace(/\/+$/, '');
  if (documentFolders.some((f) => path.startsWith(`${f.replace(/^\{project-root\}\/?/, '')}/`))) return path;
  if (!base) return null;
  return path.startsWith(`${base}/`) ? path.slice(base.length + 1) : null;
}

/**
 * Where the project stands on its BMAD journey, as the install's own help catalog sees it: each
 * phase with its documents, and the steps to take next as buttons that start the right agent.
 */
export function ProjectJourney({ projectId, outputFolder, documentFolders, agents, refreshKey, onOpenDocument, onStart, onSettled }: ProjectJourneyProps) {
  const id = useId();
  const [journey, setJourney] = useState<Journey | null>(null);
  const [error, setError] = useState<string | null>(null);
  const settled = useRef(onSettled);
  settled.current = onSettled;

  useEffect(() => {
    const ctrl = new AbortController();
    setError(null);
    api.journey(projectId, ctrl.signal).then(
      (j) => {
        setJourney(j);
        settled.current?.();
      },
      (e: Error) => {
        if (e?.name === 'AbortError') return;
        setError(e?.message || 'Could not read the journey.');
        settled.current?.();
      },
    );
    return () => ctrl.abort();
  }, [projectId, refreshKey]);

  const agentName = (agentId: string) => agents.find((a) => a.id === agentId)?.name ?? agentId;

  return (
    <section className="journey" aria-labelledby={`${id}-t`} data-testid="project-journey">
      <h2 id={`${id}-t`} className="journey-title">
        Where the project stands
      </h2>
      {error ? (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      ) : !journey ? (
        <p className="msg-pending">
          <Spinner /> Reading the project…
        </p>
      ) : (
        <>
          {journey.next.length ? (
            <div className="journey-next" data-testid="journey-next">
              <h3 className="journey-subtitle">Next</h3>
              <ul>
                {journey.next.map((n) => (
                  <li key={`${n.agentId} ${n.command}`}>
                    <button
                      type="button"
                      className={`button journey-button${n.required ? ' button-primary' : ''}`}
                      data-testid="journey-next-button"
                      data-agent={n.agentId}
                      data-command={n.command}
                      onClick={() => onStart(n.agentId, n.command)}
                    >
                      <span>
                        {n.label} <span className="journey-with">with {agentName(n.agentId)}</span>
                      </span>
                      <span className="journey-command">{n.command}</span>
                    </button>
                    <p className="journey-why">
                      {n.required ? 'Required. ' : 'Optional. '}
                      {n.why.replace(/^(Required next in [^:.]*[:.]\s*|Optional, before [^:.]*[:.]\s*)/, '')}
                    </p>
                  </li>
                ))}
              </ul>
            </div>
          ) : null}
          <ol className="journey-phases">
            {journey.phases.map((p) => (
              <li key={p.id} className="journey-phase" data-testid="journey-phase" data-phase={p.id} data-status={p.status}>
                <h3 className="journey-phase-name">
                  {p.name} <span className={`journey-status journey-status-${p.status}`}>{STATUS_TEXT[p.status]}</span>
                </h3>
                {p.documents.length ? (
                  <ul className="journey-docs">
                    {p.documents.map((d) => {
                      const rel = insideOutput(d.path, outputFolder, documentFolders);
                      const name = d.path.split('/').pop() ?? d.path;
                      return (
                        <li key={d.path}>
                          {rel ? (
                            <button type="button" className="journey-doc" data-testid="journey-document" data-path={rel} onClick={() => onOpenDocument(rel)}>
                              <span className="journey-doc-name">{name}</span>
                              <span className="journey-doc-kind">
                                {d.kind}
                                {d.status === 'started' ? ' · draft' : ''}
                              </span>
                            </button>
                          ) : (
                            <span className="journey-doc">
                              <span className="journey-doc-name">{d.path}</span>
                              <span className="journey-doc-kind">{d.kind}</span>
                            </span>
                          )}
                        </li>
                      );
                    })}
                  </ul>
                ) : null}
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
