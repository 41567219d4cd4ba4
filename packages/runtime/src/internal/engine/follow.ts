/**
 * Following the store: appends by anyone (another process, an engine that runs no work) wake the tree they touched —
 * a tree in memory reads them (`Settle`), a tree out of memory is loaded, which settles it (under placement: only a
 * tree the engine is placed on) — and the callbacks' deadlines, when they pass, are applied to their trees (`Expire`).
 */
import type { CallbackId, SessionId } from "@parley/core/Ids"
import type * as SessionStore from "@parley/log/SessionStore"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Deadlines from "../deadlines.js"
import type { Core } from "./core.js"

/** The process's deadlines: one ordered structure and one timer fiber; a passed deadline is the tree's `Expire`. */
export const deadlines = (core: Core): Effect.Effect<Deadlines.Deadlines<CallbackId, SessionId>, never, Scope.Scope> =>
  Deadlines.make((treeId, callbackId) =>
    core.withTree("expire", treeId, (actor) => core.submit(actor, { _tag: "Expire", callbackId })).pipe(
      Effect.catchCause((cause) => Effect.logError(`the deadline of ${callbackId} could not be applied`, cause))
    )
  )

/** Follows the store's `changes` in a fiber of the scope. */
export const changes = (core: Core): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const noticed = (change: SessionStore.Change): Effect.Effect<void> => {
      const actor = core.actors.get(change.treeId)
      if (actor !== undefined) {
        return actor.state.nextSeq >= change.nextSeq ? Effect.void : core.offerForked(actor, { _tag: "Settle" })
      }
      // Placed: a tree out of memory is loaded for its owner only (whose work the append may call for); a reader
      // elsewhere reads the log when it asks.
      if (core.placed !== undefined && !core.placed.has(change.treeId)) return Effect.void
      return Effect.forkDetach(
        core.withTree("changes", change.treeId, (tree) => core.submit(tree, { _tag: "Settle" })).pipe(Effect.ignore)
      )
    }
    // Its own appends (under its leases) tell the engine nothing it does not know: they do not wake it.
    const changes = yield* core.store.eventLog.changes({ exceptOwner: core.owner })
    const follow: Effect.Effect<never, SessionStore.StoreError | Cause.Done> = Effect.flatMap(
      Queue.takeAll(changes),
      (batch) => Effect.andThen(Effect.forEach(batch, noticed, { discard: true }), follow)
    )
    yield* follow.pipe(
      // The changes end (`Cause.Done`) when the store closes them.
      Effect.catchCause((cause) =>
        Pull.isDoneCause(cause)
          ? Effect.void
          : Effect.logError("the engine stopped following the store's changes", cause)
      ),
      Effect.forkScoped
    )
  })
