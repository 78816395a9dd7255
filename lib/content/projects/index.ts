export { createProjectCatalog, readProject, isValidProjectId, SETTINGS_FILE, type Project, type ProjectCatalog, type ProjectOverview } from './catalog';
export { readInstall, type BmadInstall, type InstalledAgent } from './layout';
export { runBmadInstaller, installerCli, stepLines, type InstallOptions, type InstallOutcome } from './installer';
export { createProject, claimProject, installClaimed, bundledModules, installableReleases, installerTools, BMAD_RELEASES, DEFAULT_BMAD_VERSION, DEFAULT_TOOLS, type NewProject, type ClaimedProject, type InstallableRelease, type InstallerTool } from './create';
export { projectVersions } from './versions';
export { projectDocuments, type ProjectDocuments, type DocumentFile, type DocumentVersion, type DocumentWriter } from './documents';
export { projectJourney, helpCommand, journeyBrief, HELP_NAME, type Journey, type JourneyPhase, type JourneyDocument, type JourneyStep, type JourneyStatus } from './journey';
export { saveDocument, EDITOR_CONVERSATION, type SavedDocument, type DocumentEdit } from './edit';
