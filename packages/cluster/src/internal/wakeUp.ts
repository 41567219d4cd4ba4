/**
 * The cluster's wake-up singleton (one fiber in the whole cluster, on the runner that holds its shard): a tree whose
 * runner died is taken up by the tree's next message, and this is what sends one when nobody else will. At start it
 * wakes every tree with open callbacks (their deadlines are armed again by the runner that loads them) or with turns
 * not ended; then, every `interval`, the trees with turns running (not paused) — those of a runner that died
 * mid-turn — and the trees with an open callback whose deadline is due (on the engine's clock): a paused tree of a
 * runner that died while this singleton lived on, whose deadline nobody holds any more, expires at most `interval`
 * late. A `Resume` to a tree its runner holds already is a no-op there (a deadline it holds fires by itself).
 */
import type { SessionId } from "@parley/core/Ids"
import type * as SessionStore from "@parley/log/SessionStore"
import type * as Clock from "effect/Clock"
import * as Singleton from "effect/cluster/Singleton"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Tree } from "../TreeEntity.js"

/** No runner heartbeats under placement: this name lists every unfinished tree. */
const sweeper = "parley-cluster-wake-up"

export const layer = (
  store: SessionStore.Services,
  options: {
    readonly interval: Duration.Input
    /** The engine's clock: deadlines are due by it. */
    readonly clock: Clock.Clock
  }
) =>
  Singleton.make(
    "parley/TreeWakeUp",
    Effect.gen(function*() {
      const client = yield* Tree.client
      const wake = (treeIds: Iterable<SessionId>) =>
        Effect.forEach(
          new Set(treeIds),
          (treeId) =>
            client(treeId).Resume().pipe(
              Effect.catchCause((cause) => Effect.logWarning(`the cluster could not wake tree ${treeId}`, cause))
            ),
          { concurrency: 16, discard: true }
        )
      const running = Effect.map(store.leases.unfinished(sweeper), (trees) => trees.map((tree) => tree.treeId))
      const first = Effect.gen(function*() {
        const open = yield* store.eventLog.listOpen()
        yield* wake([...open.map((row) => row.treeId), ...yield* running])
      })
      const due = Effect.flatMap(
        options.clock.currentTimeMillis,
        (now) => Effect.map(store.eventLog.listOpen({ expiresBy: now }), (rows) => rows.map((row) => row.treeId))
      )
      const sweep = Effect.flatMap(Effect.zip(running, due), ([turns, deadlines]) => wake([...turns, ...deadlines]))
      const logged = (what: string) =>
        Effect.catchCause((cause) => Effect.logWarning(`the cluster could not ${what}`, cause))
      yield* first.pipe(logged("wake the trees at start"))
      yield* Effect.forever(
        Effect.andThen(Effect.sleep(options.interval), sweep.pipe(logged("wake unfinished trees")))
      )
    })
  )
