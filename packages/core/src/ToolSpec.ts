/**
 * The serialisable description of a tool, as an agent definition carries it: its stable id, name, description,
 * JSON Schemas and annotations.
 *
 * @example
 * ```ts
 * import { Ids, ToolSpec } from "@parley/core"
 *
 * const spec = new ToolSpec.ToolSpec({
 *   id: Ids.ToolId.make("client.get_location"),
 *   name: "get_location",
 *   description: "The user's current location.",
 *   parameters: { type: "object", properties: {} },
 *   annotations: new ToolSpec.ToolAnnotations({ readOnlyHint: true })
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ToolId } from "./Ids.js"
import { withDefault } from "./internal/schemaFields.js"

/**
 * Hints about what a tool does (the MCP annotations). Policies and handlers read them; nothing enforces them.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ToolAnnotations extends Schema.Class<ToolAnnotations>("@parley/core/ToolAnnotations")({
  title: Schema.optional(Schema.String),
  readOnlyHint: withDefault(Schema.Boolean, () => false),
  destructiveHint: withDefault(Schema.Boolean, () => false),
  idempotentHint: withDefault(Schema.Boolean, () => false),
  openWorldHint: withDefault(Schema.Boolean, () => false)
}) {}

/**
 * A JSON Schema document (an object).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const JsonSchema = Schema.Record(Schema.String, Schema.Unknown)

/**
 * @since 0.1.0
 * @category Models
 */
export type JsonSchema = typeof JsonSchema.Type

/**
 * Where the calls of a tool of the program (`client.<name>`) are answered:
 *
 * - `client` (the default): by the program, through an `OpenClientToolCall` callback (a handler while a run waits,
 *   or an answer by id);
 * - `runtime`: by the runtime itself, which runs the tool's handler (`RuntimeTools` of `@parley/runtime`), records
 *   `ToolExecutionStarted` and needs no waiting client.
 *
 * The engine sets `runtime` when a session starts, for each tool whose handler the runtime was given, and stores it
 * with the agent definition: every process deciding over the tree reads it from there, whatever handlers it has.
 * Only an agent's own tools (`AgentSpec.tools`) read it; connector and builtin tools run in the runtime anyway.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const RunsIn = Schema.Literals(["client", "runtime"])

/**
 * @since 0.1.0
 * @category Models
 */
export type RunsIn = typeof RunsIn.Type

/**
 * A tool as the model and the runtime see it. `runsIn` is absent from definitions stored before it existed, which
 * decode as `client`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ToolSpec extends Schema.Class<ToolSpec>("@parley/core/ToolSpec")({
  id: ToolId,
  name: Schema.String,
  description: Schema.String,
  parameters: JsonSchema,
  success: Schema.optional(JsonSchema),
  failure: Schema.optional(JsonSchema),
  annotations: withDefault(ToolAnnotations, () => new ToolAnnotations({})),
  runsIn: withDefault(RunsIn, () => "client" as const)
}) {}
