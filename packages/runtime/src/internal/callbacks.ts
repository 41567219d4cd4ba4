import type { Callback } from "@parley/core/Callback"
import type { CallbackId, TurnId } from "@parley/core/Ids"
import { newCallbackId } from "@parley/core/Ids"
import { CallbackOpened, CallbackResolved, TurnBlocked } from "@parley/core/TurnEvent"
import type { Resolution } from "@parley/core/TurnEvent"
import type { Final } from "@parley/core/TurnState"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Service as SessionStore } from "../SessionStore.js"
import type { EventIds } from "./log.js"
import { append, appendToTreeUnlocked, locked } from "./log.js"
import type { Draft, Outcome, PendingCallback, RunningTurn, SessionRuntime, Tree } from "./state.js"

/** The callback broker: every open callback of every tree, and how the closed ones closed. */
export interface Broker {
  readonly store: SessionStore
  readonly pending: Map<CallbackId, PendingCallback>
  readonly closed: Map<CallbackId, Resolution>
}

export const makeBroker = (store: SessionStore): Broker => ({ store, pending: new Map(), closed: new Map() })

const appendCallbackEvent = (broker: Broker, pending: PendingCallback, draft: (ids: EventIds) => Draft) =>
  appendToTreeUnlocked(broker.store, pending.session, pending.callback.turnId, draft)

/** A fiber of the tree stopped running (it waits on a callback, or it ended): the tree may now be blocked. */
export const becameIdle = (broker: Broker, tree: Tree): Effect.Effect<void> =>
  Effect.suspend(() => {
    tree.active -= 1
    const turnId = tree.currentTurnId
    if (tree.active > 0 || tree.open.size === 0 || turnId === undefined) return Effect.void
    const callbackIds = [...tree.open.keys()]
    return append(broker.store, tree.root, [
      (meta) => new TurnBlocked({ sessionId: tree.root.session.sessionId, turnId, ...meta, callbackIds })
    ]).pipe(Effect.asVoid)
  })

/**
 * Opens a callback in `session`'s turn and waits for it to close. The deadline is kept on `Clock`, so tests move it
 * with `TestClock`; at the deadline the callback is resolved `expired`.
 */
export const open = (
  broker: Broker,
  options: {
    readonly session: SessionRuntime
    readonly tree: Tree
    readonly timeout: Duration.Duration | undefined
    readonly success?: PendingCallback["success"]
    readonly make: (
      fields: { id: CallbackId; openedAt: DateTime.Utc; expiresAt: DateTime.Utc | undefined }
    ) => Callback
  }
): Effect.Effect<Outcome> =>
  Effect.gen(function*() {
    const id = yield* newCallbackId
    const openedAt = yield* DateTime.now
    const expiresAt = options.timeout === undefined ? undefined : DateTime.addDuration(openedAt, options.timeout)
    const callback = options.make({ id, openedAt, expiresAt })
    const deferred = yield* Deferred.make<Outcome>()
    const pending: PendingCallback = {
      callback,
      session: options.session,
      tree: options.tree,
      deferred,
      success: options.success,
      waiting: true
    }
    yield* locked(
      options.session,
      Effect.gen(function*() {
        broker.pending.set(id, pending)
        options.tree.open.set(id, pending)
        yield* appendCallbackEvent(
          broker,
          pending,
          (ids) => (meta) => new CallbackOpened({ ...ids, ...meta, callback })
        )
      })
    )
    yield* becameIdle(broker, options.tree)
    const wait = Deferred.await(deferred)
    // The deadline is `expiresAt`, whatever time passed while the callback was being filed.
    const remaining = expiresAt === undefined
      ? undefined
      : Effect.map(DateTime.now, (now) => Duration.millis(Math.max(0, DateTime.distance(now, expiresAt))))
    const waitOrExpire = remaining === undefined ? wait : Effect.raceFirst(
      wait,
      Effect.flatMap(remaining, Effect.sleep).pipe(
        Effect.zipRight(resolve(broker, id, { _tag: "expired" })),
        Effect.zipRight(wait)
      )
    )
    return yield* Effect.ensuring(waitOrExpire, Effect.sync(() => reactivate(pending)))
  })

/** The fiber waiting on `pending` counts as running again (once: at resolution, or when it stops waiting). */
const reactivate = (pending: PendingCallback) => {
  if (!pending.waiting) return
  pending.waiting = false
  pending.tree.active += 1
}

/** Runs `effect` as a running fiber of the tree. */
export const working = <A, E, R>(broker: Broker, tree: Tree, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    tree.active += 1
    return Effect.ensuring(effect, becameIdle(broker, tree))
  })

const resolutionOf = (outcome: Outcome): Resolution => outcome._tag

/**
 * Closes an open callback with `outcome`: exactly one resolution wins. Returns false when the callback was no longer
 * open. The tree counts the waiting fiber as running again before the event is visible, so no reader sees a stale
 * `TurnBlocked`.
 */
export const resolve = (broker: Broker, id: CallbackId, outcome: Outcome): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const pending = broker.pending.get(id)
    if (pending === undefined) return Effect.succeed(false)
    return locked(
      pending.session,
      Effect.gen(function*() {
        if (!broker.pending.has(id)) return false
        broker.pending.delete(id)
        pending.tree.open.delete(id)
        broker.closed.set(id, resolutionOf(outcome))
        reactivate(pending)
        const answer = outcome._tag === "answered" ? outcome.answer : undefined
        yield* appendCallbackEvent(
          broker,
          pending,
          (ids) => (meta) =>
            new CallbackResolved({ ...ids, ...meta, callbackId: id, resolution: resolutionOf(outcome), answer })
        )
        yield* Deferred.succeed(pending.deferred, outcome)
        return true
      })
    )
  })

/** Closes the callbacks still open in the given sessions (their turns ended or were cancelled). */
export const resolveAll = (
  broker: Broker,
  sessions: ReadonlyArray<SessionRuntime>,
  outcome: Outcome
): Effect.Effect<void> =>
  Effect.forEach(
    [...broker.pending.values()].filter((pending) => sessions.includes(pending.session)),
    (pending) => resolve(broker, pending.callback.id, outcome),
    { discard: true }
  )

/**
 * A new root turn lists the callbacks its tree still has open (subagents of earlier turns): they are filed again
 * under it, so its handlers and `Blocked` see them.
 */
export const adopt = (broker: Broker, tree: Tree, turnId: TurnId): Effect.Effect<void> =>
  append(
    broker.store,
    tree.root,
    [...tree.open.values()].filter((pending) => pending.session !== tree.root).map((pending) => (meta) =>
      new CallbackOpened({ sessionId: tree.root.session.sessionId, turnId, ...meta, callback: pending.callback })
    )
  ).pipe(Effect.asVoid)

/**
 * Waits for turns of the tree (one that is `undefined` gives `last`). The waiting fiber does not count as running
 * meanwhile; the last turn to end counts it again before its own fiber stops counting, so the tree never looks
 * blocked while the waiter is about to go on.
 */
export const waitForTurns = (
  broker: Broker,
  tree: Tree,
  targets: ReadonlyArray<{ readonly turn: RunningTurn | undefined; readonly last: Final | undefined }>
): Effect.Effect<ReadonlyArray<Final | undefined>> =>
  Effect.gen(function*() {
    let remaining = targets.filter((target) => target.turn !== undefined).length
    let idle = remaining > 0
    const wake = () => {
      if (idle) {
        idle = false
        tree.active += 1
      }
    }
    if (idle) {
      targets.forEach((target) => target.turn?.onEnd.push(() => (--remaining === 0 ? wake() : undefined)))
      yield* becameIdle(broker, tree)
    }
    return yield* Effect.forEach(
      targets,
      (target) => target.turn === undefined ? Effect.succeed(target.last) : Deferred.await(target.turn.done),
      { concurrency: "unbounded" }
    ).pipe(Effect.ensuring(Effect.sync(wake)))
  })
