/**
 * Client tools: tools the program answers through `OpenClientToolCall` callbacks, with typed `called`, `run`,
 * `answer` and the JSON Schema export.
 *
 * @since 0.1.0
 */
export * as ClientTool from "./ClientTool.js"

/**
 * Tools with a handler: client tools whose calls the SDK answers by running their code.
 *
 * @since 0.1.0
 */
export * as Tool from "./Tool.js"

/**
 * Hints about what a tool does (the MCP tool annotations) and their constructors.
 *
 * @since 0.1.0
 */
export * as ToolAnnotations from "./ToolAnnotations.js"
