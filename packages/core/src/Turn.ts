/**
 * A turn of a session, and the three ways to drive it:
 *
 * - `Turn.result(turn)` waits for the turn while the `CallbackHandler` in context answers its callbacks; what the
 *   handlers leave open comes back as `Blocked`, and `Turn.result(turn, { after: blocked })` waits again from there.
 *   `onEvent` shows each event as it comes (a session app with functions). Handlers get only the callbacks still
 *   open, run concurrently, and each is interrupted when its callback closes (answered elsewhere, expired).
 * - `Turn.events(turn)` is a read-only `Stream` of the turn's events, ending with `TurnEnded` (a session app by
 *   hand: answer each `CallbackOpened` by id). Handlers never answer while it runs. A root turn's events include its
 *   subagents' while it runs; `TurnStarted.inherited` names the callbacks of earlier turns' subagents still open.
 * - `Turn.answer(turn, callbackId, answer)` answers one callback of the turn's tree by id, from this process or any
 *   other. It fails with `AnswerMismatch`, `CallbackNotOpen` or `CallbackAlreadyAnswered` and then sends nothing.
 *
 * @example
 * ```ts
 * import { Answer, Turn } from "@parley/core"
 * import { Effect } from "effect"
 *
 * const finish = (turn: Turn.Turn) =>
 *   Effect.gen(function*() {
 *     let state = yield* Turn.result(turn)
 *     while (state._tag === "Blocked") {
 *       for (const callback of state.callbacks) {
 *         if (callback._tag === "OpenApproval") yield* Turn.answer(turn, callback.id, new Answer.AllowApproval())
 *       }
 *       state = yield* Turn.result(turn, { after: state })
 *     }
 *     return state
 *   })
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Answer } from "./Answer.js"
import type { Callback } from "./Callback.js"
import type * as CallbackHandler from "./CallbackHandler.js"
import type { CallbackId, SessionId, TurnId } from "./Ids.js"
import * as internal from "./internal/turnResult.js"
import type { AnswerMismatch, SessionNotFound, TurnNotFound } from "./ParleyError.js"
import type { RuntimeMissing } from "./ParleyError.js"
import type { HandlerFailed, LimitExceeded, TransportFailure } from "./ParleyError.js"
import * as Principal from "./Principal.js"
import type { AnswerError, Transport } from "./Transport.js"
import { transportFor } from "./Transport.js"
import type { TurnEvent } from "./TurnEvent.js"
import type { Blocked, TurnState } from "./TurnState.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Turn {
  readonly sessionId: SessionId
  readonly turnId: TurnId
  /** The `seq` the turn's events start from. */
  readonly cursor: number
  /** Handlers that come with the agent (tools with handlers); they answer before the context's handler. */
  readonly handler: CallbackHandler.Service | undefined
}

/**
 * @since 0.1.0
 * @category Constructors
 */
export const make = (fields: Turn): Turn => fields

/**
 * @since 0.1.0
 * @category Models
 */
export interface ResultOptions<R = never> {
  /** Wait again from a `Blocked` state this turn returned. */
  readonly after?: Blocked | undefined
  /** Called with each event of the turn from the start (or from `after`) as it comes. */
  readonly onEvent?: ((event: TurnEvent) => void | Effect.Effect<void, never, R>) | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export type ResultError =
  | AnswerMismatch
  | HandlerFailed
  | SessionNotFound
  | TurnNotFound
  | TransportFailure
  | LimitExceeded
  | RuntimeMissing

/**
 * Waits for the turn: returns its final state, or `Blocked` when every open callback of its tree was left open by
 * the handlers (or there are no handlers). Uses the `CallbackHandler` from context when there is one.
 *
 * The handlers get the callbacks open when the wait begins and those that open while it runs — never one that is
 * already closed — concurrently; a handler is interrupted when its callback closes without it (answered by id,
 * expired, cancelled). A handler that fails or dies fails the wait with `HandlerFailed` and leaves its callback open.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const result = <R = never>(
  turn: Turn,
  options?: ResultOptions<R>
): Effect.Effect<TurnState, ResultError, Transport | R> => internal.result(turn, options)

/**
 * The turn's events from its start, ending with `TurnEnded`. Read-only: handlers never answer while it runs. A root
 * turn's events include its subagents' while it runs.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const events = (
  turn: Turn
): Stream.Stream<TurnEvent, SessionNotFound | TransportFailure | RuntimeMissing, Transport> =>
  Stream.unwrap(
    Effect.map(transportFor("Turn", "events"), (transport) =>
      transport.events(turn.sessionId, turn.cursor).pipe(
        Stream.filter(internal.viewOf(turn, undefined)),
        Stream.takeUntil((event) => event._tag === "TurnEnded" && event.sessionId === turn.sessionId)
      ))
  )

/**
 * Answers a callback of the turn's tree (its own, or a subagent's) by id. With `requestId` (see `AnswerOptions`) a
 * retry of an answer that was accepted succeeds.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const answer = (
  turn: Turn,
  callbackId: CallbackId,
  answer: Answer,
  options?: AnswerOptions
): Effect.Effect<void, AnswerError | RuntimeMissing, Transport> =>
  Effect.flatMap(
    transportFor("Turn", "answer"),
    (transport) =>
      transport.answer({
        sessionId: turn.sessionId,
        turnId: turn.turnId,
        callbackId,
        answer,
        answeredBy: new Principal.Client({
          ...(options?.label === undefined ? {} : { label: options.label }),
          ...(options?.roles === undefined ? {} : { roles: options.roles })
        }),
        requestId: options?.requestId
      })
  )

/**
 * Who answers by id: `label` is recorded on the answer's `CallbackResolved` (`answeredBy: Client { label }`), e.g. the
 * user who clicked "approve". `requestId` (1 to 128 printable ASCII characters, no spaces) is the caller's id of this
 * answer, recorded with it when it wins: answering again with the same id — a retry after a dropped connection, a
 * job run twice — then succeeds and adds nothing, where any other answer fails with `CallbackAlreadyAnswered`.
 * `roles` are the roles of who answers, as this program vouches for them (`Client { roles }`): what a rule's
 * `approvers` checks in process. Over HTTP they are not sent: the server counts its API key's roles.
 *
 * @since 0.1.0
 * @category Models
 */
export interface AnswerOptions {
  readonly label?: string | undefined
  readonly roles?: ReadonlyArray<string> | undefined
  readonly requestId?: string | undefined
}

/**
 * The callbacks open in the turn's tree right now (a root turn lists its subagents' too).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const openCallbacks = (
  turn: Turn
): Effect.Effect<
  ReadonlyArray<Callback>,
  SessionNotFound | TurnNotFound | TransportFailure | LimitExceeded | RuntimeMissing,
  Transport
> =>
  Effect.flatMap(transportFor("Turn", "openCallbacks"), (transport) => transport.snapshot(turn.sessionId, turn.turnId))
    .pipe(
      Effect.map((snapshot) => snapshot.callbacks)
    )
