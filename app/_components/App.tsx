'use client';

import { useCallback, useEffect, useRef, useState } from 'react';
import type { AgentSummary, ConversationDetail, HealthData } from '@/types/api';
import { api } from '../_lib/api';
import { parseRoute, routeHref, type Route } from '../_lib/route';
import { AgentPicker } from './AgentPicker';
import { ChatView } from './ChatView';
import { LlmNotice } from './LlmNotice';
import { OutputsPanel } from './OutputsPanel';
import { Sidebar } from './Sidebar';
import { FilesIcon, MenuIcon } from './icons';

const WIDE = '(min-width: 1100px)';

export function App() {
  // null until mounted: the URL is only known in the browser, and the server render must match.
  const [route, setRoute] = useState<Route | null>(null);
  const [sessionKey, setSessionKey] = useState(0);
  const [agents, setAgents] = useState<AgentSummary[]>([]);
  const [agentsLoading, setAgentsLoading] = useState(true);
  const [agentsError, setAgentsError] = useState<string | null>(null);
  const [health, setHealth] = useState<HealthData | null>(null);
  const [detailAgentId, setDetailAgentId] = useState<string | null>(null);
  const [sidebarOpen, setSidebarOpen] = useState(false);
  const [outputsOpen, setOutputsOpen] = useState(false);
  const [listVersion, setListVersion] = useState(0);
  const [outputsVersion, setOutputsVersion] = useState(0);
  const [outputsCount, setOutputsCount] = useState(0);

  const loadAgents = useCallback(async () => {
    setAgentsLoading(true);
    try {
      setAgents(await api.agents());
      setAgentsError(null);
    } catch (e) {
      setAgentsError((e as Error).message);
    } finally {
      setAgentsLoading(false);
    }
  }, []);

  useEffect(() => {
    setRoute(parseRoute(window.location.search));
    const wide = window.matchMedia?.(WIDE);
    setOutputsOpen(wide?.matches ?? false);
    // Crossing the breakpoint: wide layouts show outputs beside the chat, narrow ones as an overlay.
    const onWide = (e: MediaQueryListEvent) => setOutputsOpen(e.matches);
    wide?.addEventListener?.('change', onWide);
    const onPop = () => {
      setRoute(parseRoute(window.location.search));
      setSessionKey((k) => k + 1);
      setDetailAgentId(null);
    };
    window.addEventListener('popstate', onPop);
    void loadAgents();
    api.health().then(setHealth, () => setHealth(null));
    return () => {
      window.removeEventListener('popstate', onPop);
      wide?.removeEventListener?.('change', onWide);
    };
  }, [loadAgents]);

  const navigate = useCallback((next: Route) => {
    window.history.pushState(null, '', routeHref(next));
    setRoute(next);
    setSessionKey((k) => k + 1);
    setDetailAgentId(null);
    setSidebarOpen(false);
  }, []);

  const routeRef = useRef(route);
  routeRef.current = route;
  const onConversationCreated = useCallback((id: string) => {
    // Same view keeps streaming; only the URL and the list learn the new id.
    window.history.replaceState(null, '', routeHref({ kind: 'conversation', id }));
    const r = routeRef.current;
    if (r?.kind === 'new') setDetailAgentId(r.agentId);
    setRoute({ kind: 'conversation', id });
    setListVersion((v) => v + 1);
  }, []);

  const onDetailLoaded = useCallback((d: ConversationDetail) => setDetailAgentId(d.agentId), []);
  const onOutputsChanged = useCallback(() => setOutputsVersion((v) => v + 1), []);
  const onTurnEnd = useCallback(() => {
    setOutputsVersion((v) => v + 1);
    setListVersion((v) => v + 1);
  }, []);

  const conversationId = route?.kind === 'conversation' ? route.id : null;
  const agentId = route?.kind === 'new' ? route.agentId : detailAgentId;
  const agent = agents.find((a) => a.id === agentId);

  useEffect(() => {
    document.title = agent ? `${agent.name} — BMAD Orchestrator` : 'BMAD Orchestrator';
  }, [agent]);

  useEffect(() => {
    if (!sidebarOpen && !outputsOpen) return;
    const onKey = (e: KeyboardEvent) => {
      // Escape closes the overlay panels on small screens; wide layouts ignore it for outputs.
      if (e.key !== 'Escape' || e.defaultPrevented) return;
      if (sidebarOpen) setSidebarOpen(false);
      else if (!window.matchMedia?.(WIDE).matches) setOutputsOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [sidebarOpen, outputsOpen]);

  const newAgentUnknown = route?.kind === 'new' && !agentsLoading && !agent;

  return (
    <div className="app" data-sidebar-open={sidebarOpen} data-outputs-open={outputsOpen}>
      <a className="skip-link" href="#main">
        Skip to conversation
      </a>
      <aside id="sidebar" className="sidebar">
        <Sidebar
          currentId={conversationId}
          agents={agents}
          refreshKey={listVersion}
          onSelect={(id) => navigate({ kind: 'conversation', id })}
          onNew={() => navigate({ kind: 'picker' })}
          onDeleted={(id) => {
            if (id === conversationId) navigate({ kind: 'picker' });
          }}
          onClose={() => setSidebarOpen(false)}
        />
      </aside>
      {sidebarOpen ? <div className="scrim" onClick={() => setSidebarOpen(false)} aria-hidden="true" /> : null}
      <div className="main-col">
        <header className="topbar">
          <button
            type="button"
            className="icon-button sidebar-toggle"
            aria-label="Open conversations"
            aria-controls="sidebar"
            aria-expanded={sidebarOpen}
            onClick={() => setSidebarOpen(true)}
            data-testid="sidebar-toggle"
          >
            <MenuIcon />
          </button>
          <div className="topbar-title">
            {agent && route?.kind !== 'picker' ? (
              <>
                <span className="topbar-icon" aria-hidden="true">
                  {agent.icon || '🤖'}
                </span>
                <span className="topbar-text">
                  <span className="topbar-name">{agent.name}</span>
                  <span className="topbar-sub">{agent.title}</span>
                </span>
              </>
            ) : (
              <span className="topbar-name">BMAD Orchestrator</span>
            )}
          </div>
          {route && route.kind !== 'picker' ? (
            <button
              type="button"
              className="icon-button outputs-toggle"
              aria-label={outputsOpen ? 'Hide outputs' : `Show outputs${outputsCount ? ` (${outputsCount} files)` : ''}`}
              aria-controls="outputs"
              aria-expanded={outputsOpen}
              onClick={() => setOutputsOpen((o) => !o)}
              data-testid="outputs-toggle"
            >
              <FilesIcon />
              {outputsCount > 0 ? <span className="badge" aria-hidden="true">{outputsCount}</span> : null}
            </button>
          ) : null}
        </header>
        <LlmNotice health={health} />
        <main id="main" className="main" tabIndex={-1}>
          {route === null ? null : route.kind === 'picker' || newAgentUnknown ? (
            <>
              {newAgentUnknown ? <p className="notice notice-warn">The agent “{route.kind === 'new' ? route.agentId : ''}” was not found. Pick another one.</p> : null}
              <AgentPicker agents={agents} loading={agentsLoading} error={agentsError} onPick={(a) => navigate({ kind: 'new', agentId: a.id })} onRetry={() => void loadAgents()} />
            </>
          ) : (
            <ChatView
              key={sessionKey}
              conversationId={route.kind === 'conversation' ? route.id : null}
              agentId={route.kind === 'new' ? route.agentId : null}
              agents={agents}
              onConversationCreated={onConversationCreated}
              onDetailLoaded={onDetailLoaded}
              onOutputsChanged={onOutputsChanged}
              onTurnEnd={onTurnEnd}
              onNewConversation={() => navigate({ kind: 'picker' })}
            />
          )}
        </main>
      </div>
      {outputsOpen && route && route.kind !== 'picker' ? <div className="scrim scrim-outputs" onClick={() => setOutputsOpen(false)} aria-hidden="true" /> : null}
      {route && route.kind !== 'picker' ? (
        <aside id="outputs" className="outputs" hidden={!outputsOpen}>
          <OutputsPanel conversationId={conversationId} version={outputsVersion} onClose={() => setOutputsOpen(false)} onCount={setOutputsCount} />
        </aside>
      ) : null}
    </div>
  );
}
