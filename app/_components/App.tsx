'use client';

import { useCallback, useEffect, useRef, useState } from 'react';
import type { AgentSummary, ConversationDetail, HealthData, ModelProfileView, ProjectDetail, ProjectView } from '@/types/api';
import { ApiError, api, fileUrl, projectFileUrl } from '../_lib/api';
import { outputRelativePath } from '../_lib/documents';
import { formatCost, plural } from '../_lib/format';
import { byProjectId, projectLabel, projectSubtitle, withCommandMarks } from '../_lib/projects';
import { parseRoute, routeHref, type Route } from '../_lib/route';
import { AgentPicker } from './AgentPicker';
import { Board } from './Board';
import { Avatar } from './Avatar';
import { ChatView } from './ChatView';
import { DocumentPanel } from './DocumentPanel';
import { Home } from './Home';
import { NotFound } from './NotFound';
import { LlmNotice } from './LlmNotice';
import { OutputsPanel } from './OutputsPanel';
import { ProjectJourney } from './ProjectJourney';
import { ProjectBuild } from './ProjectBuild';
import { Sidebar } from './Sidebar';
import { ExportMenu } from './ExportMenu';
import { FilesIcon, MenuIcon } from './icons';
import { AccountMenu } from './AccountMenu';
import { ShareToggle } from './ShareToggle';

const WIDE = '(min-width: 1100px)';

/** The agents of one workspace: '' for the bundles, else a project id. */
interface AgentsState {
  key: string | null;
  list: AgentSummary[];
  error: string | null;
  loading: boolean;
  /** The project the URL names does not exist for this person. */
  notFound?: boolean;
}


export function App() {
  // null until mounted: the URL is only known in the browser, and the server render must match.
  const [route, setRoute] = useState<Route | null>(null);
  const [sessionKey, setSessionKey] = useState(0);
  const [agentsState, setAgentsState] = useState<AgentsState>({ key: null, list: [], error: null, loading: true });
  const [projects, setProjects] = useState<ProjectView[]>([]);
  const [projectsLoading, setProjectsLoading] = useState(true);
  const [projectsError, setProjectsError] = useState<string | null>(null);
  const [health, setHealth] = useState<HealthData | null>(null);
  const [detailAgentId, setDetailAgentId] = useState<string | null>(null);
  const [sidebarOpen, setSidebarOpen] = useState(false);
  const [outputsOpen, setOutputsOpen] = useState(false);
  const [listVersion, setListVersion] = useState(0);
  const [outputsVersion, setOutputsVersion] = useState(0);
  const [outputsCount, setOutputsCount] = useState(0);
  const [models, setModels] = useState<ModelProfileView[]>([]);
  const [wide, setWide] = useState(false);
  /** The document open beside (or over) the chat; it follows the agent's writes while open. */
  const [doc, setDoc] = useState<{ path: string; version: number } | null>(null);
  /** The chosen project's detail: the doctor's lines, its broken menu items, its total cost. */
  const [projectDetail, setProjectDetail] = useState<{ id: string; detail: ProjectDetail | null; error: string | null } | null>(null);
  /** A journey step's command, sent as the first message of the new conversation it opened. */
  const [pendingCommand, setPendingCommand] = useState<string | null>(null);
  /** The project's help command ("What next?"), when its install has one. */
  const [help, setHelp] = useState<{ projectId: string; command: string | null } | null>(null);
  const [journeyVersion, setJourneyVersion] = useState(0);
  /** The project whose journey is on screen: its agents show once it is, below it, and stay put. */
  const [journeySettled, setJourneySettled] = useState<string | null>(null);
  /** An edit with unsaved changes is open: an agent's write does not swap the document under it. */
  const docDirty = useRef(false);
  const [docChanges, setDocChanges] = useState(0);

  const loadAgents = useCallback(async (projectId: string | null, signal?: AbortSignal) => {
    const key = projectId ?? '';
    setAgentsState((s) => ({ key, list: s.key === key ? s.list : [], error: null, loading: true }));
    try {
      const list = await api.agents(projectId, signal);
      if (!signal?.aborted) setAgentsState({ key, list, error: null, loading: false });
    } catch (e) {
      if ((e as Error)?.name === 'AbortError' || signal?.aborted) return;
      const notFound = e instanceof ApiError && e.code === 'E_PROJECT_NOT_FOUND';
      setAgentsState({ key, list: [], error: notFound ? 'this project is not available.' : (e as Error).message, loading: false, notFound });
    }
  }, []);

  const loadProjects = useCallback(async () => {
    setProjectsLoading(true);
    try {
      setProjects((await api.projects()).sort(byProjectId));
      setProjectsError(null);
    } catch (e) {
      setProjectsError((e as Error).message);
    } finally {
      setProjectsLoading(false);
    }
  }, []);

  useEffect(() => {
    setRoute(parseRoute(window.location.search));
    const wide = window.matchMedia?.(WIDE);
    setOutputsOpen(wide?.matches ?? false);
    setWide(wide?.matches ?? false);
    // Crossing the breakpoint: wide layouts show outputs beside the chat, narrow ones as an overlay.
    const onWide = (e: MediaQueryListEvent) => {
      setOutputsOpen(e.matches);
      setWide(e.matches);
    };
    wide?.addEventListener?.('change', onWide);
    const onPop = () => {
      setRoute(parseRoute(window.location.search));
      setSessionKey((k) => k + 1);
      setDetailAgentId(null);
    };
    window.addEventListener('popstate', onPop);
    void loadProjects();
    api.health().then(setHealth, () => setHealth(null));
    // A server without model profiles has nothing to choose from: no picker.
    api.models().then(setModels, () => setModels([]));
    return () => {
      window.removeEventListener('popstate', onPop);
      wide?.removeEventListener?.('change', onWide);
    };
  }, [loadProjects]);

  const ready = route !== null;
  const projectId = route?.projectId ?? null;
  const workspaceKey = projectId ?? '';
  useEffect(() => {
    if (!ready) return;
    const ctrl = new AbortController();
    void loadAgents(projectId, ctrl.signal);
    return () => ctrl.abort();
  }, [ready, projectId, loadAgents]);

  // Read again when a turn ends: the project's total cost moved, and its documents may have.
  useEffect(() => {
    if (!ready || !projectId) return;
    const ctrl = new AbortController();
    api.project(projectId, ctrl.signal).then(
      (detail) => setProjectDetail({ id: projectId, detail, error: null }),
      (e: Error) => {
        if (e?.name !== 'AbortError') setProjectDetail((d) => ({ id: projectId, detail: d?.id === projectId ? d.detail : null, error: e.message }));
      },
    );
    return () => ctrl.abort();
  }, [ready, projectId, listVersion]);
  const detail = projectDetail && projectDetail.id === projectId ? projectDetail : null;
  useEffect(() => {
    if (!ready || !projectId) return;
    const ctrl = new AbortController();
    api.journey(projectId, ctrl.signal).then(
      (j) => setHelp({ projectId, command: j.help?.command ?? null }),
      () => undefined,
    );
    return () => ctrl.abort();
  }, [ready, projectId]);
  const helpCommand = help && help.projectId === projectId ? help.command : null;

  // A stale list of another workspace never shows: its agent ids could match this one's.
  const agents = withCommandMarks(agentsState.key === workspaceKey ? agentsState.list : [], detail?.detail?.agents);
  const agentsLoading = agentsState.key !== workspaceKey || agentsState.loading;
  const agentsError = agentsState.key === workspaceKey ? agentsState.error : null;
  // A project this person cannot see is a page of its own, and never enters the project list.
  const projectMissing = !!projectId && agentsState.key === workspaceKey && !!agentsState.notFound;
  const project = projects.find((p) => p.id === projectId);
  const projectName = project ? projectLabel(project) : (projectId ?? undefined);
  const projectSub = project ? projectSubtitle(project) : undefined;
  const projectCost = detail?.detail?.usage.cost;

  const navigate = useCallback((next: Route) => {
    // Leaving the page's document with unsaved edits asks first.
    if (docDirty.current && !window.confirm('Your edits to the open document are not saved. Leave without saving them?')) return;
    docDirty.current = false;
    window.history.pushState(null, '', routeHref(next));
    setRoute(next);
    setSessionKey((k) => k + 1);
    setDetailAgentId(null);
    setSidebarOpen(false);
    setDoc(null);
    setPendingCommand(null);
  }, []);

  const routeRef = useRef(route);
  routeRef.current = route;
  const onConversationCreated = useCallback((id: string) => {
    // Same view keeps streaming; only the URL and the list learn the new id.
    const r = routeRef.current;
    const next: Route = { kind: 'conversation', id, ...(r?.projectId ? { projectId: r.projectId } : {}) };
    window.history.replaceState(null, '', routeHref(next));
    if (r?.kind === 'new') setDetailAgentId(r.agentId);
    setRoute(next);
    setListVersion((v) => v + 1);
  }, []);

  const onDetailLoaded = useCallback((d: ConversationDetail) => {
    setDetailAgentId(d.agentId);
    // A project's conversation opened without its project (an old link, the full list): restore it
    // in place, so the open view keeps its state and the URL reloads into the right project.
    const r = routeRef.current;
    if (r?.kind === 'conversation' && typeof d.projectId === 'string' && d.projectId && d.projectId !== r.projectId) {
      const next: Route = { ...r, projectId: d.projectId };
      window.history.replaceState(null, '', routeHref(next));
      setRoute(next);
    }
  }, []);

  const workIn = useCallback((id: string | null) => navigate({ kind: 'picker', ...(id ? { projectId: id } : {}) }), [navigate]);
  const inProject = (id: string | null | undefined) => (id ? { projectId: id } : {});
  const outputFolder = project?.outputFolder ?? null;
  const relativeOf = useCallback((virtualPath: string) => outputRelativePath(virtualPath, outputFolder), [outputFolder]);
  const openDocument = useCallback((path: string) => {
    // Nothing typed is lost without asking: an unsaved edit stays unless the person lets it go.
    if (docDirty.current) {
      if (!window.confirm('Discard your changes?')) return;
      docDirty.current = false;
    }
    setDoc((d) => ({ path, version: (d?.version ?? 0) + 1 }));
  }, []);
  const canOpenFile = useCallback((virtualPath: string) => relativeOf(virtualPath) !== null, [relativeOf]);
  const onOpenFile = useCallback(
    (virtualPath: string) => {
      const path = relativeOf(virtualPath);
      if (path) openDocument(path);
    },
    [relativeOf],
  );
  const onOutputsChanged = useCallback(
    (virtualPath?: string) => {
      setOutputsVersion((v) => v + 1);
      // An open document follows the agent: the file it just wrote comes up, read anew.
      const path = virtualPath ? relativeOf(virtualPath) : null;
      setDoc((d) => (d ? { path: (!docDirty.current && path) || d.path, version: d.version + 1 } : d));
    },
    [relativeOf],
  );
  const onTurnEnd = useCallback(() => {
    setOutputsVersion((v) => v + 1);
    setListVersion((v) => v + 1);
    setJourneyVersion((v) => v + 1);
  }, []);

  const conversationId = route?.kind === 'conversation' ? route.id : null;
  const agentId = route?.kind === 'new' ? route.agentId : detailAgentId;
  const agent = agents.find((a) => a.id === agentId);

  useEffect(() => {
    const parts = [agent && route?.kind !== 'picker' ? agent.name : null, projectName, 'BMAD Orchestrator'].filter(Boolean);
    document.title = parts.join(' — ');
  }, [agent, route?.kind, projectName]);

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

  const newAgentUnknown = route?.kind === 'new' && !agentsLoading && !agentsError && !agent;
  const showOutputs = !!route && !projectMissing && (route.kind !== 'picker' || !!projectId);
  const docConversation = conversationId;
  const openDoc = doc && (projectId || docConversation) ? doc : null;
  const docUrl = (download: boolean) =>
    openDoc ? (projectId ? projectFileUrl(projectId, openDoc.path, { download }) : fileUrl(docConversation!, openDoc.path, download)) : '';
  const docked = !!openDoc && wide;
  // Saves go by the path from the project root; the panel's paths are inside the output folder.
  const outputBase = project?.outputFolder?.replace(/^\{project-root\}\/?/, '').replace(/\/+$/, '') || null;
  // A document of a folder beyond the output folder is listed by its path in the project already.
  const beyondOutput = (project?.documentFolders ?? []).map((f) => f.replace(/^\{project-root\}\/?/, ''));
  const projectPathOf = (p: string) => (beyondOutput.some((f) => p.startsWith(`${f}/`)) ? p : `${outputBase}/${p}`);
  // Saves and restores are for those whose role allows writing; a viewer reads and sees the history.
  const role = project?.role ?? detail?.detail?.role;
  const canWrite = role === 'owner' || role === 'editor';
  const saveDocument = async (pid: string, path: string, text: string, sha: string | undefined) => {
    await api.saveProjectFile(pid, path, text, sha);
    setDoc((d) => (d ? { ...d, version: d.version + 1 } : d));
    setDocChanges((v) => v + 1);
    setJourneyVersion((v) => v + 1);
  };
  const saveOutputDocument =
    projectId && outputBase && canWrite ? (path: string, text: string, sha: string | undefined) => saveDocument(projectId, projectPathOf(path), text, sha) : undefined;
  const goHome = () => navigate({ kind: 'picker' });
  const onDocDirty = useCallback((d: boolean) => {
    docDirty.current = d;
  }, []);
  const outputsWord = projectId ? 'documents' : 'outputs';
  // The viewer reads documents inside the output folder; runs and the board name files from the project root.
  const openRootDocument = (rootPath: string) => {
    const rel = beyondOutput.some((f) => rootPath.startsWith(`${f}/`))
      ? rootPath
      : outputBase && rootPath.startsWith(`${outputBase}/`)
        ? rootPath.slice(outputBase.length + 1)
        : null;
    return rel
      ? () => {
          setSidebarOpen(false);
          openDocument(rel);
        }
      : null;
  };
  const startStep = (agentId: string, command: string) => {
    if (!projectId) return;
    navigate({ kind: 'new', agentId, projectId });
    setPendingCommand(command);
  };

  return (
    <div className="app" data-sidebar-open={sidebarOpen} data-outputs-open={outputsOpen} data-doc-open={docked ? 'true' : undefined}>
      <a className="skip-link" href="#main">
        Skip to conversation
      </a>
      <aside id="sidebar" className="sidebar" aria-label="Conversation list">
        <Sidebar
          currentId={conversationId}
          projectId={projectMissing ? null : projectId}
          projectName={projectMissing ? undefined : projectName}
          agents={agents}
          refreshKey={listVersion}
          onSelect={(id, pid) => navigate({ kind: 'conversation', id, ...inProject(pid) })}
          onNew={() => workIn(projectId)}
          onDeleted={(id) => {
            if (id === conversationId) workIn(projectId);
          }}
          onClose={() => setSidebarOpen(false)}
          openDocument={openRootDocument}
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
                <Avatar icon={agent.icon} name={agent.name} className="topbar-icon" />
                <span className="topbar-text">
                  <span className="topbar-name">{agent.name}</span>
                  <span className="topbar-sub">
                    {agent.title}
                    {projectId ? ` · ${projectId}` : ''}
                    {projectSub ? <span className="topbar-project-name"> ({projectSub})</span> : null}
                  </span>
                </span>
              </>
            ) : (
              <span className="topbar-text">
                <span className="topbar-name">BMAD Orchestrator</span>
                {projectId && !projectMissing ? (
                  <span className="topbar-sub" data-testid="topbar-project">
                    Project: {projectId}
                    {projectSub ? <span className="topbar-project-name"> ({projectSub})</span> : null}
                  </span>
                ) : null}
              </span>
            )}
          </div>
          {projectId && projectCost !== undefined ? (
            <span className="topbar-cost" data-testid="project-cost" title="Cost of every conversation of this project, at the profiles' prices">
              Project cost {formatCost(projectCost)}
            </span>
          ) : null}
          {conversationId ? (
            <ExportMenu conversationId={conversationId} />
          ) : null}
          {conversationId ? <ShareToggle conversationId={conversationId} /> : null}
          {showOutputs ? (
            <button
              type="button"
              className="icon-button outputs-toggle"
              aria-controls="outputs"
              aria-expanded={outputsOpen}
              onClick={() => setOutputsOpen((o) => !o)}
              data-testid="outputs-toggle"
            >
              <FilesIcon />
              {/* The name is the content, so the badge's number is part of what is read out. */}
              <span className="visually-hidden">
                {outputsOpen ? 'Hide' : 'Show'} {outputsWord}
                {outputsCount > 0 ? ', ' : ''}
              </span>
              {outputsCount > 0 ? (
                <span className="badge">
                  {outputsCount}
                  <span className="visually-hidden">{plural(outputsCount, 'file').replace(/^[\d,]+/, '')}</span>
                </span>
              ) : null}
            </button>
          ) : null}
          <AccountMenu />
        </header>
        <LlmNotice health={health} />
        <main id="main" className="main" tabIndex={-1}>
          {route === null ? null : projectMissing ? (
            <NotFound title="This project is not available" backHref={routeHref({ kind: 'picker' })} backLabel="Back to your projects" onBack={goHome}>
              <p>
                There is no project called “{projectId}” that you can open. It may have been removed, or it has not been shared with you.
              </p>
              <p>If someone sent you this link, ask them to add you to the project.</p>
            </NotFound>
          ) : newAgentUnknown ? (
            <NotFound
              title="This agent is not here"
              backHref={routeHref({ kind: 'picker', ...inProject(projectId) })}
              backLabel={projectId ? 'Back to the project' : 'Back to your projects'}
              onBack={() => workIn(projectId)}
            >
              <p>
                There is no agent called “{route.kind === 'new' ? route.agentId : ''}” {projectId ? 'in this project' : 'among the sample bundles'}. The link may be old, or the agent was
                removed.
              </p>
            </NotFound>
          ) : route.kind === 'picker' ? (
            <div className="home-scroll">
              {!projectId ? <Home projects={projects} loading={projectsLoading} error={projectsError} onOpen={(id) => workIn(id)} onRetry={() => void loadProjects()} /> : null}
              <AgentPicker
                agents={agents}
                loading={agentsLoading}
                error={agentsError}
                asSection={!projectId}
                holdCards={!!projectId && (projectsLoading || (!!project && (journeySettled !== projectId || !detail)))}
                footer={
                  projectId && project ? (
                    <>
                      <Board
                        projectId={projectId}
                        role={role}
                        agents={agents}
                        openDocument={openRootDocument}
                        onStartAgent={startStep}
                        onOpenConversation={(id) => navigate({ kind: 'conversation', id, projectId })}
                      />
                      <ProjectBuild
                        projectId={projectId}
                        repository={detail?.detail ? (detail.detail.repository ?? null) : undefined}
                        canEdit={role === 'owner'}
                        onOpenConversation={(id) => navigate({ kind: 'conversation', id, projectId })}
                      />
                    </>
                  ) : null
                }
                onPick={(a) => navigate({ kind: 'new', agentId: a.id, ...inProject(projectId) })}
                onRetry={() => void loadAgents(projectId)}
                onPickInWorkspace={projectId ? (a, w) => navigate({ kind: 'new', agentId: a.id, projectId, workspaceId: w.id }) : undefined}
                workspace={{
                  projects,
                  loading: projectsLoading,
                  error: projectsError,
                  projectId,
                  detail: detail?.detail ?? null,
                  detailError: detail?.error ?? null,
                  onChange: workIn,
                  onRetry: () => void loadProjects(),
                  onCreated: (p) => {
                    setProjects((list) => [...list.filter((x) => x.id !== p.id), p].sort(byProjectId));
                    workIn(p.id);
                  },
                }}
              >
                {projectId && project ? (
                  <ProjectJourney
                    projectId={projectId}
                    outputFolder={project.outputFolder}
                    documentFolders={project.documentFolders}
                    agents={agents}
                    refreshKey={journeyVersion + outputsVersion}
                    onSettled={() => setJourneySettled(projectId)}
                    onOpenDocument={openDocument}
                    onStart={startStep}
                  />
                ) : null}
              </AgentPicker>
            </div>
          ) : (
            <ChatView
              key={sessionKey}
              models={models}
              onOpenFile={onOpenFile}
              canOpenFile={canOpenFile}
              conversationId={route.kind === 'conversation' ? route.id : null}
              agentId={route.kind === 'new' ? route.agentId : null}
              projectId={projectId}
              agents={agents}
              agentsLoading={agentsLoading}
              onConversationCreated={onConversationCreated}
              onDetailLoaded={onDetailLoaded}
              onOutputsChanged={onOutputsChanged}
              onTurnEnd={onTurnEnd}
              onNewConversation={() => workIn(projectId)}
              helpCommand={projectId ? helpCommand : null}
              onSwitchAgent={projectId ? (id) => navigate({ kind: 'new', agentId: id, projectId }) : undefined}
              initialMessage={route.kind === 'new' ? pendingCommand : null}
              workspaceId={route.kind === 'new' ? (route.workspaceId ?? null) : null}
              onOpenConversation={(id) => navigate({ kind: 'conversation', id, ...inProject(projectId) })}
            />
          )}
        </main>
      </div>
      {outputsOpen && showOutputs ? <div className="scrim scrim-outputs" onClick={() => setOutputsOpen(false)} aria-hidden="true" /> : null}
      {openDoc ? (
        <DocumentPanel
          key={`${docked}`}
          path={openDoc.path}
          url={docUrl(false)}
          downloadUrl={docUrl(true)}
          version={openDoc.version}
          docked={docked}
          onClose={() => {
            docDirty.current = false;
            setDoc(null);
          }}
          history={projectId ? { projectId, conversationId, agents, onOpenConversation: (id) => navigate({ kind: 'conversation', id, projectId }) } : undefined}
          onSave={saveOutputDocument ? (text, sha) => saveOutputDocument(openDoc.path, text, sha) : undefined}
          onChanged={() => {
            setDocChanges((v) => v + 1);
            setJourneyVersion((v) => v + 1);
          }}
          onDirtyChange={onDocDirty}
        />
      ) : null}
      {showOutputs ? (
        <aside id="outputs" className="outputs" hidden={!outputsOpen} aria-label={projectId ? 'Project documents' : 'Outputs'}>
          <OutputsPanel
            conversationId={conversationId}
            projectId={projectId}
            agents={agents}
            version={outputsVersion}
            onClose={() => setOutputsOpen(false)}
            onCount={setOutputsCount}
            onOpenConversation={(id) => navigate({ kind: 'conversation', id, ...inProject(projectId) })}
            onOpen={openDocument}
            onSave={saveOutputDocument}
            changedKey={docChanges}
          />
        </aside>
      ) : null}
    </div>
  );
}
