/**
 * The HTTP contract of a Parley server, as an `HttpApi` of `@effect/platform`: schemas only, no server code. The
 * server (`@parley/server`) implements it over the engine, and the HTTP transport (`@parley/transport-http`) is built
 * from it with `HttpApiClient`, so a client never imports the server.
 *
 * Every route needs a bearer API key (`Authorization: Bearer <key>`); each key belongs to a tenant, which sees only its
 * own sessions: another tenant's id answers exactly like an unknown one. Every error of `ParleyError` maps to one HTTP
 * status and a JSON body that decodes back into the same typed error:
 *
 * | error | status |
 * |---|---|
 * | `InvalidId`, `AgentInvalid`, `PolicyInvalid` | 400 |
 * | `Unauthorized` | 401 |
 * | `SessionNotFound`, `TurnNotFound` | 404 |
 * | `CallbackNotOpen`, `CallbackAlreadyAnswered` | 409 |
 * | `PayloadTooLarge`, `MessageTooLong` | 413 |
 * | `AnswerMismatch` | 422 |
 * | `TooManyStreams` | 429 |
 * | `TransportFailure` | 503 |
 *
 * The events of a tree come as Server-Sent Events (`GET /sessions/:sessionId/events`): `id:` is the event's `seq`,
 * `event:` its `_tag`, `data:` the encoded `TurnEvent`; `Last-Event-ID` (or `?from=`) resumes right after an event;
 * `?live=false` gives the stored events and ends. HttpApi has no streaming type: the route is declared here with an
 * empty success and documented by hand.
 *
 * @example
 * ```ts
 * import { ProtocolApi } from "@parley/core"
 * import { HttpApiClient } from "@effect/platform"
 * import { Effect } from "effect"
 *
 * const sessions = Effect.gen(function*() {
 *   const client = yield* HttpApiClient.make(ProtocolApi.ProtocolApi, { baseUrl: "http://127.0.0.1:8787" })
 *   return yield* client.sessions.list({ urlParams: {} })
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { AgentSpec } from "./AgentSpec.js"
import { Answer } from "./Answer.js"
import { Kind } from "./Callback.js"
import { CallbackId, SessionId, TurnId } from "./Ids.js"
import {
  AgentInvalid,
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  GrantNotFound,
  InvalidId,
  PolicyInvalid,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "./ParleyError.js"
import { OpenCallback, SessionInfo, TurnRef, TurnSnapshot } from "./Transport.js"
import { ApprovalGranted } from "./TurnEvent.js"

// =============================================================================
// Errors of the protocol (beyond the core family)
// =============================================================================

/**
 * No API key, or one the server does not know.
 *
 * @since 0.1.0
 * @category Errors
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>("@parley/core/ProtocolApi/Unauthorized")(
  "Unauthorized",
  { description: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

/**
 * A request body larger than the server accepts; refused before it was read.
 *
 * @since 0.1.0
 * @category Errors
 */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>("@parley/core/ProtocolApi/PayloadTooLarge")(
  "PayloadTooLarge",
  { limit: Schema.Number },
  HttpApiSchema.annotations({ status: 413 })
) {}

/**
 * A user message longer than the server accepts.
 *
 * @since 0.1.0
 * @category Errors
 */
export class MessageTooLong extends Schema.TaggedError<MessageTooLong>("@parley/core/ProtocolApi/MessageTooLong")(
  "MessageTooLong",
  { limit: Schema.Number, length: Schema.Number },
  HttpApiSchema.annotations({ status: 413 })
) {}

/**
 * The API key has as many event streams open as the server allows.
 *
 * @since 0.1.0
 * @category Errors
 */
export class TooManyStreams extends Schema.TaggedError<TooManyStreams>("@parley/core/ProtocolApi/TooManyStreams")(
  "TooManyStreams",
  { limit: Schema.Number },
  HttpApiSchema.annotations({ status: 429 })
) {}

// =============================================================================
// Authorization
// =============================================================================

/**
 * The tenant of the request's API key: what the server's handlers read to scope every lookup.
 *
 * @since 0.1.0
 * @category Models
 */
export class Tenant extends Context.Tag("@parley/core/ProtocolApi/Tenant")<Tenant, {
  readonly id: string
  /** A short, non-secret name of the key (for logs and per-key limits). */
  readonly keyId: string
}>() {}

/**
 * The bearer-key middleware of every route: it provides the `Tenant` or fails with `Unauthorized`.
 *
 * @since 0.1.0
 * @category Models
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("@parley/core/ProtocolApi/Authorization", {
  failure: Unauthorized,
  provides: Tenant,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

// =============================================================================
// Schemas of the routes
// =============================================================================

/**
 * One page of sessions, newest first; `next` is the cursor of the following page.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SessionPage extends Schema.Class<SessionPage>("@parley/core/ProtocolApi/SessionPage")({
  sessions: Schema.Array(SessionInfo),
  next: Schema.optional(Schema.String)
}) {}

/**
 * The body of `POST /sessions/:sessionId/turns`. `requestId` (optional, 1 to 128 printable ASCII characters without
 * spaces) makes the POST idempotent: a repeat with the same id answers the turn the first one queued (same `turnId`,
 * same `cursor`) and queues nothing, so a client that lost the response retries safely. A malformed one is refused
 * with `InvalidId` (400).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SendMessage extends Schema.Class<SendMessage>("@parley/core/ProtocolApi/SendMessage")({
  input: Schema.String,
  requestId: Schema.optional(Schema.String)
}) {}

const sessionPath = Schema.Struct({ sessionId: SessionId })
const turnPath = Schema.Struct({ sessionId: SessionId, turnId: TurnId })
const callbackPath = Schema.Struct({ sessionId: SessionId, turnId: TurnId, callbackId: CallbackId })

/**
 * The media type of the event stream.
 *
 * @since 0.1.0
 * @category Models
 */
export const eventStreamContentType = "text/event-stream"

// =============================================================================
// Groups
// =============================================================================

/**
 * Who the client says answers (recorded as the `onBehalfOf` of the key's `ApiKey` principal): the name of the handler
 * that decided, or a label of the person or program answering by id.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const AnsweredByParams = Schema.Struct({
  handler: Schema.optional(Schema.String),
  label: Schema.optional(Schema.String)
})

/**
 * The query of an answer: who answers (`AnsweredByParams`) and the client's `requestId` of this answer (1 to 128
 * printable ASCII characters without spaces; a malformed one is refused with `InvalidId`, 400). A POST repeated with
 * the id of the answer that won — a retry after a dropped connection — answers 204 again and adds nothing; any other
 * answer to a resolved callback is 409 `CallbackAlreadyAnswered`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const AnswerParams = Schema.Struct({
  ...AnsweredByParams.fields,
  requestId: Schema.optional(Schema.String)
})

/**
 * Sessions: create (the body is the `AgentSpec`), list (newest first, paged), get, cancel.
 *
 * @since 0.1.0
 * @category Groups
 */
export class SessionsGroup extends HttpApiGroup.make("sessions")
  .add(
    HttpApiEndpoint.post("create", "/sessions")
      .setPayload(AgentSpec)
      .addSuccess(SessionInfo, { status: 201 })
      .addError(AgentInvalid, { status: 400 })
      .addError(PolicyInvalid, { status: 400 })
  )
  .add(
    HttpApiEndpoint.get("list", "/sessions")
      .setUrlParams(Schema.Struct({
        limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100))),
        cursor: Schema.optional(Schema.String)
      }))
      .addSuccess(SessionPage)
  )
  .add(
    HttpApiEndpoint.get("get", "/sessions/:sessionId")
      .setPath(sessionPath)
      .addSuccess(SessionInfo)
      .addError(SessionNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.post("cancel", "/sessions/:sessionId/cancel")
      .setPath(sessionPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(SessionNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.get("grants", "/sessions/:sessionId/grants")
      .setPath(sessionPath)
      .addSuccess(Schema.Array(ApprovalGranted))
      .addError(SessionNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.del("revokeGrant", "/sessions/:sessionId/grants/:grantId")
      .setPath(Schema.Struct({ sessionId: SessionId, grantId: Schema.String }))
      .setUrlParams(AnsweredByParams)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(GrantNotFound, { status: 404 })
      .addError(SessionNotFound, { status: 404 })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Sessions of the tenant: each runs one agent (and its subagents); its grants.")
{}

/**
 * Turns: send a message (the `TurnRef` comes back at once), get a turn as it stands (`TurnSnapshot`), and wait for it
 * (long-poll: the snapshot once the turn ended or is blocked, or as it stands after `timeout` seconds).
 *
 * @since 0.1.0
 * @category Groups
 */
export class TurnsGroup extends HttpApiGroup.make("turns")
  .add(
    HttpApiEndpoint.post("send", "/sessions/:sessionId/turns")
      .setPath(sessionPath)
      .setPayload(SendMessage)
      .addSuccess(TurnRef, { status: 202 })
      .addError(SessionNotFound, { status: 404 })
      .addError(InvalidId, { status: 400 })
      .addError(MessageTooLong)
  )
  .add(
    HttpApiEndpoint.get("get", "/sessions/:sessionId/turns/:turnId")
      .setPath(turnPath)
      .addSuccess(TurnSnapshot)
      .addError(SessionNotFound, { status: 404 })
      .addError(TurnNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.get("wait", "/sessions/:sessionId/turns/:turnId/wait")
      .setPath(turnPath)
      .setUrlParams(Schema.Struct({
        timeout: Schema.optional(Schema.NumberFromString.pipe(Schema.between(0, 60)))
      }))
      .addSuccess(TurnSnapshot)
      .addError(SessionNotFound, { status: 404 })
      .addError(TurnNotFound, { status: 404 })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Turns of a session: one per user message.")
{}

/**
 * The tree's log as Server-Sent Events (see the module docs). Served raw: the success here is a placeholder.
 *
 * @since 0.1.0
 * @category Groups
 */
export class EventsGroup extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("stream", "/sessions/:sessionId/events")
      .setPath(sessionPath)
      .setUrlParams(Schema.Struct({
        from: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())),
        live: Schema.optional(Schema.Literal("true", "false"))
      }))
      .setHeaders(Schema.Struct({ "last-event-id": Schema.optional(Schema.String) }))
      .addSuccess(
        Schema.Void.annotations(HttpApiSchema.annotations({ status: 200 })).annotations({
          description:
            "A `text/event-stream`: `id:` the event's seq, `event:` its _tag, `data:` the encoded TurnEvent " +
            "(JSON). A comment line (`: heartbeat`) every 15 seconds. Resume with `Last-Event-ID` or `?from=`."
        })
      )
      .addError(SessionNotFound, { status: 404 })
      .addError(TooManyStreams)
      .annotate(
        OpenApi.Description,
        "The session's events from a cursor (the whole tree's log for a root session), as Server-Sent Events."
      )
  )
  .middleware(Authorization)
{}

/**
 * Callbacks: the open ones across the tenant's sessions (each with the JSON Schema of the answer it expects), and the
 * answer to one by id (the body is an `Answer`, validated as in-process).
 *
 * @since 0.1.0
 * @category Groups
 */
export class CallbacksGroup extends HttpApiGroup.make("callbacks")
  .add(
    HttpApiEndpoint.get("listOpen", "/callbacks")
      .setUrlParams(Schema.Struct({ sessionId: Schema.optional(SessionId), kind: Schema.optional(Kind) }))
      .addSuccess(Schema.Array(OpenCallback))
  )
  .add(
    HttpApiEndpoint.post("answer", "/sessions/:sessionId/turns/:turnId/callbacks/:callbackId/answer")
      .setPath(callbackPath)
      .setUrlParams(AnswerParams)
      .setPayload(Answer)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(InvalidId, { status: 400 })
      .addError(AnswerMismatch, { status: 422 })
      .addError(CallbackNotOpen, { status: 409 })
      .addError(CallbackAlreadyAnswered, { status: 409 })
      .addError(SessionNotFound, { status: 404 })
      .addError(TurnNotFound, { status: 404 })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Callbacks the turns asked and wait on: approvals, client tool calls, sign-ins.")
{}

/**
 * Agents: the definitions the server offers to start sessions of (its demo agents, for the session app); a client
 * creates a session by posting one of them to `POST /sessions`.
 *
 * @since 0.1.0
 * @category Groups
 */
export class AgentsGroup extends HttpApiGroup.make("agents")
  .add(HttpApiEndpoint.get("list", "/agents").addSuccess(Schema.Array(AgentSpec)))
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Agents the server offers: definitions to start sessions of.")
{}

/**
 * The whole protocol.
 *
 * @since 0.1.0
 * @category Models
 */
export class ProtocolApi extends HttpApi.make("parley")
  .add(SessionsGroup)
  .add(TurnsGroup)
  .add(EventsGroup)
  .add(CallbacksGroup)
  .add(AgentsGroup)
  .addError(TransportFailure, { status: 503 })
  .addError(PayloadTooLarge)
  .annotate(OpenApi.Title, "Parley")
  .annotate(OpenApi.Description, "Agent sessions whose questions to the program are typed callbacks.")
{}
