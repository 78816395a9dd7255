export { discoverSkills, locateSkill, readSkillManifest, SKILL_FOLDERS, SKILL_NAME, type InstalledSkill, type SkillDiscovery } from './discover';
export { globFiles, type GlobMatch, type GlobOptions } from './glob';
