/**
 * The server process of the HTTP benchmark: `ParleyServer.layerSqlite` on the file given, with the bench's models
 * (`pricer`, `streamer`), no request logs (`PARLEY_BENCH_LOG=1`: one per request, with its ms), a high stream cap.
 * Prints `LISTENING <url>`.
 *
 * With `appends: true` (the push row, `push.ts`) it is the same server composed by hand from its public layers
 * (`ParleyServer.layer` over `LocalTransport.layer` on `SqlStore.layerSqlite`, the tenants on `<file>.tenants`, Node's
 * HTTP server), its defaults untouched, with the store's `EventLog.append` timed: when an append returns (the events
 * committed, handed to the tree's readers) the time of each of its events is kept, on the clock of
 * `performance.timeOrigin + performance.now()`. It answers lines on its stdin: `CLOCK` with `CLOCK <now>` (for the
 * client to measure the two processes' clocks against each other), `APPENDS` with `APPENDS <json>` (`{ "<sessionId>
 * <seq>": time }`, then forgotten).
 *
 * Argument (JSON): `{ filename, deltas, appends? }`.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { EventLog } from "@parley/log"
import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { SqliteClient, SqlStore } from "@parley/store-sql"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { createServer } from "node:http"
import * as readline from "node:readline"
import { benchKey, hostileKey, pricer, streamer } from "./models.js"

const args = JSON.parse(process.argv[2] ?? "{}") as {
  readonly filename: string
  readonly deltas: number
  readonly appends?: boolean
}

const options = {
  port: 0,
  keys: ParleyServer.parseKeys(`${benchKey}:bench,${hostileKey}:hostile`),
  models: Models.byAgent({ pricer, streamer: streamer(args.deltas) }),
  maxStreamsPerKey: 100_000,
  // The benchmark's clients bring their agents' definitions (pricer, streamer).
  acceptDefinitions: true,
  log: process.env.PARLEY_BENCH_LOG === "1"
}

const now = () => performance.timeOrigin + performance.now()

/** When each event's append returned, by `"<sessionId> <seq>"`. */
let appended: Record<string, number> = {}

/** The store's `EventLog` with its appends timed. */
const timedAppends = Layer.effect(
  EventLog.EventLog,
  Effect.map(EventLog.EventLog, (log): EventLog.Service => ({
    ...log,
    append: (treeId, expectedSeq, events, fence, durability) =>
      Effect.tap(log.append(treeId, expectedSeq, events, fence, durability), () =>
        Effect.sync(() => {
          const at = now()
          for (const event of events) appended[`${event.sessionId} ${event.seq}`] = at
        }))
  }))
)

const composed = () => {
  const store = timedAppends.pipe(Layer.provideMerge(SqlStore.layerSqlite({ filename: args.filename })))
  const runtimeTools = RuntimeTools.layer()
  const engine = LocalTransport.layer.pipe(
    Layer.provide([store, Connectors.layer([]), runtimeTools, Models.layer(options.models)])
  )
  return ParleyServer.layer(options).pipe(
    Layer.provide([
      engine,
      runtimeTools,
      ParleyServer.layerSessionsSql.pipe(Layer.provide(SqliteClient.layer({ filename: `${args.filename}.tenants` })))
    ]),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
  )
}

const server = args.appends === true ? composed() : ParleyServer.layerSqlite({ ...options, filename: args.filename })

if (args.appends === true) {
  readline.createInterface({ input: process.stdin }).on("line", (line) => {
    if (line === "CLOCK") process.stdout.write(`CLOCK ${now()}\n`)
    if (line === "APPENDS") {
      process.stdout.write(`APPENDS ${JSON.stringify(appended)}\n`)
      appended = {}
    }
  })
}

const announce = Layer.effectDiscard(Effect.flatMap(HttpServer.HttpServer, (http) =>
  Effect.sync(() => {
    if (http.address._tag !== "UnixPathAddress") {
      process.stdout.write(`LISTENING http://127.0.0.1:${http.address.port}\n`)
    }
  })))

NodeRuntime.runMain(Layer.launch(announce.pipe(Layer.provide(server))))
