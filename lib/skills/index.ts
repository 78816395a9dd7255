export { parseToml, structuralMerge, mergeLayers, lookup, isTable, type TomlTable, type ParsedToml } from './toml';
export { customizationLayers, centralConfigLayers, mergeTomlLayers, configVariables, renderValue, substituteCustomization, type Layer, type Merged } from './customize';
export { discoverSkills, locateSkill, readSkillManifest, SKILL_FOLDERS, SKILL_NAME, type InstalledSkill, type SkillDiscovery } from './discover';
export { skillAgentDefinition, type SkillAgentSource } from './agent';
export { globFiles, type GlobMatch, type GlobOptions } from './glob';
