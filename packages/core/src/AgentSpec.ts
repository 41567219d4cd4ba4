/**
 * The serialisable definition of an agent: what a runtime needs to run it, in any process. Tools are described by
 * JSON Schema (`ToolSpec`), the policy is data (`Permissions`), subagents are agent specs of their own.
 *
 * @example
 * ```ts
 * import { AgentSpec, Permissions } from "@parley/core"
 *
 * const spec = AgentSpec.make({
 *   name: "assistant",
 *   model: "mistral-large-latest",
 *   instructions: "Use your tools. Answer in one short sentence.",
 *   connectors: ["gmail"],
 *   permissions: new Permissions.PermissionPolicy({ default: "allow" })
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { withDefault } from "./internal/schemaFields.js"
import { PermissionPolicy } from "./Permissions.js"
import { ToolSpec } from "./ToolSpec.js"

/**
 * Which builtin tools the agent gets. `subagents` (the `agents.*` tools) defaults to on when the agent declares
 * subagents.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Builtins extends Schema.Class<Builtins>("@parley/core/AgentSpec/Builtins")({
  subagents: Schema.optional(Schema.Boolean)
}) {}

/** A duration as a non-negative number of milliseconds (how the timeouts are written). */
const DurationFromMillis = Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)).pipe(
  Schema.decodeTo(Schema.Duration, SchemaTransformation.durationFromMillis)
)

/**
 * How long callbacks wait for an answer (default: one hour each).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class CallbackTimeouts extends Schema.Class<CallbackTimeouts>("@parley/core/AgentSpec/CallbackTimeouts")({
  approval: withDefault(DurationFromMillis, () => Duration.hours(1)),
  clientTool: withDefault(DurationFromMillis, () => Duration.hours(1))
}) {}

/**
 * @since 0.1.0
 * @category Models
 */
export interface AgentSpec {
  readonly name: string
  readonly description?: string | undefined
  readonly model?: string | undefined
  readonly instructions: string
  readonly tools: ReadonlyArray<ToolSpec>
  readonly connectors: ReadonlyArray<string>
  readonly subagents: ReadonlyArray<AgentSpec>
  readonly permissions?: PermissionPolicy | undefined
  readonly builtins: Builtins
  readonly timeouts: CallbackTimeouts
  /** The most model steps one turn may take (default 25); a turn that needs more ends `Failed` (`StepLimitReached`). */
  readonly maxSteps: number
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface AgentSpecEncoded {
  readonly name: string
  readonly description?: string | undefined
  readonly model?: string | undefined
  readonly instructions?: string | undefined
  readonly tools?: ReadonlyArray<typeof ToolSpec.Encoded> | undefined
  readonly connectors?: ReadonlyArray<string> | undefined
  readonly subagents?: ReadonlyArray<AgentSpecEncoded> | undefined
  readonly permissions?: typeof PermissionPolicy.Encoded | undefined
  readonly builtins?: typeof Builtins.Encoded | undefined
  readonly timeouts?: typeof CallbackTimeouts.Encoded | undefined
  readonly maxSteps?: number | undefined
}

/**
 * How many model steps a turn may take unless the agent says otherwise.
 *
 * @since 0.1.0
 * @category Models
 */
export const defaultMaxSteps = 25

/**
 * A subagent with no `model` uses its parent's; one with no `permissions` uses its parent's.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const AgentSpec: Schema.Codec<AgentSpec, AgentSpecEncoded> = Schema.Struct({
  name: Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9_-]*$/)),
  description: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  instructions: withDefault(Schema.String, () => ""),
  tools: withDefault(Schema.Array(ToolSpec), () => []),
  connectors: withDefault(Schema.Array(Schema.String), () => []),
  subagents: withDefault(
    Schema.Array(Schema.suspend((): Schema.Codec<AgentSpec, AgentSpecEncoded> => AgentSpec)),
    () => []
  ),
  permissions: Schema.optional(PermissionPolicy),
  builtins: withDefault(Builtins, () => new Builtins({})),
  timeouts: withDefault(CallbackTimeouts, () => new CallbackTimeouts({})),
  maxSteps: withDefault(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 })), () => defaultMaxSteps)
}).annotate({ identifier: "AgentSpec" })

/**
 * Builds an agent spec, filling the defaults.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (fields: {
  readonly name: string
  readonly description?: string | undefined
  readonly model?: string | undefined
  readonly instructions?: string | undefined
  readonly tools?: ReadonlyArray<ToolSpec> | undefined
  readonly connectors?: ReadonlyArray<string> | undefined
  readonly subagents?: ReadonlyArray<AgentSpec> | undefined
  readonly permissions?: PermissionPolicy | undefined
  readonly builtins?: Builtins | undefined
  readonly timeouts?: CallbackTimeouts | undefined
  readonly maxSteps?: number | undefined
}): AgentSpec => ({
  name: fields.name,
  ...(fields.description === undefined ? {} : { description: fields.description }),
  ...(fields.model === undefined ? {} : { model: fields.model }),
  instructions: fields.instructions ?? "",
  tools: fields.tools ?? [],
  connectors: fields.connectors ?? [],
  subagents: fields.subagents ?? [],
  ...(fields.permissions === undefined ? {} : { permissions: fields.permissions }),
  builtins: fields.builtins ?? new Builtins({}),
  timeouts: fields.timeouts ?? new CallbackTimeouts({}),
  maxSteps: fields.maxSteps ?? defaultMaxSteps
})

/**
 * Whether the agent gets the `agents.*` builtin tools.
 *
 * @since 0.1.0
 * @category Utils
 */
export const hasSubagentTools = (spec: AgentSpec): boolean => spec.builtins.subagents ?? spec.subagents.length > 0

/**
 * The definition a subagent runs with: a subagent without a model or a policy of its own uses its parent's. A field
 * neither has is left out (as `make` and the schema leave it), so the definition is the same after a JSON round trip.
 *
 * @since 0.1.0
 * @category Utils
 */
export const childSpec = (parent: AgentSpec, child: AgentSpec): AgentSpec => {
  const model = child.model ?? parent.model
  const permissions = child.permissions ?? parent.permissions
  return {
    ...child,
    ...(model === undefined ? {} : { model }),
    ...(permissions === undefined ? {} : { permissions })
  }
}
