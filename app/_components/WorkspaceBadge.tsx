'use client';

import './build.css';
import { useEffect, useState } from 'react';
import { workspacesApi, type WorkspaceView } from '../_lib/workspaces';

/** The chat's line naming the workspace its turns run in: its branch, and whether it is still open. */
export function WorkspaceBadge({ projectId, workspaceId }: { projectId: string; workspaceId: string }) {
  const [ws, setWs] = useState<WorkspaceView | null>(null);
  const [missing, setMissing] = useState(false);
  useEffect(() => {
    const ac = new AbortController();
    setWs(null);
    setMissing(false);
    workspacesApi.get(projectId, workspaceId, ac.signal).then(setWs, (e: Error) => {
      if (e.name !== 'AbortError') setMissing(true);
    });
    return () => ac.abort();
  }, [projectId, workspaceId]);
  return (
    <p className="workspace-badge" data-testid="workspace-badge">
      {ws ? (
        <>
          In workspace <strong>{ws.name}</strong> on branch <code data-testid="workspace-branch">{ws.branch}</code>
          {ws.status !== 'open' ? ` (${ws.status}: its files can no longer change)` : ''}
        </>
      ) : missing ? (
        'In a workspace that cannot be read (discarded, or build is off).'
      ) : (
        'In a workspace…'
      )}
    </p>
  );
}
