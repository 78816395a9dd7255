export {
  readBoard,
  readCommittedBoard,
  filesTextAt,
  type CommittedBoard,
  type SprintRemote,
  hasLocalChanges,
  sprintProjectOf,
  appendOnlyFiles,
  DEFERRED_WORK_FILE,
  locateSprint,
  titleFromKey,
  titleFromMarkdown,
  specNamesStory,
  STATUS_FILE,
  type Board,
  type BoardEpic,
  type BoardStory,
  type SprintProject,
  type SprintLocation,
} from './board';
export { setStoryStatus, validateChange, commitMessage, hasSprintStatus, type SprintActor, type StatusChange } from './status';
export { STORY_STATUSES, EPIC_STATUSES, RETRO_STATUSES, MAX_STATUS_BYTES, classifyKey, statusesFor, setStatusInText, type StoryStatus } from './parse';
export { workspaceStatusChanges, applyWorkspaceStatusChanges, sprintNeutralHead, type WorkspaceStatusChanges } from './workspace';
export { buildResultOf, statusOfText, outcomeOf, type BuildResult } from './result';
export { storyFilesHead, withStoryStatus } from './story-file';
