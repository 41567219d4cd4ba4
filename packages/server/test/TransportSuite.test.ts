import * as TransportSuite from "@parley/testing/TransportSuite"
import { Effect } from "effect"
import { httpOutage, httpRuntime, pgDatabase, pgSchema, sqliteDatabase, sqliteFile } from "./fixtures/servers.js"

// The whole transport contract over HTTP: HttpTransport against a real ParleyServer on 127.0.0.1, which takes its
// callers' definitions (`acceptDefinitions`, as the contract needs; a server's own agents: AgentOwnership.test.ts).
// The server can be down: the outage scenario runs here (not on the in-process transport).
const sqlite = Effect.orDie(Effect.map(sqliteFile, sqliteDatabase))
TransportSuite.suite("HttpTransport on SqlStore.layerSqlite", httpRuntime(sqlite), {
  unprovidedRuntimeTool: "refused",
  outage: httpOutage(sqlite)
})

const pg = Effect.orDie(Effect.map(pgSchema, pgDatabase))
TransportSuite.suite("HttpTransport on SqlStore.layerPg", httpRuntime(pg), {
  unprovidedRuntimeTool: "refused",
  outage: httpOutage(pg)
})
