/**
 * An actor's mailbox. The actor has no fiber: the fiber that sends a command to an idle tree decides, appends and
 * applies it itself (and whatever arrives meanwhile), one batch at a time and uninterruptibly — a batch decided is
 * appended and taken in, whoever asked for it is interrupted meanwhile; a command that arrives while a fiber is
 * processing waits in the mailbox for that fiber's next batch.
 */
import type { TransportFailure } from "@parley/core/ParleyError"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Result from "effect/Result"
import type { Command, Rejection, Reply } from "../decide.js"
import type { Actor, Core, Decided, Envelope, Mailboxes } from "./core.js"
import { failure } from "./core.js"

export const make = (core: Core): Mailboxes => {
  /**
   * Processes the mailbox until it is empty, in the calling fiber, one batch at a time. What is left when the actor
   * closes (evicted between two batches) goes to the tree's actor in memory, as `deliver` hands it on.
   */
  const drain = (actor: Actor): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (actor.mailbox.length === 0) {
        actor.busy = false
        return Effect.void
      }
      if (actor.closed) {
        actor.busy = false
        return deliver(actor, actor.mailbox.splice(0))
      }
      return Effect.andThen(core.process(actor, actor.mailbox.splice(0, 256)), drain(actor))
    })

  /**
   * Puts commands in the mailbox. When no fiber is processing it, this one does (a command to an idle tree is decided
   * at once, with no hand-over to another fiber); else the fiber that is processing takes them in its next batch. The
   * actor is held while its mailbox is processed: never evicted under a batch. An actor already evicted (a command
   * that found it just before) hands its commands to the tree's actor in memory, loaded again if need be.
   */
  const deliver = (actor: Actor, envelopes: ReadonlyArray<Envelope>): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (actor.closed) {
        // The engine is stopping (every actor closes with it, in memory or not): nobody is left to take them.
        const failAll = (why: unknown) =>
          Effect.sync(() => {
            for (const envelope of envelopes) envelope.reply?.(Exit.fail(failure("deliver", why)))
          })
        if (core.actors.get(actor.treeId) === actor) return failAll("the engine is stopping")
        return Effect.asVoid(Effect.forkDetach(
          core.holding(
            actor.treeId,
            (current) => current.closed ? failAll("the engine is stopping") : deliver(current, envelopes)
          ).pipe(
            Effect.catchCause((cause) =>
              Effect.andThen(
                failAll(cause),
                Effect.logWarning(`tree ${actor.treeId} could not be loaded again for its commands`, cause)
              )
            )
          )
        ))
      }
      actor.mailbox.push(...envelopes)
      if (actor.busy) return Effect.void
      actor.busy = true
      const held = core.actors.hold(actor.treeId, actor)
      return Effect.uninterruptible(Effect.onExit(drain(actor), (exit) =>
        Effect.suspend(() => {
          if (Exit.isFailure(exit)) actor.busy = false
          return held ? core.actors.release(actor.treeId, actor) : Effect.void
        })))
    })

  const offer = (actor: Actor, command: Command) => deliver(actor, [{ command, reply: undefined }])

  /** `offer`, processed by another fiber: the caller (a follower of changes, a timer) does not wait for it. */
  const offerForked = (actor: Actor, command: Command) => Effect.asVoid(Effect.forkDetach(offer(actor, command)))

  /** A work item's result: from now until the state takes it in, the work is done, not missing. */
  const report = (actor: Actor, key: string, command: Command) =>
    Effect.suspend(() => {
      actor.reported.add(key)
      return offer(actor, command)
    })

  /** Sends a command and waits for its decision: decided already when this fiber processed the mailbox. */
  const submit = (actor: Actor, command: Command): Effect.Effect<Reply, Rejection | TransportFailure> =>
    Effect.gen(function*() {
      let decided: Decided | undefined
      let waiting: Deferred.Deferred<Result.Result<Reply, Rejection>, TransportFailure> | undefined
      yield* deliver(actor, [{
        command,
        reply: (exit) => {
          decided = exit
          if (waiting !== undefined) Deferred.doneUnsafe(waiting, exit)
        }
      }])
      if (decided === undefined) {
        waiting = yield* Deferred.make<Result.Result<Reply, Rejection>, TransportFailure>()
        if (decided !== undefined) Deferred.doneUnsafe(waiting, decided)
        decided = yield* Effect.exit(Deferred.await(waiting))
      }
      const result = yield* decided
      return yield* Effect.fromResult(result)
    })

  return { deliver, offer, offerForked, report, submit }
}
