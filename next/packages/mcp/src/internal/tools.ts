/**
 * An MCP server's tools as Parley sees them: names the model and the tool ids accept, JSON Schemas, annotations with
 * MCP's defaults, and a `tools/call` result as the model reads it.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import type { ToolId } from "@parley/core/Ids"
import { ToolAnnotations, ToolSpec } from "@parley/core/ToolSpec"

/**
 * A tool name as a tool id segment and a model tool name accept it (`[A-Za-z0-9][A-Za-z0-9_-]*`): MCP also allows
 * `.` and other characters, which become `_`.
 */
export const segmentOf = (name: string): string => {
  const cleaned = name.replace(/[^A-Za-z0-9_-]/g, "_")
  return /^[A-Za-z0-9]/.test(cleaned) ? cleaned : `t${cleaned}`
}

/**
 * MCP's annotations as Parley's. MCP's defaults hold where the server says nothing: a tool that does not say it only
 * reads may be destructive and may reach the open world (the MCP specification's `destructiveHint` and
 * `openWorldHint` default to `true`).
 */
export const annotationsOf = (tool: Tool): ToolAnnotations => {
  const hints = tool.annotations ?? {}
  const readOnly = hints.readOnlyHint ?? false
  const title = hints.title ?? tool.title
  return new ToolAnnotations({
    ...(title === undefined ? {} : { title }),
    readOnlyHint: readOnly,
    destructiveHint: readOnly ? false : (hints.destructiveHint ?? true),
    idempotentHint: hints.idempotentHint ?? false,
    openWorldHint: hints.openWorldHint ?? true
  })
}

/** The spec of an MCP tool, with the stable id `connector.<source>.<tool>`. */
export const specOf = (source: string, tool: Tool): ToolSpec => {
  const name = segmentOf(tool.name)
  return new ToolSpec({
    id: `connector.${segmentOf(source)}.${name}` as ToolId,
    name,
    description: tool.description ?? tool.title ?? tool.name,
    parameters: { ...tool.inputSchema, type: "object" },
    annotations: annotationsOf(tool)
  })
}

const textOf = (content: CallToolResult["content"]): string | undefined =>
  content.every((part) => part.type === "text")
    ? content.map((part) => (part.type === "text" ? part.text : "")).join("\n")
    : undefined

/**
 * A `tools/call` result as the model reads it: its structured content when it has some, its text when all its content
 * is text, its content parts otherwise. `isError` makes it a tool error.
 */
export const resultOf = (
  result: CallToolResult
): { readonly isFailure: boolean; readonly value: unknown } => {
  const content = result.content ?? []
  const text = textOf(content)
  if (result.isError === true) return { isFailure: true, value: text ?? content }
  if (result.structuredContent !== undefined) return { isFailure: false, value: result.structuredContent }
  return { isFailure: false, value: text ?? content }
}
