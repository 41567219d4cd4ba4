/**
 * Callbacks: the questions a turn asks the program and waits for. A turn stops at a callback and continues once it
 * has an answer (`Answer`). There are three kinds, each a `Schema.TaggedClass`: `OpenApproval` (the permission
 * policy says `ask` before a tool call), `OpenClientToolCall` (the model called a tool the program answers) and
 * `OpenSignIn` (the agent needs a connector the user has not connected).
 *
 * @example
 * ```ts
 * import { Callback } from "@parley/core"
 * import { Match } from "effect"
 *
 * const describe = Match.type<Callback.Callback>().pipe(
 *   Match.tag("OpenApproval", (cb) => `may I call ${cb.request.tool.id}?`),
 *   Match.tag("OpenClientToolCall", (cb) => `please run ${cb.request.tool.name}`),
 *   Match.tag("OpenSignIn", (cb) => `please sign in to ${cb.requests.map((r) => r.source).join(", ")}`),
 *   Match.exhaustive
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { CallbackId, SessionId, ToolId, TurnId } from "./Ids.js"
import { withDefault } from "./internal/schemaFields.js"
import * as Permissions from "./Permissions.js"
import { ToolAnnotations } from "./ToolSpec.js"

/**
 * The kinds of callback, as printed by the seed guides (`answering: sign_in`).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Kind = Schema.Literals(["approval", "client_tool", "sign_in"])

/**
 * @since 0.1.0
 * @category Models
 */
export type Kind = typeof Kind.Type

/**
 * The tool a callback is about.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ToolRef extends Schema.Class<ToolRef>("@parley/core/Callback/ToolRef")({
  id: ToolId,
  name: Schema.String,
  annotations: withDefault(ToolAnnotations, () => new ToolAnnotations({}))
}) {}

/**
 * What in the permission policy decided `ask` (see `Permissions.DecidedBy`).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const DecidedBy = Permissions.DecidedBy

/**
 * @since 0.1.0
 * @category Models
 */
export type DecidedBy = Permissions.DecidedBy

/**
 * An approval request: which tool, with which arguments, and what in the policy asked.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ApprovalRequest extends Schema.Class<ApprovalRequest>("@parley/core/Callback/ApprovalRequest")({
  tool: ToolRef,
  toolCallId: Schema.String,
  arguments: Schema.Unknown,
  decidedBy: DecidedBy,
  /** Who may answer it (the asking rule's `approvers`); absent: anyone who may reach it. */
  approvers: Schema.optional(Permissions.Approvers)
}) {}

/**
 * A client tool call: the tool the program runs and the arguments the model gave (not yet decoded).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ClientToolRequest extends Schema.Class<ClientToolRequest>("@parley/core/Callback/ClientToolRequest")({
  tool: ToolRef,
  toolCallId: Schema.String,
  arguments: Schema.Unknown
}) {}

/**
 * One connector the user must sign in to. Answers name requests by `id`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SignInRequest extends Schema.Class<SignInRequest>("@parley/core/Callback/SignInRequest")({
  id: Schema.String,
  source: Schema.String,
  /** The tool call that needs the connector. */
  toolCallId: Schema.optional(Schema.String),
  /**
   * Where a person signs in, when the connector's server asked for an OAuth authorization: open it, and answer with
   * the code the authorization server redirects with (`SignInGrant`).
   */
  authorizationUrl: Schema.optional(Schema.String),
  /** The scopes the authorization asks for. */
  scopes: Schema.optional(Schema.Array(Schema.String))
}) {}

const common = {
  id: CallbackId,
  sessionId: SessionId,
  turnId: TurnId,
  /**
   * The root turn whose part of the tree asked: the turn itself for the root session's callbacks, and for a subagent's
   * the root turn during which its branch of the tree was started (subagents outlive turns).
   */
  rootTurnId: Schema.optional(TurnId),
  openedAt: Schema.DateTimeUtcFromString,
  expiresAt: Schema.optional(Schema.DateTimeUtcFromString)
}

/**
 * The policy asks before a tool call. Answer with `AllowApproval` or `DenyApproval`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class OpenApproval
  extends Schema.TaggedClass<OpenApproval>("@parley/core/Callback/OpenApproval")("OpenApproval", {
    ...common,
    kind: Schema.tag("approval"),
    request: ApprovalRequest
  })
{}

/**
 * The model called a client tool. Answer with a `ClientToolResult`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class OpenClientToolCall extends Schema.TaggedClass<OpenClientToolCall>(
  "@parley/core/Callback/OpenClientToolCall"
)("OpenClientToolCall", {
  ...common,
  kind: Schema.tag("client_tool"),
  request: ClientToolRequest
}) {}

/**
 * The agent needs connectors the user has not connected. Answer with a `SignInAnswer` naming every request.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class OpenSignIn extends Schema.TaggedClass<OpenSignIn>("@parley/core/Callback/OpenSignIn")("OpenSignIn", {
  ...common,
  kind: Schema.tag("sign_in"),
  requests: Schema.NonEmptyArray(SignInRequest)
}) {}

/**
 * @since 0.1.0
 * @category Models
 */
export type Callback = OpenApproval | OpenClientToolCall | OpenSignIn

/**
 * @since 0.1.0
 * @category Schemas
 */
export const Callback: Schema.Union<readonly [typeof OpenApproval, typeof OpenClientToolCall, typeof OpenSignIn]> =
  Schema.Union([OpenApproval, OpenClientToolCall, OpenSignIn])

/**
 * @since 0.1.0
 * @category Guards
 */
export const isCallback: (u: unknown) => u is Callback = Schema.is(Callback)
