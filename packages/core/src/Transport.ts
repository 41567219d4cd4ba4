/**
 * The protocol port: what the client API (`Agent`, `Session`, `Turn`) needs from a Parley runtime, in-process or
 * across a network. `LocalTransport.layer` (in `@parley/runtime`) and the HTTP transport provide the same Tag, so
 * the program chooses at the edge.
 *
 * @example
 * ```ts
 * import { Transport } from "@parley/core"
 * import { Effect, Stream } from "effect"
 *
 * const firstEvents = (sessionId: Parameters<Transport.Service["events"]>[0]) =>
 *   Effect.gen(function*() {
 *     const transport = yield* Transport.Transport
 *     return yield* transport.events(sessionId, 0).pipe(Stream.take(3), Stream.runCollect)
 *   })
 * ```
 *
 * @since 0.1.0
 */
import type * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { AgentSpec } from "./AgentSpec.js"
import type { Answer } from "./Answer.js"
import type * as Callback from "./Callback.js"
import { Callback as CallbackSchema } from "./Callback.js"
import type { CallbackId } from "./Ids.js"
import { SessionId, TurnId } from "./Ids.js"
import { NonNegativeInt } from "./internal/schemaFields.js"
import type {
  AgentInvalid,
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  GrantNotFound,
  InvalidId,
  LimitExceeded,
  NotAllowedToAnswer,
  PolicyInvalid,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "./ParleyError.js"
import { RuntimeMissing } from "./ParleyError.js"
import type { Principal } from "./Principal.js"
import { JsonSchema } from "./ToolSpec.js"
import type { ApprovalGranted, TurnEvent } from "./TurnEvent.js"
import { TurnState } from "./TurnState.js"

/**
 * A session as the transport reports it. `cursor` is the log position of the session's tree when the runtime read it
 * (the `seq` its next event will get: `0` for a tree with no events yet); a listing of many sessions leaves it out.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SessionInfo extends Schema.Class<SessionInfo>("@parley/core/Transport/SessionInfo")({
  sessionId: SessionId,
  agent: Schema.String,
  parentSessionId: Schema.optional(SessionId),
  createdAt: Schema.DateTimeUtcFromString,
  cursor: Schema.optional(NonNegativeInt)
}) {}

/**
 * A turn that was accepted: its ids and the `seq` of its `TurnQueued` event (where its events start).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TurnRef extends Schema.Class<TurnRef>("@parley/core/Transport/TurnRef")({
  sessionId: SessionId,
  turnId: TurnId,
  cursor: NonNegativeInt
}) {}

/**
 * A turn as it stands at one point of its tree's log: the callbacks it lists as open, the log position (`cursor`: the
 * `seq` the next event will get) and its state when it ended or is blocked (`undefined` while queued or running).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TurnSnapshot extends Schema.Class<TurnSnapshot>("@parley/core/Transport/TurnSnapshot")({
  turn: TurnRef,
  callbacks: Schema.Array(CallbackSchema),
  cursor: NonNegativeInt,
  /** The `seq` of the turn's `TurnStarted`, once it started. */
  started: Schema.optional(NonNegativeInt),
  state: Schema.optional(TurnState)
}) {}

/**
 * A callback open in some tree, as `listOpen` gives it: the callback (its `sessionId` and `turnId` are what an answer
 * names) and the JSON Schema of the answer it expects.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class OpenCallback extends Schema.Class<OpenCallback>("@parley/core/Transport/OpenCallback")({
  callback: CallbackSchema,
  answerSchema: JsonSchema
}) {}

/**
 * Which open callbacks `listOpen` gives: of one session (its own, not its subagents'), of one kind, or all.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ListOpenFilter {
  readonly sessionId?: SessionId | undefined
  readonly kind?: Callback.Kind | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface AnswerRequest {
  /** The root session whose turn is answered (for a subagent's callback: the root's, not the child's). */
  readonly sessionId: SessionId
  readonly turnId: TurnId
  readonly callbackId: CallbackId
  readonly answer: Answer
  /** Who answers, recorded on the `CallbackResolved` (none: `Client` without a label). */
  readonly answeredBy?: Principal | undefined
  /**
   * The caller's id for this answer (1 to 128 printable ASCII characters, no spaces; see `Ids.RequestId`), recorded on
   * the `CallbackResolved` of the answer that wins. Answering again with the id of the winning answer succeeds and
   * adds nothing: a retry whose first try was accepted (a dropped connection, a message delivered twice) is not
   * reported `CallbackAlreadyAnswered`. Any other answer to a resolved callback still is. The HTTP transport makes one
   * up when none is given.
   */
  readonly requestId?: string | undefined
}

/**
 * Options of `sendMessage`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface SendOptions {
  /**
   * The caller's id for this message (1 to 128 printable ASCII characters, no spaces; see `Ids.RequestId`). Sending
   * again with the same id returns the turn the first send queued, whatever the input: a retry after a dropped
   * connection neither duplicates nor loses the turn. The HTTP transport makes one up when none is given.
   */
  readonly requestId?: string | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface RevokeGrantRequest {
  /** The session of the grant, or its tree's root. */
  readonly sessionId: SessionId
  readonly grantId: string
  /** Who revokes, recorded on the `GrantRevoked` (none: `Client` without a label). */
  readonly revokedBy?: Principal | undefined
}

/**
 * The errors an answer can meet: it does not fit (`AnswerMismatch`), its principal may not answer the callback
 * (`NotAllowedToAnswer`), the callback is not open or another answer won,
 * a malformed id, an unknown session or turn, or the transport's own (`TransportFailure`, `LimitExceeded`).
 *
 * @since 0.1.0
 * @category Models
 */
export type AnswerError =
  | AnswerMismatch
  | NotAllowedToAnswer
  | CallbackNotOpen
  | CallbackAlreadyAnswered
  | InvalidId
  | SessionNotFound
  | TurnNotFound
  | TransportFailure
  | LimitExceeded

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Creates a session running `agent`; the definition is validated first. */
  readonly createSession: (
    agent: AgentSpec
  ) => Effect.Effect<SessionInfo, AgentInvalid | PolicyInvalid | TransportFailure | LimitExceeded>
  readonly getSession: (
    sessionId: SessionId
  ) => Effect.Effect<SessionInfo, SessionNotFound | TransportFailure | LimitExceeded>
  /** A turn of the session: its ids and the `seq` its events start from. */
  readonly getTurn: (
    sessionId: SessionId,
    turnId: TurnId
  ) => Effect.Effect<TurnRef, SessionNotFound | TurnNotFound | TransportFailure | LimitExceeded>
  /**
   * Starts a turn with the user's message. With a `requestId` (see `SendOptions`) the call is idempotent: when the
   * session already has a turn queued under that id, its `TurnRef` is returned (same turn, same cursor) and nothing is
   * queued. A malformed request id fails with `InvalidId`, and nothing is sent.
   */
  readonly sendMessage: (
    sessionId: SessionId,
    input: string,
    options?: SendOptions | undefined
  ) => Effect.Effect<TurnRef, SessionNotFound | InvalidId | TransportFailure | LimitExceeded>
  /**
   * The events from `seq` on: the stored ones, then live ones as they are appended (live `MessageDelta`s included).
   * Never ends by itself. For a root session: its whole tree's log; for a subagent: its own events.
   */
  readonly events: (sessionId: SessionId, from: number) => Stream.Stream<TurnEvent, SessionNotFound | TransportFailure>
  /**
   * The same events as `events`, in a `Queue` that lives as long as the scope: a reader takes what came with
   * `Queue.takeAll`, with no `Stream` to run (what `Turn.result` reads). The queue fails with the error that stops
   * it (`Cause.Done` if it ends).
   */
  readonly subscribe: (
    sessionId: SessionId,
    from: number
  ) => Effect.Effect<
    Queue.Dequeue<TurnEvent, SessionNotFound | TransportFailure | Cause.Done>,
    SessionNotFound | TransportFailure,
    Scope.Scope
  >
  /** A turn now: the callbacks it lists as open (a root turn: its tree's), the log position, its state. */
  readonly snapshot: (
    sessionId: SessionId,
    turnId: TurnId
  ) => Effect.Effect<TurnSnapshot, SessionNotFound | TurnNotFound | TransportFailure | LimitExceeded>
  /**
   * Answers a callback of the turn's tree. Validated first: a mismatch stores nothing. Exactly one answer wins; with a
   * `requestId` (see `AnswerRequest`) the winner's retries succeed too. A malformed request id fails with `InvalidId`,
   * and nothing is sent.
   */
  readonly answer: (request: AnswerRequest) => Effect.Effect<void, AnswerError>
  /**
   * The grants in force for the session (`ApprovalGranted` not revoked): its own and its tree's; for a root session,
   * every grant of its tree.
   */
  readonly grants: (
    sessionId: SessionId
  ) => Effect.Effect<ReadonlyArray<ApprovalGranted>, SessionNotFound | TransportFailure | LimitExceeded>
  /** Revokes a grant (a `GrantRevoked` event): calls of its tool ask again. */
  readonly revokeGrant: (
    request: RevokeGrantRequest
  ) => Effect.Effect<void, GrantNotFound | SessionNotFound | TransportFailure | LimitExceeded>
  /** Cancels the session: its running turn ends `Cancelled`, open callbacks are resolved `cancelled`. */
  readonly cancel: (sessionId: SessionId) => Effect.Effect<void, SessionNotFound | TransportFailure | LimitExceeded>
  /**
   * The callbacks open across every tree the transport reaches (all the sessions of a store, whichever process runs
   * them), oldest first within a tree: what a program answering callbacks by id needs.
   */
  readonly listOpen: (
    filter?: ListOpenFilter
  ) => Effect.Effect<ReadonlyArray<OpenCallback>, TransportFailure | LimitExceeded>
}

/**
 * A transport with no limits of its own: `Service` without `LimitExceeded` among its errors. The engine is one (the
 * limits are a server's, met over HTTP); a server, or a cluster's runner, serves one.
 *
 * @since 0.1.0
 * @category Models
 */
export type Unlimited = { readonly [K in keyof Service]: WithoutLimits<Service[K]> }

/**
 * A method of `Service` without `LimitExceeded` among its errors.
 *
 * @since 0.1.0
 * @category Models
 */
export type WithoutLimits<F> = F extends (...args: infer A) => Effect.Effect<infer X, infer E, infer R> ?
  (...args: A) => Effect.Effect<X, Exclude<E, LimitExceeded>, R>
  : F

/**
 * @since 0.1.0
 * @category Context
 */
export class Transport extends Context.Service<Transport, Service>()("@parley/core/Transport") {}

/**
 * The `Transport` in context, for the client API: where none is (a program run without its runtime layer, which only
 * an unchecked program can do: the type asks for `Transport`), fails with `RuntimeMissing`, which says which layer
 * provides one, instead of dying with "Service not found".
 *
 * @since 0.1.0
 * @category Accessors
 */
export const transportFor = (module: string, method: string): Effect.Effect<Service, RuntimeMissing, Transport> =>
  Effect.flatMap(
    Effect.serviceOption(Transport),
    Option.match({
      onNone: () => Effect.fail(new RuntimeMissing({ module, method, service: Transport.key })),
      onSome: Effect.succeed
    })
  )
