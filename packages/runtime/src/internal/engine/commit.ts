/**
 * A batch of commands, decided against the actor's state, appended in one `append` (under the tree's lease when this
 * engine owns it), then taken in: the state is the new one, the replies go out, and `afterCommit` starts or stops the
 * work the state calls for. Events others appended come first: read, then settled, before the batch. A lost append
 * race re-reads the log and decides again; a lost lease deposes the actor; a failing store fails whoever waits, and
 * what nobody waits for is tried again.
 */
import type { TransportFailure } from "@parley/core/ParleyError"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type * as SessionStore from "@parley/log/SessionStore"
import type { LeaseLost, ResolutionConflict, SeqConflict, StoreError } from "@parley/log/StoreError"
import * as TreeState from "@parley/log/TreeState"
import * as Cause from "effect/Cause"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import type { Rejection, Reply } from "../decide.js"
import { decide } from "../decide.js"
import * as Telemetry from "../telemetry.js"
import { freshSeed } from "../tx.js"
import type { Actor, Commits, Core, Envelope } from "./core.js"
import { failure, ownersOnly, sleepLive } from "./core.js"

/** How long a tree waits before it tries again to store what a failing store refused. */
const retryMillis = 250

/**
 * Whether a commit is a durable point, synced to disk before anything goes on: a callback opened (anyone may see it:
 * a handler, another process listing callbacks), a tool's start (its side effect follows), an answer or a cancel whose
 * caller waits to hear it was accepted. Everything else — a new message, a model step's result, a turn's end — is
 * committed and visible at once, and rides along to disk with the next durable point.
 */
const durabilityOf = (events: ReadonlyArray<TurnEvent>, batch: ReadonlyArray<Envelope>): SessionStore.Durability => {
  for (const event of events) {
    if (event._tag === "CallbackOpened" || event._tag === "ToolExecutionStarted") return "sync"
  }
  for (const envelope of batch) {
    const tag = envelope.command._tag
    if (envelope.reply !== undefined && (tag === "Answer" || tag === "Cancel")) return "sync"
  }
  return "relaxed"
}

export const make = (core: Core): Commits => {
  const { env, store } = core

  /** Reads what others appended since the actor's state. */
  const refresh = (actor: Actor) =>
    Effect.map(
      store.eventLog.read(actor.treeId, actor.state.nextSeq),
      (events) => {
        if (events.length > 0) actor.state = TreeState.foldFrom(actor.state, events)
        return events
      }
    )

  /** Tells whoever waits for these commands that they failed. */
  const fail = (envelopes: ReadonlyArray<Envelope>, error: TransportFailure) => {
    for (const envelope of envelopes) envelope.reply?.(Exit.fail(error))
  }

  const process = (actor: Actor, received: ReadonlyArray<Envelope>) =>
    Effect.gen(function*() {
      let batch = actor.lease === undefined
        ? received.filter((envelope) => !ownersOnly.has(envelope.command._tag))
        : received
      let conflicted = batch.some((envelope) => envelope.command._tag === "Settle")
      for (let attempt = 0; attempt < 5; attempt++) {
        // Events appended by others first: read them, then settle what they call for before the batch.
        const foreign = conflicted ? yield* refresh(actor) : []
        if (foreign.length > 0) yield* core.afterCommit(actor, foreign)
        const now = yield* DateTime.now
        // The secret this attempt's ids are minted from (its decisions mint at seqs of their own): never recorded.
        const seed = yield* freshSeed
        let state = actor.state
        const events: Array<TurnEvent> = []
        // The tree's owner records the starts of the tools it will run, once its Resume settled what the last owner
        // left in flight (the Resume is first in a new owner's mailbox); anyone else records decisions only.
        let executor = actor.resumed && !actor.closed ? actor.lease : undefined
        if (foreign.length > 0) {
          const settled = decide(state, { _tag: "Settle" }, now, seed, env, executor)
          state = settled.state
          events.push(...settled.events)
        }
        const replies: Array<Result.Result<Reply, Rejection>> = []
        for (const envelope of batch) {
          if (envelope.command._tag === "Resume" && !actor.closed) executor = actor.lease
          const decision = decide(state, envelope.command, now, seed, env, executor)
          state = decision.state
          events.push(...decision.events)
          replies.push(decision.reply)
        }
        let appended: Result.Result<unknown, SeqConflict | ResolutionConflict | LeaseLost | StoreError> = Result.void
        if (events.length > 0) {
          // A traced tree's append is in a span (`parley.store.append`), started and ended here, around it.
          const traced = actor.traced
          if (traced !== undefined) Telemetry.startAppend(traced, events)
          const written = yield* Effect.result(
            store.eventLog.append(actor.treeId, actor.state.nextSeq, events, actor.lease, durabilityOf(events, batch))
          )
          if (traced !== undefined) Telemetry.endAppend(traced, written)
          appended = written
        }
        if (Result.isSuccess(appended)) {
          actor.state = state
          if (actor.lease !== undefined && batch.some((envelope) => envelope.command._tag === "Resume")) {
            actor.resumed = true
          }
          yield* core.afterCommit(actor, events)
          for (let i = 0; i < batch.length; i++) batch[i].reply?.(Exit.succeed(replies[i]))
          return
        }
        if (appended.failure._tag === "StoreError") {
          // Who waits gets the error. What nobody waits for (a work item's result, a resume, a settle) is tried
          // again after a pause: dropped, it would leave its turn waiting until the tree is loaded again.
          const unanswered = batch.filter((envelope) => envelope.reply === undefined)
          if (unanswered.length > 0) {
            yield* Effect.logWarning(`the store failed; tree ${actor.treeId} tries again in ${retryMillis} ms`)
            yield* Effect.forkDetach(
              Effect.andThen(Effect.interruptible(sleepLive(retryMillis)), core.deliver(actor, unanswered))
            )
          }
          return fail(batch, failure("append", appended.failure))
        }
        if (appended.failure._tag === "LeaseLost") {
          yield* core.depose(actor)
          batch = batch.filter((envelope) => !ownersOnly.has(envelope.command._tag))
        }
        // Someone else appended first (or took the tree over): read what they wrote and decide again.
        conflicted = true
      }
      fail(batch, failure("append", "the log kept moving under the engine"))
    }).pipe(
      Effect.catchCause((cause) => {
        fail(received, failure("decide", Cause.squash(cause)))
        return Effect.logError("the engine could not process commands", cause)
      })
    )

  return { process }
}
