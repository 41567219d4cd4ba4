/**
 * The trees in memory: an actor is made from a tree's state (`install`: registered, the deadlines of its open
 * callbacks armed, its first command queued), loaded from the store (`load`: the latest snapshot and the events after
 * it, the tree claimed when this engine runs work), held by the calls on it and by its own work, and evicted when idle
 * (`held.ts`). `withTree` is how every entry point reaches a tree; `afterCatchingUp` lets an actor whose copy lags
 * behind the log (another process appended) read it before it refuses something it does not know.
 */
import type { SessionId } from "@parley/core/Ids"
import { SessionId as SessionIdSchema, TurnId as TurnIdSchema } from "@parley/core/Ids"
import { SessionNotFound, TurnNotFound } from "@parley/core/ParleyError"
import type * as SessionStore from "@parley/log/SessionStore"
import * as TreeState from "@parley/log/TreeState"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { Command } from "../decide.js"
import * as Held from "../held.js"
import * as Snapshots from "../snapshots.js"
import * as Telemetry from "../telemetry.js"
import type { Actor, Core, Trees } from "./core.js"
import { failure, TreeMissing } from "./core.js"

const decodeSessionId = Schema.decodeUnknownResult(SessionIdSchema)
const decodeTurnId = Schema.decodeUnknownResult(TurnIdSchema)

export const make = (
  core: Core,
  eviction: {
    readonly idleTimeToLive: Duration.Input
    readonly pausedTimeToLive: Duration.Input
    readonly maxIdleTrees: number
  }
): Effect.Effect<Trees, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { owner, placed, runsWork, store } = core

    const install = (
      treeId: SessionId,
      scope: Scope.Closeable,
      restored: Snapshots.Restored,
      lease: SessionStore.Lease | undefined,
      first: Command | undefined
    ): Effect.Effect<Actor, never, Scope.Scope> =>
      Effect.gen(function*() {
        const actor: Actor = {
          treeId,
          state: restored.state,
          mailbox: [],
          busy: false,
          work: yield* FiberMap.make<string>(),
          working: false,
          reported: new Set(),
          lease,
          resumed: first === undefined && lease !== undefined,
          snapshotSeq: restored.seq,
          snapshotting: false,
          scope,
          closed: false,
          traced: undefined
        }
        // Runs before the work's `FiberMap` closes (finalizers run in reverse order).
        yield* Effect.addFinalizer(() =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.sync(() => {
              actor.closed = true
              if (actor.traced !== undefined) Telemetry.close(actor.traced, now)
            }))
        )
        for (const id of actor.state.open) {
          const expiresAt = TreeState.callback(actor.state, id)?.callback.expiresAt
          if (expiresAt !== undefined) yield* core.deadlines.schedule(treeId, id, expiresAt.epochMilliseconds)
        }
        // The first command is processed before any other, by another fiber once the tree is in memory (`started`):
        // the work it starts must be able to hold the tree. A tree this engine just created needs none.
        if (first !== undefined) actor.mailbox.push({ command: first, reply: undefined })
        // A long log replayed (no snapshot yet, or an unusable one): the next load starts from a snapshot.
        yield* core.snapshotIfDue(actor)
        return actor
      })

    /**
     * A loaded tree's first command (its `Resume` or `Settle`), processed by another fiber than the one that loaded it
     * — once the tree is in memory, so that the work it starts holds the tree: started earlier, that work could not
     * hold it, and the tree could be evicted under it (its turn left with no work, and nobody to load it again).
     */
    const started = (_: SessionId, actor: Actor) =>
      actor.mailbox.length === 0 ? Effect.void : Effect.asVoid(Effect.forkDetach(core.deliver(actor, [])))

    const load = (
      treeId: SessionId,
      scope: Scope.Closeable
    ): Effect.Effect<Actor, TreeMissing | SessionStore.StoreError, Scope.Scope> =>
      Effect.gen(function*() {
        const header = yield* store.eventLog.getTree(treeId)
        if (Option.isNone(header)) return yield* new TreeMissing()
        // The latest snapshot and the events after it, or the whole log.
        const restored = yield* Snapshots.restore(store, header.value)
        // Placed: claimed, whoever held it, only when this engine was placed on it (the cluster routes its commands here).
        const lease = placed !== undefined
          ? placed.has(treeId)
            ? Option.getOrUndefined(yield* store.leases.claim(treeId, owner, { unconditional: true }))
            : undefined
          : runsWork
          ? Option.getOrUndefined(yield* store.leases.claim(treeId, owner))
          : undefined
        // Whatever was in flight when the tree was last in memory is taken up again, by its owner only.
        return yield* install(treeId, scope, restored, lease, { _tag: lease === undefined ? "Settle" : "Resume" })
      })

    // Actors in memory: loaded once, held by the calls on them and by their own work, evicted when idle — a paused
    // tree soon, whatever waits on it waits on the log, not on memory; the number of idle trees is bounded.
    const pausedMillis = Math.min(
      Duration.toMillis(Duration.fromInputUnsafe(eviction.pausedTimeToLive)),
      Duration.toMillis(Duration.fromInputUnsafe(eviction.idleTimeToLive))
    )
    const actors = yield* Held.make({
      load,
      idleTimeToLive: eviction.idleTimeToLive,
      timeToLiveOf: (actor: Actor) => TreeState.isBlocked(actor.state) ? pausedMillis : undefined,
      maxIdle: eviction.maxIdleTrees,
      loaded: started
    })

    const holding = <A, E>(treeId: SessionId, f: (actor: Actor) => Effect.Effect<A, E>) =>
      actors.holding(treeId, f, identity)

    const sessionNotFound = (method: string, sessionId: unknown) =>
      new SessionNotFound({ module: "Engine", method, sessionId: String(sessionId) })

    /**
     * Runs `f`; when it fails because the actor does not know a session, turn or callback (`unknown`), which another
     * process may have appended since the actor last read the log, the actor reads the log first (`Settle`) and `f`
     * runs once more. An answer by id from another process must not be refused for a copy that lags behind.
     */
    const afterCatchingUp = <A, E>(actor: Actor, f: Effect.Effect<A, E>, unknown: (error: E) => boolean) =>
      Effect.catchIf(f, unknown, () => Effect.andThen(catchUp(actor), f))

    /** The actor reads what others appended, held in memory meanwhile (a read may have found it unheld). */
    const catchUp = (actor: Actor) =>
      holding(actor.treeId, (held) => core.submit(held, { _tag: "Settle" })).pipe(Effect.ignore)

    /**
     * Lets the actor read what others appended before its state is read, when the log is ahead of it: a reader of the
     * tree's events has them from the store, and may ask about events of another process the actor has not heard of
     * yet (its `Settle` comes with the store's `changes`) — `Turn.result` confirming another process's `TurnBlocked`.
     */
    const caughtUp = (actor: Actor, method: string) =>
      Effect.flatMap(
        Effect.mapError(store.eventLog.read(actor.treeId, actor.state.nextSeq), (error) => failure(method, error)),
        (ahead) => ahead.length === 0 ? Effect.void : catchUp(actor)
      )

    const turnOf = (actor: Actor, sessionId: SessionId, turnId: unknown, method: string) => {
      const id = decodeTurnId(turnId)
      const turn = Result.isSuccess(id) ? TreeState.turn(actor.state, id.success) : undefined
      return turn === undefined || turn.sessionId !== sessionId
        ? Effect.fail(new TurnNotFound({ module: "Engine", method, sessionId, turnId: String(turnId) }))
        : Effect.succeed(turn)
    }

    /** `turnOf`, after catching up with the log when the actor does not know the turn. */
    const knownTurn = (actor: Actor, sessionId: SessionId, turnId: unknown, method: string) =>
      afterCatchingUp(actor, Effect.suspend(() => turnOf(actor, sessionId, turnId, method)), () => true)

    /**
     * Runs `f` with the actor of the tree `sessionId` belongs to (loading it if needed), holding it in memory
     * meanwhile; a `read` (that only looks at the state) takes a tree already in memory as it is.
     */
    const withTree = <A, E>(
      method: string,
      sessionId: unknown,
      f: (actor: Actor, sessionId: SessionId) => Effect.Effect<A, E>,
      options: { readonly read: boolean } = { read: false }
    ): Effect.Effect<A, E | SessionNotFound | ReturnType<typeof failure>> => {
      // The id of a tree in memory is valid, and its own tree's: no decoding, no lookup.
      const known = typeof sessionId === "string" ? actors.get(sessionId as SessionId) : undefined
      const id = known !== undefined ? Result.succeed(known.treeId) : decodeSessionId(sessionId)
      if (Result.isFailure(id)) {
        return Effect.fail(sessionNotFound(method, sessionId))
      }
      const inTree = (actor: Actor): Effect.Effect<A, E | SessionNotFound> =>
        TreeState.session(actor.state, id.success) !== undefined
          ? f(actor, id.success)
          : afterCatchingUp(
            actor,
            Effect.suspend(() =>
              TreeState.session(actor.state, id.success) === undefined
                ? Effect.fail(sessionNotFound(method, sessionId))
                : Effect.void
            ),
            () => true
          ).pipe(Effect.andThen(Effect.suspend(() => f(actor, id.success))))
      const treeOf = known !== undefined
        ? Effect.succeed(Option.some(known.treeId))
        : Effect.mapError(store.eventLog.treeOf(id.success), (error) => failure(method, error))
      return treeOf.pipe(
        Effect.flatMap((treeId) => {
          if (Option.isNone(treeId)) return Effect.fail(sessionNotFound(method, sessionId))
          // A read of a tree in memory needs no reference to it: its state is a value, valid even if it is evicted.
          const held = options.read ? actors.get(treeId.value) : undefined
          if (held !== undefined) return inTree(held)
          return actors.holding(
            treeId.value,
            inTree,
            (error) => error._tag === "TreeMissing" ? sessionNotFound(method, sessionId) : failure(method, error)
          )
        })
      )
    }

    return {
      actors,
      install,
      holding,
      withTree,
      afterCatchingUp,
      catchUp,
      caughtUp,
      knownTurn,
      sessionNotFound
    } satisfies Trees
  })
