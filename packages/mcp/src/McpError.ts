/**
 * The typed errors of `@parley/mcp`. A connection that cannot be made when the program starts fails the connector's
 * layer with `McpConnectError`; a call whose connection fails later is a tool error the model reads, not an error of
 * the program.
 *
 * @example
 * ```ts
 * import { McpConnector, McpError } from "@parley/mcp"
 * import { Connectors } from "@parley/runtime"
 * import { Effect, Layer } from "effect"
 *
 * const ConnectorsLive = Connectors.layerEffect([
 *   McpConnector.http({ source: "mail", url: "http://127.0.0.1:3001/mcp" })
 * ]).pipe(
 *   Layer.tapError((error: McpError.McpConnectError) => Effect.logError(error.message))
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * The MCP server could not be reached, or its tools could not be listed.
 *
 * @since 0.1.0
 * @category Errors
 */
export class McpConnectError extends Schema.TaggedError<McpConnectError>("@parley/mcp/McpError/McpConnectError")(
  "McpConnectError",
  {
    module: Schema.String,
    method: Schema.String,
    source: Schema.String,
    description: Schema.String,
    cause: Schema.optional(Schema.Defect())
  }
) {
  override get message(): string {
    return `${this.module}.${this.method}: ${this.description}`
  }
}
