/**
 * A turn of a session, and the three ways to drive it:
 *
 * - `Turn.result(turn)` waits for the turn while the `CallbackHandler` in context answers its callbacks; what the
 *   handlers leave open comes back as `Blocked`, and `Turn.result(turn, { after: blocked })` waits again from there.
 *   `onEvent` shows each event as it comes (a session app with functions).
 * - `Turn.events(turn)` is a read-only `Stream` of the turn's events, ending with `TurnEnded` (a session app by
 *   hand: answer each `CallbackOpened` by id). Handlers never answer while it runs.
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
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { Answer } from "./Answer.js"
import * as CallbackHandler from "./CallbackHandler.js"
import type { CallbackId, SessionId, TurnId } from "./Ids.js"
import type {
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  SessionNotFound,
  TurnNotFound
} from "./ParleyError.js"
import { TransportFailure } from "./ParleyError.js"
import { Transport } from "./Transport.js"
import type { TurnEvent } from "./TurnEvent.js"
import { Blocked } from "./TurnState.js"
import type { TurnState } from "./TurnState.js"

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
export type ResultError = AnswerMismatch | SessionNotFound | TurnNotFound | TransportFailure

const handlerFor = (turn: Turn) =>
  Effect.map(Effect.serviceOption(CallbackHandler.CallbackHandler), (fromContext) => {
    const handlers = [turn.handler, Option.getOrUndefined(fromContext)].filter((h) => h !== undefined)
    return handlers.length === 0 ? undefined : CallbackHandler.make(...handlers)
  })

/**
 * Waits for the turn: returns its final state, or `Blocked` when every open callback of its tree was left open by
 * the handlers (or there are no handlers). Uses the `CallbackHandler` from context when there is one.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const result = <R = never>(
  turn: Turn,
  options?: ResultOptions<R>
): Effect.Effect<TurnState, ResultError, Transport | R> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const handler = yield* handlerFor(turn)
    const from = options?.after?.cursor ?? turn.cursor
    const children = new Set<SessionId>()
    const waiting = { sessionId: turn.sessionId, turnId: turn.turnId }

    const step = (event: TurnEvent): Effect.Effect<Option.Option<TurnState>, ResultError, R> =>
      Effect.gen(function*() {
        if (event.turnId !== turn.turnId) return Option.none()
        if (event._tag === "SubagentStarted") children.add(event.childSessionId)
        if (event.seq < from) return Option.none()
        if (options?.onEvent !== undefined) {
          const shown = options.onEvent(event)
          if (Effect.isEffect(shown)) yield* shown
        }
        switch (event._tag) {
          case "CallbackOpened": {
            if (handler === undefined) return Option.none()
            const callback = event.callback
            const fromWaitingTurn = callback.sessionId === turn.sessionId
              ? callback.turnId === turn.turnId
              : children.has(callback.sessionId)
            const decision = yield* handler.handle(callback, {
              session: { id: callback.sessionId, turnId: callback.turnId },
              waiting,
              fromWaitingTurn
            })
            if (decision._tag === "KeepCallbackOpen") return Option.none()
            // Another client may have answered first: that answer stands.
            yield* transport.answer({ ...waiting, callbackId: callback.id, answer: decision }).pipe(
              Effect.catchTags({ CallbackNotOpen: () => Effect.void, CallbackAlreadyAnswered: () => Effect.void })
            )
            return Option.none()
          }
          case "TurnBlocked": {
            // Answers may have arrived since the event was written: Blocked only when all are still open.
            const open = yield* transport.openCallbacks(turn.sessionId, turn.turnId)
            const callbacks = open.filter((callback) => event.callbackIds.includes(callback.id))
            if (callbacks.length !== event.callbackIds.length) return Option.none()
            return Option.some(
              new Blocked({ sessionId: turn.sessionId, turnId: turn.turnId, callbacks, cursor: event.seq + 1 })
            )
          }
          case "TurnEnded":
            return Option.some(event.state)
          default:
            return Option.none()
        }
      })

    const state = yield* transport.events(turn.sessionId, turn.cursor).pipe(
      Stream.mapEffect(step),
      Stream.filterMap((state) => state),
      Stream.runHead
    )
    return yield* Option.match(state, {
      onNone: () =>
        Effect.fail(
          new TransportFailure({ module: "Turn", method: "result", description: "the event stream ended early" })
        ),
      onSome: Effect.succeed
    })
  })

/**
 * The turn's events from its start, ending with `TurnEnded`. Read-only: handlers never answer while it runs.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const events = (turn: Turn): Stream.Stream<TurnEvent, SessionNotFound | TransportFailure, Transport> =>
  Stream.unwrap(
    Effect.map(Transport, (transport) =>
      transport.events(turn.sessionId, turn.cursor).pipe(
        Stream.filter((event) => event.turnId === turn.turnId),
        Stream.takeUntil((event) => event._tag === "TurnEnded")
      ))
  )

/**
 * Answers a callback of the turn's tree (its own, or a subagent's) by id.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const answer = (
  turn: Turn,
  callbackId: CallbackId,
  answer: Answer
): Effect.Effect<
  void,
  AnswerMismatch | CallbackNotOpen | CallbackAlreadyAnswered | SessionNotFound | TurnNotFound | TransportFailure,
  Transport
> =>
  Effect.flatMap(
    Transport,
    (transport) => transport.answer({ sessionId: turn.sessionId, turnId: turn.turnId, callbackId, answer })
  )

/**
 * The callbacks open in the turn's tree right now.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const openCallbacks = (turn: Turn) =>
  Effect.flatMap(Transport, (transport) => transport.openCallbacks(turn.sessionId, turn.turnId))
