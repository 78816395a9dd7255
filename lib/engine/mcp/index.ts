export { loadMcpSetup, parseMcpServers, McpServersFileError, DEFAULT_MCP_TIMEOUT_MS, SERVER_NAME, type McpServerConfig, type McpSetup } from './config';
export { createMcpHub, toToolResult, type McpHub, type McpHubOptions, RELIST_AFTER_MS, type McpServerState, type McpServerStatus, type McpToolInfo, type McpProjectServer } from './hub';
export { functionName, bmadReference, describeTool, parametersOf, FUNCTION_NAME } from './names';
