import { SqlStore } from "@parley/store-sql"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { Effect, Layer } from "effect"
import { pgSchema } from "./databases.js"
import { runtime } from "./transports.js"

// The whole transport contract with the engine's log in PostgreSQL.
TransportSuite.suite(
  "LocalTransport on SqlStore.layerPg",
  runtime(Layer.unwrap(Effect.map(pgSchema, (url) => SqlStore.layerPg({ url, maxConnections: 10 }))))
)
