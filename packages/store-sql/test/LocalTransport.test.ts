import type { SessionStore } from "@parley/runtime"
import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { Effect, Layer } from "effect"
import { pgSchema, sqliteFile } from "./databases.js"

const runtime =
  (store: Layer.Layer<SessionStore.SessionStore, unknown>) =>
  (model: Parameters<typeof Models.single>[0], { runtimeTools }: TransportSuite.RuntimeOptions) =>
    LocalTransport.layer.pipe(
      Layer.provide([
        Layer.orDie(store),
        Connectors.layer([Connectors.demoMailbox()]),
        RuntimeTools.layer(...runtimeTools),
        Models.layer(Models.single(model))
      ])
    )

// The whole transport contract with the engine's log in a SQLite file and in PostgreSQL.
TransportSuite.suite(
  "LocalTransport on SqlStore.layerSqlite",
  runtime(Layer.unwrapScoped(Effect.map(sqliteFile, (filename) => SqlStore.layerSqlite({ filename }))))
)

TransportSuite.suite(
  "LocalTransport on SqlStore.layerPg",
  runtime(Layer.unwrapScoped(Effect.map(pgSchema, (url) => SqlStore.layerPg({ url, maxConnections: 10 }))))
)
