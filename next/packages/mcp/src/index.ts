/**
 * MCP servers as connectors, over Streamable HTTP or stdio.
 *
 * @since 0.1.0
 */
export * as McpConnector from "./McpConnector.js"

/**
 * The typed errors of `@parley/mcp`.
 *
 * @since 0.1.0
 */
export * as McpError from "./McpError.js"
