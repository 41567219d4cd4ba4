/**
 * Connectors: named sources of tools that need the user's sign-in (`gmail`, a calendar, an MCP server). A call to
 * a tool of a connector the session has not connected opens an `OpenSignIn`; `connected` resumes that same call,
 * `denied` returns a tool error the model can explain. Connector tools have the stable ids
 * `connector.<source>.<tool>`.
 *
 * @example
 * ```ts
 * import { Connectors } from "@parley/runtime"
 *
 * const ConnectorsLive = Connectors.layer([Connectors.demoMailbox()])
 * ```
 *
 * @since 0.1.0
 */
import type { SignInGrant } from "@parley/core/Answer"
import type { SessionId, ToolId } from "@parley/core/Ids"
import { ToolAnnotations, ToolSpec } from "@parley/core/ToolSpec"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"

/**
 * The call a connector tool runs for: its tree (where credentials of the tree are kept), its session and the model's
 * tool call id.
 *
 * @since 0.1.0
 * @category Models
 */
export interface CallContext {
  readonly treeId: SessionId
  readonly sessionId: SessionId
  readonly toolCallId: string
}

/**
 * A connector tool: its description for the model, and what runs it once the connector is connected.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ConnectorTool {
  readonly spec: ToolSpec
  /**
   * Runs the call. A failure is the tool error the model reads — or `SignInRequired`: the call waits on a sign-in,
   * and runs again once the user connected. Interrupting the effect (a cancelled turn) cancels the call.
   */
  readonly run: (args: unknown, context: CallContext) => Effect.Effect<unknown, string | SignInRequired>
}

/**
 * A connector's server asked for an authorization (an MCP server's `401`): the call opens an `OpenSignIn` whose
 * request carries `authorizationUrl` and `scopes`, and runs again once the answer connected the source.
 *
 * @since 0.1.0
 * @category Models
 */
export class SignInRequired extends Schema.TaggedClass<SignInRequired>("@parley/runtime/Connectors/SignInRequired")(
  "SignInRequired",
  { authorizationUrl: Schema.String, scopes: Schema.Array(Schema.String) }
) {}

/**
 * A credential to complete a sign-in with, from a `SignInAnswer`: the authorization code (and the redirect's
 * `state`), or the tokens of a flow the client completed itself.
 *
 * @since 0.1.0
 * @category Models
 */
export type Grant = SignInGrant

/**
 * A named source of tools. Its `tools` may change while the program runs (an MCP server's list changes): each read
 * gives the current list, and `revision` grows with every change, so the tools the model sees are read again.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Connector {
  readonly source: string
  readonly tools: ReadonlyArray<ConnectorTool>
  /**
   * Whether a session asks the user to connect the source (an `OpenSignIn` answered by id) before its first call.
   * `true` by default; a connector that signs in on its server's demand (OAuth on a 401) says `false`.
   */
  readonly askFirst?: boolean | undefined
  /** Grows each time `tools` changes. A connector whose tools never change has none. */
  readonly revision?: (() => number) | undefined
  /**
   * Completes a sign-in the connector asked for (`SignInRequired`) with the answer's credential: exchanges the code
   * for tokens and keeps them for the tree. Runs before the answer is stored (the answer in the log names the source
   * only); a failure is the reason the answer is refused (`AnswerMismatch`), and nothing is stored.
   */
  readonly completeSignIn?: ((treeId: SessionId, grant: Grant) => Effect.Effect<void, string>) | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly get: (source: string) => Option.Option<Connector>
  /** Grows each time the tools of a connector change (the sum of the connectors' revisions). */
  readonly revision: () => number
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Connectors extends Context.Service<Connectors, Service>()("@parley/runtime/Connectors") {}

/**
 * A connector from its tools.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (
  source: string,
  tools: ReadonlyArray<{
    readonly name: string
    readonly description: string
    readonly parameters?: Record<string, unknown>
    readonly annotations?: ToolAnnotations
    readonly run: (args: unknown, context: CallContext) => Effect.Effect<unknown, string | SignInRequired>
  }>
): Connector => ({
  source,
  tools: tools.map((tool) => ({
    spec: new ToolSpec({
      id: `connector.${source}.${tool.name}` as ToolId,
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters ?? { type: "object", properties: {}, required: [] },
      annotations: tool.annotations ?? new ToolAnnotations({})
    }),
    run: tool.run
  }))
})

/**
 * The connectors of a program.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (connectors: ReadonlyArray<Connector>): Layer.Layer<Connectors> =>
  Layer.succeed(Connectors, of(connectors))

/**
 * The service over connectors.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const of = (connectors: ReadonlyArray<Connector>): Service => ({
  get: (source) => Option.fromNullishOr(connectors.find((connector) => connector.source === source)),
  revision: () => connectors.reduce((sum, connector) => sum + (connector.revision?.() ?? 0), 0)
})

/**
 * The connectors of a program, some of them made by effects that hold resources for as long as the layer lives (an
 * MCP server's connection: `McpConnector.http` / `McpConnector.stdio` of `@parley/mcp`). The layer fails with the
 * first connector that cannot be made.
 *
 * @example
 * ```ts
 * import { Connectors } from "@parley/runtime"
 * import { Effect } from "effect"
 *
 * // an effect that makes a connector (`McpConnector.http({ source, url })` of `@parley/mcp` is one)
 * const crm = Effect.acquireRelease(
 *   Effect.sync(() => Connectors.make("crm", [])),
 *   () => Effect.log("crm connection closed")
 * )
 * const ConnectorsLive = Connectors.layerEffect([Connectors.demoMailbox(), crm])
 * ```
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerEffect = <E = never, R = never>(
  connectors: ReadonlyArray<Connector | Effect.Effect<Connector, E, R>>
): Layer.Layer<Connectors, E, Exclude<R, Scope.Scope>> =>
  Layer.effect(
    Connectors,
    Effect.map(
      Effect.forEach(connectors, (connector) => Effect.isEffect(connector) ? connector : Effect.succeed(connector)),
      of
    )
  )

/**
 * No connectors.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerEmpty: Layer.Layer<Connectors> = layer([])

/**
 * An email of the demo mailbox.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Email extends Schema.Class<Email>("@parley/runtime/Connectors/Email")({
  from: Schema.String,
  subject: Schema.String,
  received: Schema.String,
  snippet: Schema.String
}) {}

/**
 * An in-process demo connector: a `gmail`-like mailbox with a `latest_email` tool that only reads.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const demoMailbox = (options?: {
  readonly source?: string
  readonly emails?: ReadonlyArray<Email>
}): Connector => {
  const emails = options?.emails ?? [
    new Email({
      from: "Camille Martin <camille@example.com>",
      subject: "Dinner on Friday?",
      received: "2026-12-01T18:42:00Z",
      snippet: "Are you free for dinner on Friday at 8? I booked a table near the Place Bellecour."
    })
  ]
  return make(options?.source ?? "gmail", [{
    name: "latest_email",
    description: "The most recent email in the user's inbox.",
    annotations: new ToolAnnotations({ readOnlyHint: true }),
    run: () =>
      emails.length === 0
        ? Effect.fail("The inbox is empty.")
        : Effect.succeed(Schema.encodeSync(Email)(emails[emails.length - 1]))
  }])
}
