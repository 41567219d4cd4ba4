/**
 * A session tree as an `@effect/cluster` entity: type `Tree`, id = the tree's id (its root session's id). Its
 * messages are the engine's commands that change a tree — `SendMessage` (with the client's request id: a message the
 * cluster delivers twice queues one turn), `Answer`, `Cancel`, `RevokeGrant` — and `Resume`, which only wakes the tree
 * on the runner that holds its shard (what was in flight is taken up, its callbacks' deadlines armed). The runner's
 * handler submits each to its placed engine (`Engine.makePlaced` of `@parley/runtime`): the entity's runner owns the
 * tree.
 *
 * The messages are volatile (not `ClusterSchema.Persisted`): the tree's log is the only record, and every message is
 * idempotent in it. A runner that is stopping (drained) refuses a message with `RunnerStopping` without deciding it:
 * the sender sends it again, and it reaches the tree's next runner once the shard moved. What comes from a caller (an
 * answer, who answers) crosses as it is and is decoded by the engine on the runner, so a malformed request is the
 * engine's typed error, as in-process.
 *
 * @example
 * ```ts
 * import { TreeEntity } from "@parley/cluster"
 * import { Effect } from "effect"
 *
 * // A process of the cluster (a runner, or a client-only process) cancels a tree's running turn.
 * const cancel = (treeId: string) =>
 *   Effect.gen(function*() {
 *     const client = yield* TreeEntity.Tree.client
 *     yield* client(treeId).Cancel({ sessionId: treeId })
 *   })
 * ```
 *
 * @since 0.1.0
 */
import {
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  GrantNotFound,
  InvalidId,
  NotAllowedToAnswer,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "@parley/core/ParleyError"
import { TurnRef } from "@parley/core/Transport"
import * as Entity from "effect/cluster/Entity"
import * as Rpc from "effect/rpc/Rpc"
import * as Schema from "effect/Schema"

/**
 * The runner that got the message is stopping (a drain): its engine did not decide the command, and the tree's shard
 * is about to move. Sending the message again is safe; `ClusterRuntime`'s `Transport` does so until another runner
 * takes it.
 *
 * @since 0.1.0
 * @category Errors
 */
export class RunnerStopping extends Schema.TaggedError<RunnerStopping>("@parley/cluster/TreeEntity/RunnerStopping")(
  "RunnerStopping",
  { treeId: Schema.String }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `the runner of tree ${this.treeId} is stopping: the command was not decided`
  }
}

/**
 * Queues a turn on a session of the tree (`Transport.sendMessage`); `requestId` makes it idempotent.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SendMessage = Rpc.make("SendMessage", {
  payload: { sessionId: Schema.String, input: Schema.String, requestId: Schema.String },
  success: TurnRef,
  error: Schema.Union([SessionNotFound, InvalidId, TransportFailure, RunnerStopping])
})

/**
 * Answers a callback of the tree (`Transport.answer`); the fields are decoded by the engine on the runner (they cross
 * as JSON carries them: a field JSON has no form of is left out, and the engine refuses its absence). `requestId`
 * makes it idempotent: an answer the cluster delivers again after the first delivery won succeeds again.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Answer = Rpc.make("Answer", {
  payload: {
    sessionId: Schema.String,
    turnId: Schema.optionalKey(Schema.Json),
    callbackId: Schema.optionalKey(Schema.Json),
    answer: Schema.optionalKey(Schema.Json),
    answeredBy: Schema.optionalKey(Schema.Json),
    requestId: Schema.String
  },
  error: Schema.Union(
    [
      AnswerMismatch,
      NotAllowedToAnswer,
      CallbackNotOpen,
      CallbackAlreadyAnswered,
      InvalidId,
      SessionNotFound,
      TurnNotFound,
      TransportFailure,
      RunnerStopping
    ]
  )
})

/**
 * Cancels a session of the tree (`Transport.cancel`).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Cancel = Rpc.make("Cancel", {
  payload: { sessionId: Schema.String },
  error: Schema.Union([SessionNotFound, TransportFailure, RunnerStopping])
})

/**
 * Revokes a grant of the tree (`Transport.revokeGrant`).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const RevokeGrant = Rpc.make("RevokeGrant", {
  payload: { sessionId: Schema.String, grantId: Schema.String, revokedBy: Schema.optionalKey(Schema.Json) },
  error: Schema.Union([GrantNotFound, SessionNotFound, TransportFailure, RunnerStopping])
})

/**
 * Wakes the tree on its shard's runner: claimed there, what was in flight taken up, its deadlines armed.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Resume = Rpc.make("Resume", {
  error: Schema.Union([SessionNotFound, TransportFailure, RunnerStopping])
})

/**
 * The `Tree` entity.
 *
 * @since 0.1.0
 * @category Models
 */
export const Tree = Entity.make("Tree", [SendMessage, Answer, Cancel, RevokeGrant, Resume])
