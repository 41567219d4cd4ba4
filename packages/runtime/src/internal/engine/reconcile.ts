/**
 * What a commit starts and stops: `next` (the work the state calls for: model steps, and the tools whose start this
 * engine recorded under its current lease), `reconcile` (the work running is made what `next` says, and the actor
 * holds itself in memory while it has work), `afterCommit` (the deadlines of the callbacks opened and resolved, then
 * `reconcile`, then a snapshot when one is due), and `depose` (a lost lease: the work stops, the actor follows).
 */
import type { TurnEvent } from "@parley/core/TurnEvent"
import type * as SessionStore from "@parley/log/SessionStore"
import * as TreeState from "@parley/log/TreeState"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as Snapshots from "../snapshots.js"
import * as Telemetry from "../telemetry.js"
import { startedBy } from "../toolCalls.js"
import type * as Work from "../work.js"
import type { Actor, Core, Reconciler } from "./core.js"
import { sequence, startMargin } from "./core.js"

export const make = (core: Core): Reconciler => {
  const { owner, snapshotEvery, store } = core

  /** Saved in the background, never in an append's transaction nor in the actor's loop; one at a time per tree. */
  const snapshotIfDue = (actor: Actor): Effect.Effect<void> =>
    Effect.suspend(() => {
      const state = actor.state
      if (snapshotEvery === 0 || actor.snapshotting || state.nextSeq - actor.snapshotSeq < snapshotEvery) {
        return Effect.void
      }
      // A failed save is tried again once the log grew by `snapshotEvery` more events.
      actor.snapshotting = true
      actor.snapshotSeq = state.nextSeq
      const saved = Effect.ensuring(Snapshots.save(store, state), Effect.sync(() => actor.snapshotting = false))
      // The log may have grown past the next one meanwhile.
      return Effect.asVoid(
        Effect.forkIn(Effect.interruptible(Effect.andThen(saved, snapshotIfDue(actor))), actor.scope)
      )
    })

  const workTree = (actor: Actor): Work.Tree => {
    const lease = actor.lease
    return {
      treeId: actor.treeId,
      state: actor.state,
      report: (key, command) => core.report(actor, key, command),
      mayStart: Effect.suspend(() => {
        // Deposed since the work started (its lease lost): a tool not begun yet is not begun at all.
        if (lease === undefined || actor.lease !== lease || actor.closed) return Effect.succeed(false)
        if (Date.now() + startMargin(core.leaseTtl) < core.liveness.validUntil) return Effect.succeed(true)
        // The lease may have lapsed (the heartbeat late or failing, the process paused): another engine may own the
        // tree by now. Claiming it again settles the call as any new owner does (interrupted, or run again when
        // idempotent), in the actor's scope: the claim stops this work.
        return Effect.as(Effect.forkIn(reclaim(actor, lease), actor.scope), false)
      })
    }
  }

  /**
   * Claims the tree again after its lease may have lapsed: the work stops, and with the new lease (a raised epoch) the
   * tree resumes as any new owner's does; when another engine holds it now, this one follows.
   */
  const reclaim = (actor: Actor, lease: SessionStore.Lease) =>
    Effect.gen(function*() {
      if (actor.lease !== lease || actor.closed) return
      yield* Effect.logWarning(
        `the engine ${owner} did not begin a tool of tree ${actor.treeId}: its lease may have lapsed (the last ` +
          "heartbeat that succeeded is too old); it claims the tree again"
      )
      actor.lease = undefined
      actor.reported.clear()
      yield* stop(actor, [...actor.work].map(([key]) => key))
      const claimed = yield* Effect.orElseSucceed(store.leases.claim(actor.treeId, owner), () => Option.none())
      if (Option.isNone(claimed) || actor.closed || actor.lease !== undefined) return yield* reconcile(actor)
      actor.lease = claimed.value
      actor.resumed = false
      yield* core.offer(actor, { _tag: "Resume" })
    })

  /**
   * A work item (`run`, given the tree it reports to) in a span of its own when the tree is traced: a child of its
   * turn's span and the parent of the spans the work makes; the work's result ends it.
   */
  const inSpan = (
    actor: Actor,
    key: string,
    turn: TreeState.Turn,
    span: { readonly name: string; readonly attributes: () => Record<string, unknown> },
    run: (tree: Work.Tree) => Effect.Effect<void>
  ): Effect.Effect<void> => {
    const traced = actor.traced
    if (traced === undefined) return run(workTree(actor))
    const parent = Telemetry.turnSpan(traced, actor.state, turn.turnId, traced.clock.currentTimeMillisUnsafe())
    const started = Telemetry.startWork(traced, key, span.name, parent, span.attributes())
    const tree = workTree(actor)
    return Effect.andThen(
      Telemetry.parentOf(started),
      run({
        ...tree,
        report: (key, command) =>
          Effect.suspend(() => {
            Telemetry.endWork(traced, key, command)
            return tree.report(key, command)
          })
      })
    )
  }

  /** A model step, in a `parley.model_step` span when the tree is traced (the parent of the model call's). */
  const modelStep = (
    actor: Actor,
    key: string,
    turn: TreeState.Turn,
    step: { readonly messageId: string; readonly seq: number }
  ) =>
    inSpan(actor, key, turn, {
      name: "parley.model_step",
      attributes: () => {
        const model = TreeState.session(actor.state, turn.sessionId)?.agent.model
        return {
          "parley.model_step.index": turn.steps - 1,
          ...(model === undefined ? {} : { "gen_ai.request.model": model })
        }
      }
    }, (tree) => core.work.modelStep(tree, turn, step))

  /** A tool's run, in a `parley.tool` span when the tree is traced (the parent of the tool's own spans). */
  const runTool = (actor: Actor, key: string, turn: TreeState.Turn, call: TreeState.Call) =>
    inSpan(actor, key, turn, {
      name: "parley.tool",
      attributes: () => ({
        "parley.tool.id": call.toolId,
        "parley.tool.call_id": call.toolCallId,
        "parley.tool.runs_in": call.toolId.startsWith("connector.") ? "connector" : "runtime"
      })
    }, (tree) => core.work.runTool(tree, turn, call))

  /**
   * The work the state calls for, by key: model steps, and the tools whose start this engine recorded under its
   * current lease — never a start recorded by another owner, or by this one at an earlier epoch.
   */
  const next = (actor: Actor) => {
    const work = new Map<string, () => Effect.Effect<void>>()
    const lease = actor.lease
    if (lease === undefined || !actor.resumed) return work
    for (const turn of TreeState.runningTurns(actor.state)) {
      if (turn.modelPending && turn.step !== undefined) {
        const step = turn.step
        const key = `model:${step.messageId}`
        work.set(key, () => modelStep(actor, key, turn, step))
      }
      for (const call of turn.calls) {
        if (startedBy(call, lease)) {
          const key = `tool:${call.toolCallId}`
          work.set(key, () => runTool(actor, key, turn, call))
        }
      }
    }
    return work
  }

  /**
   * Stops the work items `keys` — all but the calling fiber: a work item that reported its result may be the one
   * processing the mailbox, and ends by itself once it has. A stopped item's span ends (interrupted).
   */
  const stop = (actor: Actor, keys: Iterable<string>) =>
    Effect.flatMap(Effect.fiberId, (self) =>
      Effect.forEach(keys, (key) => {
        const fiber = FiberMap.getUnsafe(actor.work, key)
        if (Option.isNone(fiber) || fiber.value.id === self) return Effect.void
        if (actor.traced !== undefined) Telemetry.endWork(actor.traced, key, undefined)
        return FiberMap.remove(actor.work, key)
      }, { discard: true }))

  /**
   * Starts the work the state calls for, stops what it no longer does, and keeps the tree alive meanwhile. Only the
   * changes cost an effect: a batch that starts and stops nothing runs none.
   */
  const reconcile = (actor: Actor): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (actor.closed) return Effect.void
      const wanted = next(actor)
      const effects: Array<Effect.Effect<void>> = []
      const stale: Array<string> = []
      for (const [key] of actor.work) if (!wanted.has(key)) stale.push(key)
      if (stale.length > 0) effects.push(stop(actor, stale))
      for (const key of actor.reported) if (!wanted.has(key)) actor.reported.delete(key)
      for (const [key, work] of wanted) {
        if (actor.reported.has(key) || FiberMap.hasUnsafe(actor.work, key)) continue
        // Interruptible: the mailbox is processed uninterruptibly, and a fiber forked there would inherit that.
        effects.push(
          Effect.asVoid(
            FiberMap.run(actor.work, key, Effect.interruptible(Effect.suspend(work)), { onlyIfMissing: true })
          )
        )
      }
      if (wanted.size > 0 && !actor.working) {
        actor.working = true
        core.actors.hold(actor.treeId, actor)
      } else if (wanted.size === 0 && actor.working) {
        actor.working = false
        effects.push(core.actors.release(actor.treeId, actor))
      }
      return sequence(effects)
    })

  const afterCommit = (actor: Actor, events: ReadonlyArray<TurnEvent>): Effect.Effect<void> =>
    Effect.withFiber((fiber) => {
      const effects: Array<Effect.Effect<void>> = []
      if (actor.traced === undefined) actor.traced = Telemetry.tracing(fiber)
      if (actor.traced !== undefined) {
        Telemetry.observe(actor.traced, actor.state, events, actor.lease !== undefined, fiber)
      }
      for (const event of events) {
        if (event._tag === "CallbackOpened" && event.callback.expiresAt !== undefined) {
          effects.push(
            core.deadlines.schedule(actor.treeId, event.callback.id, event.callback.expiresAt.epochMilliseconds)
          )
        } else if (event._tag === "CallbackResolved") {
          core.deadlines.cancel(event.callbackId)
        }
      }
      effects.push(reconcile(actor), snapshotIfDue(actor))
      return sequence(effects)
    })

  /** The lease was taken over: stop the work, and go on as a follower. */
  const depose = (actor: Actor) =>
    Effect.gen(function*() {
      yield* Effect.logWarning(`the engine ${owner} lost tree ${actor.treeId} to another owner`)
      actor.lease = undefined
      actor.reported.clear()
      if (!actor.closed) yield* stop(actor, [...actor.work].map(([key]) => key))
      yield* reconcile(actor)
    })

  return { reconcile, afterCommit, snapshotIfDue, depose }
}
