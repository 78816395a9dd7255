export { parseConfig, loadConfigFile, loadAgentYaml, loadAgentToml, loadAgentConfig, isConfigPath, type ConfigText, type ConfigReader, type LoadedConfig } from './config';
export { parseToml, structuralMerge, mergeLayers, lookup, isTable, type TomlTable, type ParsedToml } from './toml';
export { customizationLayers, centralConfigLayers, mergeTomlLayers, configVariables, renderValue, substituteCustomization, type Layer, type Merged } from './customize';
