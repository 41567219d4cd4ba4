/**
 * A session: a conversation with one agent, made of turns. `Session.run` sends a message and waits for the turn;
 * `Session.sendMessage` starts a turn and returns it (`Turn.result`, `Turn.events`, `Turn.answer`);
 * `Session.turn` finds a turn by id, for a program that answers later or from another process.
 *
 * @example
 * ```ts
 * import { Agent, Session, Turn } from "@parley/core"
 * import { Effect } from "effect"
 *
 * const program = (assistant: Agent.Agent) =>
 *   Effect.gen(function*() {
 *     const session = yield* Agent.startSession(assistant)
 *     const turn = yield* Session.sendMessage(session, "Where am I?")
 *     const state = yield* Turn.result(turn)
 *     yield* Session.cancel(session)
 *     return state
 *   })
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as CallbackHandler from "./CallbackHandler.js"
import type { SessionId, TurnId } from "./Ids.js"
import type {
  GrantNotFound,
  InvalidId,
  LimitExceeded,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "./ParleyError.js"
import type { RuntimeMissing } from "./ParleyError.js"
import * as Principal from "./Principal.js"
import type { SendOptions, Transport } from "./Transport.js"
import { transportFor } from "./Transport.js"
import * as Turn from "./Turn.js"
import type { ApprovalGranted } from "./TurnEvent.js"
import type { TurnState } from "./TurnState.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Session {
  readonly id: SessionId
  /** Handlers that come with the agent (tools with handlers). */
  readonly handler: CallbackHandler.Service | undefined
}

/**
 * @since 0.1.0
 * @category Constructors
 */
export const make = (fields: Session): Session => fields

const turnOf = (session: Session, ref: { readonly turnId: TurnId; readonly cursor: number }): Turn.Turn =>
  Turn.make({ sessionId: session.id, turnId: ref.turnId, cursor: ref.cursor, handler: session.handler })

/**
 * Starts a turn with the user's message. With `requestId` (1 to 128 printable ASCII characters, no spaces) the send is
 * idempotent: sending again with the same id (a retry after a dropped connection or a restart) returns the turn the
 * first send queued, with the same cursor, and queues nothing. A malformed id fails with `InvalidId`, and nothing is
 * sent.
 *
 * @example
 * ```ts
 * import { Session } from "@parley/core"
 * import { Effect } from "effect"
 *
 * const sendOnce = (session: Session.Session, requestId: string) =>
 *   Effect.gen(function*() {
 *     const first = yield* Session.sendMessage(session, "Book the 9:40 train.", { requestId })
 *     // The same id again (a retry): the same turn, nothing queued.
 *     const again = yield* Session.sendMessage(session, "Book the 9:40 train.", { requestId })
 *     return first.turnId === again.turnId // true
 *   })
 * ```
 *
 * @since 0.1.0
 * @category Accessors
 */
export const sendMessage = (
  session: Session,
  input: string,
  options?: SendOptions | undefined
): Effect.Effect<
  Turn.Turn,
  SessionNotFound | InvalidId | TransportFailure | LimitExceeded | RuntimeMissing,
  Transport
> =>
  Effect.flatMap(
    transportFor("Session", "sendMessage"),
    (transport) => transport.sendMessage(session.id, input, options)
  ).pipe(Effect.map((ref) => turnOf(session, ref)))

/**
 * Options of `Session.run`: those of `Turn.result` and the `requestId` of `sendMessage`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RunOptions<R = never> extends Turn.ResultOptions<R>, SendOptions {}

/**
 * Sends a message and waits for the turn (see `Turn.result`). A `requestId` makes the send idempotent (see
 * `sendMessage`): running again with the same id waits for the same turn.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const run = <R = never>(
  session: Session,
  input: string,
  options?: RunOptions<R>
): Effect.Effect<TurnState, Turn.ResultError | InvalidId, Transport | R> =>
  Effect.flatMap(
    sendMessage(session, input, options?.requestId === undefined ? undefined : { requestId: options.requestId }),
    (turn) => Turn.result(turn, options)
  )

/**
 * A turn of the session, by id.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const turn = (
  session: Session,
  turnId: TurnId
): Effect.Effect<
  Turn.Turn,
  SessionNotFound | TurnNotFound | TransportFailure | LimitExceeded | RuntimeMissing,
  Transport
> =>
  Effect.flatMap(transportFor("Session", "turn"), (transport) => transport.getTurn(session.id, turnId)).pipe(
    Effect.map((ref) => turnOf(session, ref))
  )

/**
 * Cancels the session's running turn: it ends `Cancelled`, and its open callbacks are resolved `cancelled`.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const cancel = (
  session: Session
): Effect.Effect<void, SessionNotFound | TransportFailure | LimitExceeded | RuntimeMissing, Transport> =>
  Effect.flatMap(transportFor("Session", "cancel"), (transport) => transport.cancel(session.id))

/**
 * The grants in force for the session: approvals answered with `remember` (its own, and its tree's). Each names its
 * tool id, decision, scope and who granted it.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const grants = (
  session: Session
): Effect.Effect<
  ReadonlyArray<ApprovalGranted>,
  SessionNotFound | TransportFailure | LimitExceeded | RuntimeMissing,
  Transport
> => Effect.flatMap(transportFor("Session", "grants"), (transport) => transport.grants(session.id))

/**
 * Revokes a grant by its id (`grant_…`, random: as `grants` lists it): later calls of its tool ask again. Recorded as
 * a `GrantRevoked` event naming who revoked it (a `Client` with the `label` given). An unknown or already revoked grant
 * fails with `GrantNotFound`, and nothing is recorded.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const revokeGrant = (
  session: Session,
  grantId: string,
  options?: { readonly label?: string | undefined }
): Effect.Effect<
  void,
  GrantNotFound | SessionNotFound | TransportFailure | LimitExceeded | RuntimeMissing,
  Transport
> =>
  Effect.flatMap(
    transportFor("Session", "revokeGrant"),
    (transport) =>
      transport.revokeGrant({
        sessionId: session.id,
        grantId,
        revokedBy: new Principal.Client(options?.label === undefined ? {} : { label: options.label })
      })
  )
