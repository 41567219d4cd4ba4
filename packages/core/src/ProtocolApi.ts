/**
 * The HTTP contract of a Parley server, as an `HttpApi` of `effect/http-api`: schemas only, no server code. The
 * server (`@parley/server`) implements it over the engine, and the HTTP transport (`@parley/transport-http`) is built
 * from it with `HttpApiClient`, so a client never imports the server.
 *
 * Every route needs a bearer API key (`Authorization: Bearer <key>`); each key belongs to a tenant, which sees only its
 * own sessions: another tenant's id answers exactly like an unknown one. Every error of `ParleyError` maps to one HTTP
 * status and a JSON body that decodes back into the same typed error:
 *
 * | error | status |
 * |---|---|
 * | `InvalidId`, `AgentInvalid`, `PolicyInvalid`, `HttpApiDecodeError` (a request that does not decode, a body with a field it does not know) | 400 |
 * | `Unauthorized` | 401 |
 * | `NotAllowedToAnswer` (the key's roles and id are not among the callback's `approvers`) | 403 |
 * | `SessionNotFound`, `TurnNotFound`, `DeliveryNotFound`, `LinkNotFound` | 404 |
 * | `CallbackNotOpen`, `CallbackAlreadyAnswered` | 409 |
 * | `PayloadTooLarge`, `MessageTooLong` | 413 |
 * | `AnswerMismatch` | 422 |
 * | a body of another media type than `application/json` | 415 |
 * | `TooManyStreams`, `TooManyRequests` (with `Retry-After`) | 429 |
 * | `InternalError` (a defect of the server: the body names an incident the server logged) | 500 |
 * | `AnswerLinksOff` (the server has no links secret) | 501 |
 * | `TransportFailure` (its description short, never its cause) | 503 |
 *
 * A body is judged after the session its path names, as in-process: an unknown or foreign session is a 404
 * `SessionNotFound` whatever the body (`SessionFirst`).
 *
 * The events of a tree come as Server-Sent Events (`GET /sessions/:sessionId/events`): `id:` is the event's `seq`,
 * `event:` its `_tag`, `data:` the encoded `TurnEvent`; `Last-Event-ID` (or `?from=`) resumes right after an event;
 * `?live=false` gives the stored events and ends. The route's success is an `HttpApiSchema.StreamSse` of `TurnEvent`s
 * (`TurnEventFrame` is one frame), so a client derived with `HttpApiClient` reads a `Stream` of decoded events.
 *
 * @example
 * ```ts
 * import { ProtocolApi } from "@parley/core"
 * import { HttpApiClient } from "effect/http-api"
 * import { Effect } from "effect"
 *
 * const sessions = Effect.gen(function*() {
 *   const client = yield* HttpApiClient.make(ProtocolApi.ProtocolApi, { baseUrl: "http://127.0.0.1:8787" })
 *   return yield* client.sessions.list({ query: {} })
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import type * as HttpApiError from "effect/http-api/HttpApiError"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { AgentSpec } from "./AgentSpec.js"
import { Answer } from "./Answer.js"
import * as AnswerLink from "./AnswerLink.js"
import { Kind } from "./Callback.js"
import { CallbackId, SessionId, TurnId } from "./Ids.js"
import {
  AgentInvalid,
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  GrantNotFound,
  InvalidId,
  NotAllowedToAnswer,
  PolicyInvalid,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "./ParleyError.js"
import * as Suggestion from "./Suggestion.js"
import { OpenCallback, SessionInfo, TurnRef, TurnSnapshot } from "./Transport.js"
import { ApprovalGranted, TurnEvent } from "./TurnEvent.js"
import * as Webhook from "./Webhook.js"

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
  { httpApiStatus: 401 }
) {
  override get message(): string {
    return this.description
  }
}

/**
 * A request body larger than the server accepts; refused before it was read.
 *
 * @since 0.1.0
 * @category Errors
 */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>("@parley/core/ProtocolApi/PayloadTooLarge")(
  "PayloadTooLarge",
  { limit: Schema.Number },
  { httpApiStatus: 413 }
) {
  override get message(): string {
    return `the request body is larger than the server accepts (${this.limit} bytes)`
  }
}

/**
 * A user message longer than the server accepts.
 *
 * @since 0.1.0
 * @category Errors
 */
export class MessageTooLong extends Schema.TaggedError<MessageTooLong>("@parley/core/ProtocolApi/MessageTooLong")(
  "MessageTooLong",
  { limit: Schema.Number, length: Schema.Number },
  { httpApiStatus: 413 }
) {
  override get message(): string {
    return `the message has ${this.length} characters, more than the server accepts (${this.limit})`
  }
}

/**
 * The API key has as many event streams open as the server allows.
 *
 * @since 0.1.0
 * @category Errors
 */
export class TooManyStreams extends Schema.TaggedError<TooManyStreams>("@parley/core/ProtocolApi/TooManyStreams")(
  "TooManyStreams",
  { limit: Schema.Number },
  { httpApiStatus: 429 }
) {
  override get message(): string {
    return `the API key has as many event streams open as the server allows (${this.limit})`
  }
}

/**
 * The API key is over one of the server's limits on requests (429, with `Retry-After`): it has `limit` requests in
 * flight already (`what: "requests"`), or started `limit` sessions in the last minute (`what: "sessions"`). Nothing
 * was done; the same request may be sent again after `retryAfter` seconds.
 *
 * @since 0.1.0
 * @category Errors
 */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>("@parley/core/ProtocolApi/TooManyRequests")(
  "TooManyRequests",
  { what: Schema.Literals(["requests", "sessions"]), limit: Schema.Number, retryAfter: Schema.Number },
  { httpApiStatus: 429 }
) {
  override get message(): string {
    const over = this.what === "requests"
      ? `has as many requests in flight as the server allows (${this.limit})`
      : `started as many sessions in the last minute as the server allows (${this.limit})`
    return `the API key ${over}: retry in ${this.retryAfter} s`
  }
}

/** Between an excess property's message and the names its struct knows (the formatter's leaves are strings). */
const knownSeparator = "\u0000"

/**
 * The issues of a refusal: an excess property's message carries the names its struct knows, so that the refusal can
 * suggest the closest one to the key the caller sent.
 */
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => {
    const message = SchemaIssue.defaultLeafHook(issue)
    if (issue._tag !== "UnexpectedKey" || !SchemaAST.isObjects(issue.ast)) return message
    const known = issue.ast.propertySignatures.map((signature) => String(signature.name))
    return [message, ...known].join(knownSeparator)
  }
})

/** An issue's message, with "did you mean …?" for an excess property close to a known one. */
const messageOf = (message: string, key: PropertyKey | undefined) => {
  const [text, ...known] = message.split(knownSeparator)
  const suggested = typeof key === "string" ? Suggestion.closest(key, known) : undefined
  return suggested === undefined ? text : `${text} (did you mean ${suggested}?)`
}
const formatMessage = SchemaIssue.makeFormatterDefault()

/**
 * One way a request did not fit its route: where (`path`, inside the path parameters, the query, the headers or the
 * body) and what.
 *
 * @since 0.1.0
 * @category Errors
 */
export const DecodeIssue = Schema.Struct({
  path: Schema.Array(Schema.Union([Schema.String, Schema.Number])),
  message: Schema.String
})

/**
 * The request's path parameters, query, headers or body did not decode (400): the body every such refusal carries,
 * as the protocol always had (`{ "_tag": "HttpApiDecodeError", "issues": [...], "message": "..." }`). Effect's
 * HttpApi refuses such a request with an empty 400; the `DecodeErrors` middleware of every route gives it this body.
 *
 * @since 0.1.0
 * @category Errors
 */
export class HttpApiDecodeError extends Schema.TaggedError<HttpApiDecodeError>(
  "@parley/core/ProtocolApi/HttpApiDecodeError"
)(
  "HttpApiDecodeError",
  { issues: Schema.Array(DecodeIssue), message: Schema.String },
  { httpApiStatus: 400, description: "The request did not match the expected schema" }
) {
  /**
   * The typed refusal of a request whose `kind` (params, query, headers, payload) did not decode.
   *
   * @since 0.1.0
   */
  static fromSchemaError(error: HttpApiError.HttpApiSchemaError): HttpApiDecodeError {
    const issue = error.cause.issue
    const all = formatIssues(issue).issues
    const issues = all.slice(0, maxIssues).map((entry) => {
      const keys = (entry.path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment))
      return {
        path: keys.map((key) => (typeof key === "number" ? key : shorten(String(key), 100))),
        message: shorten(messageOf(entry.message, keys.at(-1)), 200)
      }
    })
    if (all.length > maxIssues) issues.push({ path: [], message: `and ${all.length - maxIssues} more issues` })
    return new HttpApiDecodeError({ issues, message: shorten(formatMessage(issue), 500) })
  }
}

/**
 * How much of a refused request its 400 repeats: the first issues, each message and key cut short. A hostile body
 * gets an answer of a few KB, never its own value back several times over.
 */
const maxIssues = 20

const shorten = (text: string, limit: number) => (text.length <= limit ? text : `${text.slice(0, limit - 1)}…`)

/**
 * The middleware of the whole protocol that turns a request that does not decode into `HttpApiDecodeError` (400).
 * The server provides it with `DecodeErrors.layer`; a client needs nothing.
 *
 * @since 0.1.0
 * @category Models
 */
export class DecodeErrors extends HttpApiMiddleware.Service<DecodeErrors>()("@parley/core/ProtocolApi/DecodeErrors", {
  error: HttpApiDecodeError
}) {
  /**
   * The server's implementation: a request that did not decode fails with `HttpApiDecodeError`; a response that
   * did not encode stays Effect's (a reported 500).
   *
   * @since 0.1.0
   */
  static readonly layer = HttpApiMiddleware.layerSchemaErrorTransform(
    DecodeErrors,
    (error) =>
      error.kind === "Body" || error.kind === "ResponseHeaders"
        ? Effect.fail(error)
        : Effect.fail(HttpApiDecodeError.fromSchemaError(error))
  )
}

/**
 * The server failed while answering (500): an unexpected defect, or a response it could not encode. The body names
 * the incident, never its cause: the server logs the cause under the same id.
 *
 * @since 0.1.0
 * @category Errors
 */
export class InternalError extends Schema.TaggedError<InternalError>("@parley/core/ProtocolApi/InternalError")(
  "InternalError",
  { incident: Schema.String },
  { httpApiStatus: 500 }
) {
  override get message(): string {
    return `the server failed (incident ${this.incident}); its log has the cause`
  }
}

/**
 * The middleware of the whole protocol that keeps the server's internals out of its answers: a defect becomes an
 * `InternalError` (500) and a `TransportFailure` (503) loses its cause and keeps a short description, each naming
 * an incident whose cause the server logs. The server provides it; a client needs nothing.
 *
 * @since 0.1.0
 * @category Models
 */
export class Incidents extends HttpApiMiddleware.Service<Incidents>()("@parley/core/ProtocolApi/Incidents", {
  error: [InternalError, TransportFailure.pipe(HttpApiSchema.status(503))]
}) {}

// The core errors with the status each has on the wire.
const invalidId = InvalidId.pipe(HttpApiSchema.status(400))
const agentInvalid = AgentInvalid.pipe(HttpApiSchema.status(400))
const policyInvalid = PolicyInvalid.pipe(HttpApiSchema.status(400))
const sessionNotFound = SessionNotFound.pipe(HttpApiSchema.status(404))
const turnNotFound = TurnNotFound.pipe(HttpApiSchema.status(404))
const grantNotFound = GrantNotFound.pipe(HttpApiSchema.status(404))
const callbackNotOpen = CallbackNotOpen.pipe(HttpApiSchema.status(409))
const callbackAlreadyAnswered = CallbackAlreadyAnswered.pipe(HttpApiSchema.status(409))
const answerMismatch = AnswerMismatch.pipe(HttpApiSchema.status(422))
const notAllowedToAnswer = NotAllowedToAnswer.pipe(HttpApiSchema.status(403))

/**
 * What any route may answer: the runtime behind the server failed (503), the body was too large (413), the key is
 * over a limit on requests (429).
 */
const anyRoute = [TransportFailure.pipe(HttpApiSchema.status(503)), PayloadTooLarge, TooManyRequests] as const

// =============================================================================
// Authorization
// =============================================================================

/**
 * The tenant of the request's API key: what the server's handlers read to scope every lookup.
 *
 * @since 0.1.0
 * @category Models
 */
export class Tenant extends Context.Service<Tenant, {
  readonly id: string
  /** A short, non-secret name of the key (for logs and per-key limits). */
  readonly keyId: string
  /** The key's roles (the server's configuration): who it may answer for, where a rule names `approvers`. */
  readonly roles?: ReadonlyArray<string> | undefined
}>()("@parley/core/ProtocolApi/Tenant") {}

/**
 * The bearer-key middleware of every route: it provides the `Tenant` or fails with `Unauthorized`.
 *
 * @since 0.1.0
 * @category Models
 */
export class Authorization extends HttpApiMiddleware.Service<Authorization, { provides: Tenant }>()(
  "@parley/core/ProtocolApi/Authorization",
  {
    error: Unauthorized,
    security: { bearer: HttpApiSecurity.bearer }
  }
) {}

/**
 * The middleware of the routes that name a session in their path and take a body (`POST /sessions/:sessionId/turns`,
 * `POST /sessions/:sessionId/turns/:turnId/callbacks/:callbackId/answer`): a body that does not decode is judged only
 * once the session is known to be the tenant's. An unknown or foreign session answers 404 `SessionNotFound` whatever
 * the body (the same bytes for both), as in-process, where the session is looked up before the answer is judged. The
 * server provides it; a client needs nothing.
 *
 * @since 0.1.0
 * @category Models
 */
export class SessionFirst extends HttpApiMiddleware.Service<SessionFirst>()("@parley/core/ProtocolApi/SessionFirst", {
  error: [sessionNotFound, ...anyRoute]
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
  next: Schema.optionalKey(Schema.String)
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
  requestId: Schema.optionalKey(Schema.String)
}) {}

const sessionPath = { sessionId: SessionId }
const turnPath = { sessionId: SessionId, turnId: TurnId }
const callbackPath = { sessionId: SessionId, turnId: TurnId, callbackId: CallbackId }

/**
 * The media type of the event stream.
 *
 * @since 0.1.0
 * @category Models
 */
export const eventStreamContentType = "text/event-stream"

/**
 * One Server-Sent Event of the events route: `id:` the event's `seq` (none for a `MessageDelta`, which shares its
 * step's), `event:` its `_tag`, `data:` the encoded `TurnEvent` as JSON. Decodes to the `TurnEvent`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const TurnEventFrame = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  event: Schema.optionalKey(Schema.String),
  data: Schema.String
}).pipe(Schema.decodeTo(
  Schema.toCodecJson(TurnEvent),
  SchemaTransformation.transformEffect<
    Schema.Json,
    { readonly id?: string; readonly event?: string; readonly data: string }
  >({
    decode: (frame, options) =>
      Effect.try({
        try: (): Schema.Json => JSON.parse(frame.data),
        catch: () => new SchemaIssue.InvalidValue({ message: "an event's data is not JSON" }, frame.data, options)
      }),
    encode: (encoded) => {
      const { _tag, seq } = encoded as { readonly _tag: string; readonly seq: number }
      const data = JSON.stringify(encoded)
      return Effect.succeed(_tag === "MessageDelta" ? { event: _tag, data } : { id: String(seq), event: _tag, data })
    }
  })
))

/**
 * Who the client says answers (recorded as the `onBehalfOf` of the key's `ApiKey` principal): the name of the handler
 * that decided, or a label of the person or program answering by id.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const AnsweredByParams = Schema.Struct({
  handler: Schema.optionalKey(Schema.String),
  label: Schema.optionalKey(Schema.String)
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
  requestId: Schema.optionalKey(Schema.String)
})

/**
 * Which open callbacks one answer goes to (`POST /callbacks/answer`): every condition given must hold. `tool` is a
 * tool's id or name (`client.get_location`, `get_location`) or, for a sign-in, a source (`gmail`); `sessionId` the
 * callback's own session; `treeId` a root session, its subagents' callbacks included; `olderThan` seconds since the
 * callback opened.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const CallbackFilter = Schema.Struct({
  tool: Schema.optionalKey(Schema.String),
  sessionId: Schema.optionalKey(SessionId),
  treeId: Schema.optionalKey(SessionId),
  kind: Schema.optionalKey(Kind),
  olderThan: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
})

/**
 * The body of `POST /callbacks/answer`: one answer for every open callback of the tenant that `filter` matches, each
 * answered as if by its own request (judged, recorded and reported one by one). At least one condition is needed
 * (`{}` would answer everything). `dryRun` lists what would be answered and sends nothing.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const AnswerManyRequest = Schema.Struct({
  filter: CallbackFilter.check(
    Schema.makeFilter((filter) => Object.keys(filter).length > 0 || "name at least one condition")
  ),
  answer: Answer,
  label: Schema.optionalKey(Schema.String),
  dryRun: Schema.optionalKey(Schema.Boolean)
})

/**
 * One line of a batch answer's report: the callback, and whether it was answered or refused (with the error's tag
 * and why: `AnswerMismatch` when the answer does not fit it, `CallbackAlreadyAnswered` when someone was first).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const AnswerManyLine = Schema.Struct({
  callbackId: CallbackId,
  sessionId: SessionId,
  turnId: TurnId,
  kind: Kind,
  subject: Schema.String,
  outcome: Schema.Literals(["answered", "refused", "matched"]),
  error: Schema.optionalKey(Schema.String),
  reason: Schema.optionalKey(Schema.String)
})

/**
 * @since 0.1.0
 * @category Schemas
 */
export const AnswerManyReport = Schema.Struct({ results: Schema.Array(AnswerManyLine) })

// =============================================================================
// Groups
// =============================================================================

/**
 * Sessions: create (the body is an `AgentSpec`: a server runs its own agent of that `name`, the body's `permissions`
 * only narrowing its policy; other definitions only if it accepts them), list (newest first, paged), get, cancel.
 *
 * @since 0.1.0
 * @category Groups
 */
export class SessionsGroup extends HttpApiGroup.make("sessions")
  .add(
    HttpApiEndpoint.post("create", "/sessions", {
      payload: AgentSpec,
      success: SessionInfo.pipe(HttpApiSchema.status(201)),
      error: [agentInvalid, policyInvalid, ...anyRoute]
    }),
    HttpApiEndpoint.get("list", "/sessions", {
      query: {
        limit: Schema.optionalKey(
          Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))
        ),
        cursor: Schema.optionalKey(Schema.String)
      },
      success: SessionPage,
      error: anyRoute
    }),
    HttpApiEndpoint.get("get", "/sessions/:sessionId", {
      params: sessionPath,
      success: SessionInfo,
      error: [sessionNotFound, ...anyRoute]
    }),
    HttpApiEndpoint.post("cancel", "/sessions/:sessionId/cancel", {
      params: sessionPath,
      success: HttpApiSchema.NoContent,
      error: [sessionNotFound, ...anyRoute]
    }),
    HttpApiEndpoint.get("grants", "/sessions/:sessionId/grants", {
      params: sessionPath,
      success: Schema.Array(ApprovalGranted),
      error: [sessionNotFound, ...anyRoute]
    }),
    HttpApiEndpoint.delete("revokeGrant", "/sessions/:sessionId/grants/:grantId", {
      params: { sessionId: SessionId, grantId: Schema.String },
      query: AnsweredByParams,
      success: HttpApiSchema.NoContent,
      error: [grantNotFound, sessionNotFound, ...anyRoute]
    })
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
    HttpApiEndpoint.post("send", "/sessions/:sessionId/turns", {
      params: sessionPath,
      payload: SendMessage,
      success: TurnRef.pipe(HttpApiSchema.status(202)),
      error: [sessionNotFound, invalidId, MessageTooLong, ...anyRoute]
    }).middleware(SessionFirst),
    HttpApiEndpoint.get("get", "/sessions/:sessionId/turns/:turnId", {
      params: turnPath,
      success: TurnSnapshot,
      error: [sessionNotFound, turnNotFound, ...anyRoute]
    }),
    HttpApiEndpoint.get("wait", "/sessions/:sessionId/turns/:turnId/wait", {
      params: turnPath,
      query: {
        timeout: Schema.optionalKey(Schema.NumberFromString.check(Schema.isBetween({ minimum: 0, maximum: 60 })))
      },
      success: TurnSnapshot,
      error: [sessionNotFound, turnNotFound, ...anyRoute]
    })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Turns of a session: one per user message.")
{}

/**
 * The `Last-Event-ID` header of an event stream: the `seq` of the last event the reader has, a non-negative integer
 * (at most 15 digits); empty or blank, the reader has none and the stream starts at the first event (as with no
 * header). Anything else is refused with a 400 `HttpApiDecodeError`, not read as a number it is not.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const LastEventId = Schema.String.check(
  Schema.isPattern(/^\s*\d{0,15}\s*$/, { expected: "the seq of an event (a non-negative integer), or nothing" })
)

/**
 * The tree's log as Server-Sent Events (see the module docs and `TurnEventFrame`). A comment line (`: heartbeat`)
 * opens the stream and comes every 15 seconds.
 *
 * @since 0.1.0
 * @category Groups
 */
export class EventsGroup extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("stream", "/sessions/:sessionId/events", {
      params: sessionPath,
      query: {
        from: Schema.optionalKey(
          Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))
        ),
        live: Schema.optionalKey(Schema.Literals(["true", "false"]))
      },
      headers: { "last-event-id": Schema.optionalKey(LastEventId) },
      success: HttpApiSchema.StreamSse({ events: TurnEventFrame, contentType: eventStreamContentType }).annotate({
        description: "A `text/event-stream`: `id:` the event's seq, `event:` its _tag, `data:` the encoded TurnEvent " +
          "(JSON). A comment line (`: heartbeat`) every 15 seconds. Resume with `Last-Event-ID` or `?from=`."
      }),
      error: [sessionNotFound, TooManyStreams, ...anyRoute]
    }).annotate(
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
    HttpApiEndpoint.get("listOpen", "/callbacks", {
      query: { sessionId: Schema.optionalKey(SessionId), kind: Schema.optionalKey(Kind) },
      success: Schema.Array(OpenCallback),
      error: anyRoute
    }),
    HttpApiEndpoint.post("answerMany", "/callbacks/answer", {
      payload: AnswerManyRequest,
      success: AnswerManyReport,
      error: anyRoute
    }).annotate(
      OpenApi.Description,
      "One answer to every open callback of the tenant the filter matches (tool, session, tree, kind, age), each " +
        "judged and recorded as if answered by its own request; one report line per callback (answered, or refused " +
        "and why). `dryRun` only lists them."
    ),
    HttpApiEndpoint.post("answer", "/sessions/:sessionId/turns/:turnId/callbacks/:callbackId/answer", {
      params: callbackPath,
      query: AnswerParams,
      payload: Answer,
      success: HttpApiSchema.NoContent,
      error: [
        invalidId,
        answerMismatch,
        notAllowedToAnswer,
        callbackNotOpen,
        callbackAlreadyAnswered,
        sessionNotFound,
        turnNotFound,
        ...anyRoute
      ]
    }).middleware(SessionFirst)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Callbacks the turns asked and wait on: approvals, client tool calls, sign-ins.")
{}

/**
 * Agents: the definitions the server serves (the session app lists them); a client creates a session of one by
 * posting it (or any definition of its name) to `POST /sessions`.
 *
 * @since 0.1.0
 * @category Groups
 */
export class AgentsGroup extends HttpApiGroup.make("agents")
  .add(HttpApiEndpoint.get("list", "/agents", { success: Schema.Array(AgentSpec), error: anyRoute }))
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Agents the server offers: definitions to start sessions of.")
{}

/**
 * Answer links: made for an open callback (one URL per answer, signed, single-use, expiring, optionally for a named
 * person), and revoked by id. Following one needs no key (the server's `/l/…` pages, outside this API).
 *
 * @since 0.1.0
 * @category Groups
 */
export class LinksGroup extends HttpApiGroup.make("links")
  .add(
    HttpApiEndpoint.post("create", "/sessions/:sessionId/turns/:turnId/callbacks/:callbackId/links", {
      params: callbackPath,
      payload: AnswerLink.CreateLinks,
      success: AnswerLink.Links.pipe(HttpApiSchema.status(201)),
      error: [AnswerLink.AnswerLinksOff, callbackNotOpen, sessionNotFound, turnNotFound, ...anyRoute]
    }).annotate(
      OpenApi.Description,
      "Answer links for an open callback: one URL per answer (`allow`, `deny`, or `answer` for a form), each " +
        "single-use and expiring, optionally for a named person. Following one shows a confirmation page; " +
        "confirming answers the callback. The URLs are in this response only."
    ),
    HttpApiEndpoint.delete("revoke", "/links/:linkId", {
      params: { linkId: Schema.String },
      success: HttpApiSchema.NoContent,
      error: [AnswerLink.LinkNotFound, ...anyRoute]
    }).annotate(
      OpenApi.Description,
      "Revokes an open answer link: following it then shows the page of an unknown link."
    )
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Answer links: callbacks answered by people who hold no API key.")
{}

/**
 * The body of `POST /webhooks/deliveries/redeliver`: the event to deliver again.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class RedeliverRequest extends Schema.Class<RedeliverRequest>("@parley/core/ProtocolApi/RedeliverRequest")({
  eventId: Schema.String
}) {}

/**
 * Webhooks: the tenant's delivery log (every delivery of its events to its endpoints: attempts, the last status, the
 * next retry; or those of one event) and the redelivery of a past event by id. A server without webhooks has an empty
 * log.
 *
 * @since 0.1.0
 * @category Groups
 */
export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("deliveries", "/webhooks/deliveries", {
      query: {
        eventId: Schema.optionalKey(Schema.String),
        limit: Schema.optionalKey(
          Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 500 }))
        )
      },
      success: Schema.Array(Webhook.Delivery),
      error: anyRoute
    }),
    HttpApiEndpoint.post("redeliver", "/webhooks/deliveries/redeliver", {
      payload: RedeliverRequest,
      success: Schema.Array(Webhook.Delivery),
      error: [Webhook.DeliveryNotFound.pipe(HttpApiSchema.status(404)), ...anyRoute]
    })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Webhook deliveries of the tenant's events: the delivery log, redelivery by id.")
{}

/**
 * The whole protocol.
 *
 * @since 0.1.0
 * @category Models
 */
export class ProtocolApi extends HttpApi.make("parley")
  .add(SessionsGroup, TurnsGroup, EventsGroup, CallbacksGroup, AgentsGroup, WebhooksGroup, LinksGroup)
  .middleware(DecodeErrors)
  .middleware(Incidents)
  // Bodies are strict, as the answer schemas the server advertises say (`additionalProperties: false`): a misspelt
  // field is a 400 naming it, not a field silently dropped (a `remeber` that remembers nothing).
  .annotate(HttpApi.PayloadParseOptions, { onExcessProperty: "error" })
  .annotate(OpenApi.Title, "Parley")
  .annotate(OpenApi.Description, "Agent sessions whose questions to the program are typed callbacks.")
{}
