/**
 * Branded identifiers: sessions, turns, callbacks and the stable ids of tools.
 *
 * Session, turn and callback ids are opaque prefixed strings (`ses_…`, `turn_…`, `cb_…`) made by the runtime, as are
 * the ids of remembered grants (`grant_…`). Each carries 80 random bits after its prefix (20 hex digits): nothing
 * about one id predicts another, not even the next one of the same tree. Ids are not secrets, though: who may read or
 * answer what is decided by the server's tenant checks, never by knowing an id.
 * Tool ids are stable names that permission policies match: `client.<name>` for tools the program defines,
 * `agents.spawn|message|wait|interrupt` for the builtins and `connector.<source>.<tool>` for connector tools.
 *
 * @example
 * ```ts
 * import { Ids } from "@parley/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const id = yield* Ids.toolId("connector.gmail.latest_email")
 *   console.log(Ids.toolNamespace(id)) // "connector"
 *   // a malformed id fails with InvalidId
 *   yield* Ids.toolId("gmail latest").pipe(Effect.flip)
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { InvalidId } from "./ParleyError.js"

const segment = "[A-Za-z0-9][A-Za-z0-9_-]*"
const opaque = "[A-Za-z0-9_-]+"

/**
 * @since 0.1.0
 * @category Schemas
 */
export const SessionId = Schema.String.pipe(
  Schema.check(Schema.isPattern(new RegExp(`^ses_${opaque}$`), { message: "a session id looks like ses_…" })),
  Schema.brand("@parley/core/SessionId")
)
/**
 * @since 0.1.0
 * @category Models
 */
export type SessionId = typeof SessionId.Type

/**
 * @since 0.1.0
 * @category Schemas
 */
export const TurnId = Schema.String.pipe(
  Schema.check(Schema.isPattern(new RegExp(`^turn_${opaque}$`), { message: "a turn id looks like turn_…" })),
  Schema.brand("@parley/core/TurnId")
)
/**
 * @since 0.1.0
 * @category Models
 */
export type TurnId = typeof TurnId.Type

/**
 * @since 0.1.0
 * @category Schemas
 */
export const CallbackId = Schema.String.pipe(
  Schema.check(Schema.isPattern(new RegExp(`^cb_${opaque}$`), { message: "a callback id looks like cb_…" })),
  Schema.brand("@parley/core/CallbackId")
)
/**
 * @since 0.1.0
 * @category Models
 */
export type CallbackId = typeof CallbackId.Type

/**
 * A request id: chosen by the client for one `sendMessage`, so that sending it again (a retry after a dropped
 * connection) finds the turn the first one queued instead of queueing another. 1 to 128 printable ASCII characters
 * without spaces (a UUID fits).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const RequestId = Schema.String.pipe(
  Schema.check(Schema.isPattern(/^[\x21-\x7E]{1,128}$/, {
    message: "a request id is 1 to 128 printable ASCII characters, without spaces"
  }))
)
/**
 * @since 0.1.0
 * @category Models
 */
export type RequestId = typeof RequestId.Type

/**
 * The builtin tools an agent with subagents gets.
 *
 * @since 0.1.0
 * @category Models
 */
export const builtinTools = ["spawn", "message", "wait", "interrupt"] as const

/**
 * The pattern of a stable tool id.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toolIdPattern = new RegExp(
  `^(?:client\\.${segment}|agents\\.(?:${builtinTools.join("|")})|connector\\.${segment}\\.${segment})$`
)

/**
 * A stable tool id: `client.<name>`, `agents.spawn|message|wait|interrupt` or `connector.<source>.<tool>`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const ToolId = Schema.String.pipe(
  Schema.check(Schema.isPattern(toolIdPattern, {
    message: "a tool id is client.<name>, agents.spawn|message|wait|interrupt or connector.<source>.<tool>"
  })),
  Schema.brand("@parley/core/ToolId")
)
/**
 * @since 0.1.0
 * @category Models
 */
export type ToolId = typeof ToolId.Type

/**
 * The namespaces of tool ids.
 *
 * @since 0.1.0
 * @category Models
 */
export type ToolNamespace = "client" | "agents" | "connector"

/**
 * @since 0.1.0
 * @category Models
 */
export const toolNamespaces: ReadonlyArray<ToolNamespace> = ["client", "agents", "connector"]

/**
 * The namespace of a tool id.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toolNamespace = (id: ToolId): ToolNamespace => id.slice(0, id.indexOf(".")) as ToolNamespace

const formatIssue = SchemaIssue.makeFormatterDefault()

const decoder = <A>(kind: InvalidId["kind"], schema: Schema.Codec<A, string>) => {
  const decode = Schema.decodeUnknownEffect(schema)
  return (value: string): Effect.Effect<A, InvalidId> =>
    Effect.mapError(
      decode(value),
      (error) =>
        new InvalidId({
          module: "Ids",
          method: kind,
          kind,
          value,
          description: formatIssue(error.issue)
        })
    )
}

/**
 * Checks a session id; a malformed one fails with `InvalidId`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const sessionId: (value: string) => Effect.Effect<SessionId, InvalidId> = decoder("sessionId", SessionId)

/**
 * Checks a turn id; a malformed one fails with `InvalidId`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const turnId: (value: string) => Effect.Effect<TurnId, InvalidId> = decoder("turnId", TurnId)

/**
 * Checks a callback id; a malformed one fails with `InvalidId`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const callbackId: (value: string) => Effect.Effect<CallbackId, InvalidId> = decoder("callbackId", CallbackId)

/**
 * Checks a request id; a malformed one fails with `InvalidId`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const requestId: (value: string) => Effect.Effect<RequestId, InvalidId> = decoder("requestId", RequestId)

/**
 * Checks a tool id; a malformed one fails with `InvalidId`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const toolId: (value: string) => Effect.Effect<ToolId, InvalidId> = decoder("toolId", ToolId)

/**
 * The stable id of a client tool named `name`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const clientToolId = (name: string): Effect.Effect<ToolId, InvalidId> => toolId(`client.${name}`)

/**
 * The stable id of the tool `tool` of connector `source`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const connectorToolId = (source: string, tool: string): Effect.Effect<ToolId, InvalidId> =>
  toolId(`connector.${source}.${tool}`)

/** `prefix_` and 20 hex digits: 80 bits from `crypto.getRandomValues`. */
const fresh = (prefix: string) =>
  `${prefix}_${
    Array.from(crypto.getRandomValues(new Uint8Array(10)), (byte) => byte.toString(16).padStart(2, "0")).join("")
  }`

/**
 * A new random session id.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const newSessionId: Effect.Effect<SessionId> = Effect.sync(() => fresh("ses") as SessionId)

/**
 * A new random turn id.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const newTurnId: Effect.Effect<TurnId> = Effect.sync(() => fresh("turn") as TurnId)

/**
 * A new random request id (what the HTTP transport sends when the caller gives none).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const newRequestId: Effect.Effect<RequestId> = Effect.sync(() => fresh("req"))

/**
 * A new random callback id.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const newCallbackId: Effect.Effect<CallbackId> = Effect.sync(() => fresh("cb") as CallbackId)
