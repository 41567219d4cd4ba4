/**
 * The engine as an owner of trees (when it runs work): its heartbeat, renewed every third of the lease's time-to-live
 * on the wall clock, its retirement when it stops, and recovery — at start, the unfinished trees it may claim are
 * loaded, which resumes them, and the paused ones are claimed without loading (their deadlines kept); then, every
 * lease period, the trees whose owner stopped beating are taken over. A tree
 * loaded as a follower is claimed when its owner's lease lapses, and resumes.
 *
 * Placement (`core.placed`) replaces all of that: something else (a cluster's shard holder) says which engine owns a
 * tree. `place` claims the tree unconditionally (its epoch fences off whoever held it) and resumes it; `release`
 * forgets it, so a later load only follows. No heartbeat, no scan; a lost lease (`LeaseLost`) deposes as always.
 */
import type { SessionId } from "@parley/core/Ids"
import type * as SessionStore from "@parley/log/SessionStore"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { Core, TreeMissing } from "./core.js"
import { sleepLive } from "./core.js"

/** Starts the heartbeat (after a first one) and arranges the retirement; nothing for an engine that runs no work. */
export const beat = (core: Core): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { leaseTtl, owner, runsWork, store } = core
    if (!runsWork || core.placed !== undefined) return
    // A renewal that succeeded keeps the leases until its start plus the time-to-live (what `Liveness` says).
    const renew = Effect.suspend(() => {
      const started = Date.now()
      return store.leases.heartbeat(owner, leaseTtl).pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            core.liveness.validUntil = Math.max(core.liveness.validUntil, started + Duration.toMillis(leaseTtl))
          })
        ),
        Effect.catch((error) => Effect.logWarning(`the engine ${owner} could not renew its leases`, error))
      )
    })
    yield* renew
    yield* Effect.addFinalizer(() =>
      store.leases.retire(owner).pipe(
        Effect.catch((error) => Effect.logWarning(`the engine ${owner} could not give up its leases`, error))
      )
    )
    // On the wall clock, whatever `Clock` the engine runs under: leases are about real processes and real pauses,
    // and a test's jump of an hour must not cost a thousand heartbeats.
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(sleepLive(Duration.toMillis(leaseTtl) / 3), renew)))
  })

/** Takes up the trees this engine may claim: its own too at start (`own`), then those whose owner lapsed. */
const takeUp = (core: Core, own: boolean) =>
  core.store.leases.unfinished(core.owner).pipe(
    Effect.flatMap((trees) =>
      Effect.forEach(trees, (tree) => {
        if (!own && tree.owner === core.owner) return Effect.void
        const actor = core.actors.get(tree.treeId)
        if (actor === undefined) return Effect.ignore(core.holding(tree.treeId, () => Effect.void))
        if (actor.lease !== undefined) return Effect.void
        return Effect.flatMap(core.store.leases.claim(tree.treeId, core.owner), (lease) => {
          if (Option.isNone(lease) || core.actors.get(tree.treeId) !== actor) return Effect.void
          actor.lease = lease.value
          actor.resumed = false
          return core.offer(actor, { _tag: "Resume" })
        })
      }, { concurrency: 16, discard: true })
    ),
    Effect.catchCause((cause) => Effect.logWarning("the engine could not take up unfinished trees", cause))
  )

/**
 * Takes up the paused trees this engine may claim, in one claim and without loading them: a paused tree waits on its
 * callbacks only, so what it needs of its owner is its deadlines, and to be loaded when something happens to it (the
 * store's changes load it: an answer from anyone). A tree already in memory as a follower resumes under its lease.
 */
const takeUpPaused = (core: Core, own: boolean) =>
  core.store.leases.claimPaused(core.owner, own).pipe(
    Effect.flatMap(({ deadlines, trees }) =>
      Effect.andThen(
        Effect.forEach(trees, ({ lease, treeId }) => {
          const actor = core.actors.get(treeId)
          if (actor === undefined || actor.lease !== undefined) return Effect.void
          actor.lease = lease
          actor.resumed = false
          return core.offer(actor, { _tag: "Resume" })
        }, { discard: true }),
        Effect.forEach(
          deadlines,
          ({ callbackId, expiresAt, treeId }) => core.deadlines.schedule(treeId, callbackId, expiresAt),
          { discard: true }
        )
      )
    ),
    Effect.catchCause((cause) => Effect.logWarning("the engine could not take up paused trees", cause))
  )

/**
 * Recovery at start, then a take-over scan every lease period (wall clock); nothing for an engine that runs no work.
 * The paused trees are claimed before the engine serves anyone: with nothing in memory yet, the claim (which raises
 * every epoch, this owner's own trees' too) cannot overtake a lease a request just took. The scans after it never
 * claim this owner's own trees.
 */
export const recover = (core: Core): Effect.Effect<void, never, Scope.Scope> =>
  core.runsWork && core.placed === undefined
    ? Effect.andThen(
      takeUpPaused(core, true),
      Effect.asVoid(Effect.forkScoped(
        Effect.andThen(
          takeUp(core, true),
          Effect.forever(
            Effect.andThen(
              sleepLive(Duration.toMillis(core.leaseTtl)),
              Effect.andThen(takeUpPaused(core, false), takeUp(core, false))
            )
          )
        )
      ))
    )
    : Effect.void

/**
 * Placement: this engine was placed on the tree. Its actor (loaded if needed: a load claims a placed tree) takes the
 * tree unconditionally unless it holds a lease already, and resumes what was in flight. Nothing under leases.
 */
export const place = (core: Core, treeId: SessionId): Effect.Effect<void, TreeMissing | SessionStore.StoreError> =>
  Effect.suspend(() => {
    const placed = core.placed
    if (placed === undefined) return Effect.void
    placed.add(treeId)
    return core.holding(treeId, (actor) =>
      actor.lease !== undefined ? Effect.void : Effect.flatMap(
        core.store.leases.claim(treeId, core.owner, { unconditional: true }),
        (lease) => {
          if (Option.isNone(lease) || actor.closed) return Effect.void
          // A claim of this engine's that overtook this one's (a reload) has the higher epoch: it stays.
          if (actor.lease !== undefined && actor.lease.epoch >= lease.value.epoch) return Effect.void
          actor.lease = lease.value
          actor.resumed = false
          return core.offer(actor, { _tag: "Resume" })
        }
      ))
  })

/**
 * Placement: the engine is no longer placed on the tree (the cluster moved it, or its entity went idle). A later load
 * only follows it; an actor in memory keeps its lease (and its work) until another engine's claim deposes it.
 */
export const release = (core: Core, treeId: SessionId): Effect.Effect<void> =>
  Effect.sync(() => {
    core.placed?.delete(treeId)
  })
