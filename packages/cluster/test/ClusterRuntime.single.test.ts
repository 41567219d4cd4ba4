import { ClusterRuntime } from "@parley/cluster"
import { Connectors, Models, RuntimeTools } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { Effect, Layer } from "effect"
import { sqliteFile } from "./databases.js"

// The whole transport contract over a cluster of one process: every command that changes a tree goes through the
// `Tree` entity's client to the placed engine; the logs are in a SQLite file.
TransportSuite.suite(
  "ClusterRuntime.layerSingle on SqlStore.layerSqlite",
  (model, { runtimeTools }) =>
    ClusterRuntime.layerSingle().pipe(
      Layer.provide([
        Layer.orDie(Layer.unwrap(Effect.map(sqliteFile, (filename) => SqlStore.layerSqlite({ filename })))),
        Connectors.layer([Connectors.demoMailbox()]),
        RuntimeTools.layer(...runtimeTools),
        Models.layer(Models.single(model))
      ])
    )
)
