import * as TransportSuite from "@parley/testing/TransportSuite"
import { Effect, Layer } from "effect"
import { pgSchema } from "./databases.js"
import { runners } from "./runners.js"

// The whole transport contract over three runners of one cluster on PostgreSQL, in one process: the scenario's
// transport is the first runner's, and the trees are placed across the three (their commands travel over the
// runners' sockets to the tree's runner). A turn's live deltas are streamed to the readers of the runner that runs it
// only (they are never stored); a reader on another runner has the stored MessageCompleted.
TransportSuite.suite(
  "ClusterRuntime.layerSocket, three runners on PostgreSQL",
  (model, { runtimeTools }) =>
    Layer.unwrap(Effect.gen(function*() {
      const url = yield* Effect.orDie(pgSchema)
      const [first] = yield* Effect.orDie(runners({ url, count: 3, model, runtimeTools }))
      return Layer.succeedContext(first)
    })),
  { liveDeltas: "the tree's process" }
)
