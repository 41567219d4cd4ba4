/**
 * `Turn.result`'s machinery: the wait on a turn's events, the handlers run for its open callbacks (one per callback
 * across the process), and which events of its session's stream belong to the turn.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type { Callback } from "../Callback.js"
import * as CallbackHandler from "../CallbackHandler.js"
import * as Handover from "../Handover.js"
import type { CallbackId } from "../Ids.js"
import type { SessionNotFound } from "../ParleyError.js"
import { HandlerFailed, TransportFailure } from "../ParleyError.js"
import type { Service as TransportService, TurnSnapshot } from "../Transport.js"
import type { Transport } from "../Transport.js"
import { transportFor } from "../Transport.js"
import type { ResultError, ResultOptions, Turn } from "../Turn.js"
import type { TurnEvent } from "../TurnEvent.js"
import type { TurnState } from "../TurnState.js"

const handlerFor = (turn: Turn) =>
  Effect.map(Effect.serviceOption(CallbackHandler.CallbackHandler), (fromContext) => {
    const handlers = [turn.handler, Option.getOrUndefined(fromContext)].filter((h) => h !== undefined)
    return handlers.length === 0 ? undefined : CallbackHandler.make(...handlers)
  })

/**
 * Which events of its session's stream belong to a turn: the turn's own, and — for a root turn, whose stream is its
 * whole tree's — its subagents' while it runs (after its `TurnStarted`, before its `TurnEnded`).
 */
export const viewOf = (turn: Turn, started: number | undefined) => {
  let startedAt = started
  let endedAt: number | undefined
  return (event: TurnEvent): boolean => {
    if (event.sessionId === turn.sessionId) {
      if (event.turnId !== turn.turnId) return false
      if (event._tag === "TurnStarted") startedAt = event.seq
      if (event._tag === "TurnEnded") endedAt = event.seq
      return true
    }
    return startedAt !== undefined && event.seq > startedAt && (endedAt === undefined || event.seq < endedAt)
  }
}

// =============================================================================
// Handling callbacks while a result waits
// =============================================================================

type Decision = "answered" | "kept"

/**
 * The callbacks being handled in this process, per transport: two `Turn.result`s of one turn never run a handler
 * twice for one callback (the second waits for the first's decision, and runs its own handler only if the first kept
 * the callback open).
 */
const handling = new WeakMap<TransportService, Map<CallbackId, Deferred.Deferred<Decision>>>()

const inProgress = (transport: TransportService) => {
  let map = handling.get(transport)
  if (map === undefined) {
    map = new Map()
    handling.set(transport, map)
  }
  return map
}

const describeCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.squash(cause)
  return failure instanceof Error ? failure.message : String(failure)
}

type Signal =
  | { readonly _tag: "Event"; readonly event: TurnEvent }
  | { readonly _tag: "StreamEnded"; readonly error: SessionNotFound | TransportFailure | undefined }
  | { readonly _tag: "Handled"; readonly callbackId: CallbackId; readonly decision: Decision }
  | { readonly _tag: "HandlerError"; readonly error: ResultError }

export const result = <R = never>(
  turn: Turn,
  options?: ResultOptions<R>
): Effect.Effect<TurnState, ResultError, Transport | R> =>
  Effect.scoped(Effect.gen(function*() {
    const transport = yield* transportFor("Turn", "result")
    const handler = yield* handlerFor(turn)
    const from = options?.after?.cursor ?? turn.cursor
    const snapshot = yield* transport.snapshot(turn.sessionId, turn.turnId)
    const waiting = { sessionId: turn.sessionId, turnId: turn.turnId }
    const signals = yield* Queue.unbounded<Signal>()
    const fibers = yield* FiberMap.make<CallbackId>()
    const shared = inProgress(transport)
    /** The callbacks this wait answered, on record in `shared` until it ends. */
    const answered = new Map<CallbackId, Deferred.Deferred<Decision>>()
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const [id, entry] of answered) if (shared.get(id) === entry) shared.delete(id)
      })
    )
    const closed = new Set<CallbackId>()
    /** The callbacks whose handler decided and is sending the answer: not interrupted when the callback closes. */
    const answering = new Set<CallbackId>()
    let running = 0
    /** The callbacks of the turn's view open as far as the events read say, and those this wait's handlers answered. */
    const open = new Set<CallbackId>(snapshot.callbacks.map((callback) => callback.id))
    const answeredHere = new Set<CallbackId>()

    const decide = (callback: Callback): Effect.Effect<Decision, ResultError> =>
      Effect.gen(function*() {
        if (handler === undefined) return "kept"
        const decision = yield* Effect.exit(CallbackHandler.decide(handler, callback, {
          session: { id: callback.sessionId, turnId: callback.turnId },
          waiting,
          fromWaitingTurn: (callback.rootTurnId ?? callback.turnId) === turn.turnId
        }))
        if (Exit.isFailure(decision)) {
          if (Cause.hasInterruptsOnly(decision.cause)) return yield* Effect.interrupt
          return yield* new HandlerFailed({
            module: "Turn",
            method: "result",
            callbackId: callback.id,
            kind: callback.kind,
            description: describeCause(decision.cause),
            cause: Cause.squash(decision.cause)
          })
        }
        const decided = decision.value
        if (decided._tag === "KeepCallbackOpen") return "kept"
        answering.add(callback.id)
        // Another client may have answered first: that answer stands. A handler the callback does not let answer it
        // (its `approvers`) leaves it open for someone who may.
        const outcome = yield* transport.answer({
          ...waiting,
          callbackId: callback.id,
          answer: decided.answer,
          answeredBy: decided.answeredBy
        }).pipe(
          Effect.as<Decision>("answered"),
          Effect.catchTags({
            CallbackNotOpen: () => Effect.succeed<Decision>("answered"),
            CallbackAlreadyAnswered: () => Effect.succeed<Decision>("answered"),
            NotAllowedToAnswer: () => Effect.succeed<Decision>("kept"),
            // A handler's answer carries no request id, so none can be malformed.
            InvalidId: (error) => Effect.die(error)
          })
        )
        if (outcome === "kept") answering.delete(callback.id)
        return outcome
      })

    /** Runs the handler for one callback, unless another wait of this process is already on it. */
    const handle = (callback: Callback) =>
      Effect.gen(function*() {
        const other = shared.get(callback.id)
        if (other !== undefined && (yield* Deferred.await(other)) === "answered") return "answered" as const
        const mine = yield* Deferred.make<Decision>()
        shared.set(callback.id, mine)
        return yield* decide(callback).pipe(
          Effect.onExit((exit) => {
            const decision = Exit.isSuccess(exit) ? exit.value : "kept"
            // An answered callback stays on record until this wait ends: another wait that reads its opening only
            // now (its events come in their own batches) must not run a handler for it again.
            if (decision === "answered") answered.set(callback.id, mine)
            else if (shared.get(callback.id) === mine) shared.delete(callback.id)
            return Deferred.succeed(mine, decision)
          })
        )
      })

    const start = (callback: Callback) =>
      Effect.suspend(() => {
        // With no handler every callback stays open: nothing to run.
        if (handler === undefined || closed.has(callback.id)) return Effect.void
        running += 1
        return FiberMap.run(
          fibers,
          callback.id,
          handle(callback).pipe(
            Effect.matchEffect({
              onFailure: (error) => Queue.offer(signals, { _tag: "HandlerError", error }),
              onSuccess: (decision) => Queue.offer(signals, { _tag: "Handled", callbackId: callback.id, decision })
            }),
            Effect.onInterrupt(() => Effect.sync(() => (running -= 1)))
          ),
          { onlyIfMissing: true }
        )
      })

    const inView = viewOf(turn, snapshot.started)
    // The events come in a queue (no stream to run): each batch joins the signals; the queue's end is the stream's.
    const events = yield* transport.subscribe(turn.sessionId, from)
    /**
     * Whether a hand-over is due: the wait reads each batch as soon as the code that moved it is done (a microtask), not
     * at the scheduler's next round, a turn of the event loop later (a callback is seen open, and its handler started,
     * milliseconds sooner under load).
     */
    const handOver = Handover.make(signals)
    const move: Effect.Effect<never, SessionNotFound | TransportFailure | Cause.Done> = Effect.flatMap(
      Queue.takeAll(events),
      (batch) => {
        // A callback opened and resolved in the same batch (a grant answered it in the same append) was never open for
        // a handler: it is known closed before its opening is read, so no handler starts for it.
        for (const event of batch) if (event._tag === "CallbackResolved") closed.add(event.callbackId)
        Queue.offerAllUnsafe(signals, batch.map((event): Signal => ({ _tag: "Event", event })))
        handOver()
        return move
      }
    )
    yield* move.pipe(
      Effect.catch((error) =>
        Queue.offer(signals, { _tag: "StreamEnded", error: Cause.isDone(error) ? undefined : error })
      ),
      Effect.forkScoped
    )
    yield* Effect.forEach(snapshot.callbacks, start, { discard: true })

    // A TurnBlocked (or the snapshot's Blocked) that nothing happened after: the seq it was seen at.
    let blockedAt: number | undefined = snapshot.state?._tag === "Blocked" ? snapshot.state.cursor - 1 : undefined
    let lastSeq = from - 1

    /**
     * Whether every callback known open was answered by this wait's handlers: the turn moves on (their
     * `CallbackResolved`s are on their way), so a `TurnBlocked` read before them needs no confirming (over a network:
     * one request fewer per answer).
     */
    const allAnsweredHere = () => {
      if (open.size === 0) return false
      for (const id of open) if (!answeredHere.has(id)) return false
      return true
    }

    /**
     * Whether the wait may be Blocked now: a TurnBlocked read, nothing after it, no handler running, and a callback open
     * that this wait did not answer.
     */
    const mayBeBlocked = () => blockedAt !== undefined && running === 0 && lastSeq >= blockedAt && !allAnsweredHere()

    const blockedNow = (): Effect.Effect<Option.Option<TurnState>, ResultError> =>
      Effect.gen(function*() {
        // Confirm with the runtime: the answers that were sent may already have moved the turn on. The Blocked state
        // the caller waits `after` is not news: wait for what comes next.
        const now: TurnSnapshot = yield* transport.snapshot(turn.sessionId, turn.turnId)
        // A Blocked this wait has not read up to yet lists callbacks its handlers have not seen: read on first.
        const seen = options?.after?.cursor ?? 0
        return now.state?._tag === "Blocked" && now.state.cursor > seen && now.state.cursor - 1 <= lastSeq
          ? Option.some<TurnState>(now.state)
          : Option.none()
      })

    // Signals are taken in batches (events that came together, handlers that finished together); Blocked is checked
    // once a batch. Most events call for nothing but bookkeeping: only what needs an effect is yielded.
    while (true) {
      const batch = yield* Queue.takeAll(signals)
      for (const signal of batch) {
        switch (signal._tag) {
          case "StreamEnded":
            return yield* signal.error ?? new TransportFailure({
              module: "Turn",
              method: "result",
              description: "the event stream ended early"
            })
          case "HandlerError":
            return yield* signal.error
          case "Handled":
            running -= 1
            if (signal.decision === "answered") answeredHere.add(signal.callbackId)
            break
          case "Event": {
            const event = signal.event
            if (!inView(event)) break
            if (event._tag !== "MessageDelta") lastSeq = Math.max(lastSeq, event.seq)
            if (options?.onEvent !== undefined) {
              const shown = options.onEvent(event)
              if (Effect.isEffect(shown)) yield* shown
            }
            if (event._tag === "CallbackOpened") {
              open.add(event.callback.id)
              if (event.seq >= snapshot.cursor) yield* start(event.callback)
            } else if (event._tag === "CallbackResolved") {
              open.delete(event.callbackId)
              closed.add(event.callbackId)
              // A handler that is sending its answer ends by itself; one still deciding is interrupted.
              if (!answering.has(event.callbackId)) yield* FiberMap.remove(fibers, event.callbackId)
            } else if (event._tag === "TurnEnded" && event.sessionId === turn.sessionId) {
              return event.state
            }
            if (event._tag === "TurnBlocked") blockedAt = event.seq
            else if (event._tag !== "MessageDelta") blockedAt = undefined
            break
          }
        }
      }
      if (mayBeBlocked()) {
        const blocked = yield* blockedNow()
        if (Option.isSome(blocked)) return blocked.value
      }
    }
  }))
