import * as TransportSuite from "@parley/testing/TransportSuite"
import { Effect } from "effect"
import { httpRuntime, pgDatabase, pgSchema, sqliteDatabase, sqliteFile } from "./fixtures/servers.js"

// The whole transport contract over HTTP: HttpTransport against a real ParleyServer on 127.0.0.1, which takes its
// callers' definitions (`acceptDefinitions`, as the contract needs; a server's own agents: AgentOwnership.test.ts).
TransportSuite.suite(
  "HttpTransport on SqlStore.layerSqlite",
  httpRuntime(Effect.orDie(Effect.map(sqliteFile, sqliteDatabase))),
  { unprovidedRuntimeTool: "refused" }
)

TransportSuite.suite(
  "HttpTransport on SqlStore.layerPg",
  httpRuntime(Effect.orDie(Effect.map(pgSchema, pgDatabase))),
  { unprovidedRuntimeTool: "refused" }
)
