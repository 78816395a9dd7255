export { projectOf, committerOf, APP_IDENTITY } from './access';
export { getBuildSettings, putBuildSettings } from './build';
export { createWorkspace, listWorkspaces, getWorkspace, workspaceDiff, mergeWorkspace, discardWorkspace, repositoryView, runWorkspaceView, workspaceView, workspaceForRun } from './workspaces';
export { setupOf } from './setup';
export { turnWorkspace, placeIn } from './turns';
