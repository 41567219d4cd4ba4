/**
 * The `Tree` entity's handlers on a runner: every message first places the runner's engine on the tree (a claim
 * unless it holds the tree already), then submits the command to it. They run under the engine's `Clock` (the
 * cluster's fibers run on the wall clock; the engine's decisions, deadlines included, on the program's). When the
 * entity stops (idle, or its shard moved), the engine is released from the tree. Each counts in the runner's metrics
 * (`RunnerMetrics`: trees in memory, messages handled).
 *
 * Once the runner is stopping (a drain; `stopping()` says so before its engine begins to close), a message is refused
 * with `RunnerStopping` (nothing decided; the sender sends it again, to the tree's next runner), and so is a command
 * the closing engine refused ("the engine is stopping") — never a `TransportFailure` the caller would have to retry.
 */
import type { SessionId } from "@parley/core/Ids"
import { type SessionNotFound, TransportFailure } from "@parley/core/ParleyError"
import { Principal } from "@parley/core/Principal"
import type * as Transport from "@parley/core/Transport"
import type * as Engine from "@parley/runtime/Engine"
import * as Clock from "effect/Clock"
import * as Entity from "effect/cluster/Entity"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import type * as RunnerMetrics from "../RunnerMetrics.js"
import { RunnerStopping, Tree } from "../TreeEntity.js"

const decodePrincipal = Schema.decodeUnknownEffect(Principal)

export const layer = (
  engine: Engine.Placed,
  clock: Clock.Clock,
  options: { readonly maxIdleTime?: Duration.Input | undefined },
  metrics: RunnerMetrics.Tagged,
  stopping: () => boolean
) =>
  Tree.toLayer(
    Effect.gen(function*() {
      const address = yield* Entity.CurrentAddress
      const treeId = address.entityId as string as SessionId
      yield* Metric.update(metrics.trees, 1)
      yield* Effect.addFinalizer(() => Effect.andThen(Metric.update(metrics.trees, -1), engine.release(treeId)))
      const refused = Effect.fail(new RunnerStopping({ treeId }))
      const counted = (name: string) => {
        const counter = metrics.messages(name)
        return <A, E>(
          effect: Effect.Effect<A, E>
        ): Effect.Effect<A, E | SessionNotFound | TransportFailure | RunnerStopping> =>
          Effect.suspend(() =>
            stopping() ?
              refused :
              Effect.andThen(Metric.update(counter, 1), Effect.andThen(engine.place(treeId), effect)).pipe(
                Effect.provideService(Clock.Clock, clock),
                // The engine closing refuses what it had not decided yet (every command is idempotent in the log:
                // sending it again is safe even if it was).
                Effect.catchIf((error) => stopping() && error instanceof TransportFailure, () => refused)
              )
          )
      }
      const sendMessage = counted("SendMessage")
      const answer = counted("Answer")
      const cancel = counted("Cancel")
      const revokeGrant = counted("RevokeGrant")
      const resume = counted("Resume")
      const { transport } = engine
      return Tree.of({
        SendMessage: ({ payload }) =>
          sendMessage(
            transport.sendMessage(payload.sessionId as SessionId, payload.input, { requestId: payload.requestId })
          ),
        Answer: ({ payload }) => answer(transport.answer(payload as unknown as Transport.AnswerRequest)),
        Cancel: ({ payload }) => cancel(transport.cancel(payload.sessionId as SessionId)),
        RevokeGrant: ({ payload }) =>
          revokeGrant(Effect.flatMap(
            payload.revokedBy === undefined ? Effect.succeed(undefined) : Effect.mapError(
              decodePrincipal(payload.revokedBy),
              (error) =>
                new TransportFailure({
                  module: "ClusterRuntime",
                  method: "revokeGrant",
                  description: `revokedBy does not decode: ${error.message}`
                })
            ),
            (revokedBy) =>
              transport.revokeGrant({
                sessionId: payload.sessionId as SessionId,
                grantId: payload.grantId,
                revokedBy
              })
          )),
        Resume: () => resume(Effect.void)
      })
    }),
    // One message at a time: a claim is never raced by the tree's own next message (the actor batches anyway).
    { concurrency: 1, maxIdleTime: options.maxIdleTime }
  )
