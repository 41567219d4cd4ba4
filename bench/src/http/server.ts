/**
 * The server process of the HTTP benchmark: `ParleyServer.layerSqlite` on the file given, with the bench's models
 * (`pricer`, `streamer`), no request logs (`PARLEY_BENCH_LOG=1`: one per request, with its ms), a high stream cap.
 * Prints `LISTENING <url>`.
 *
 * Argument (JSON): `{ filename, deltas }`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { benchKey, hostileKey, pricer, streamer } from "./models.js"

const args = JSON.parse(process.argv[2] ?? "{}") as { readonly filename: string; readonly deltas: number }

const server = ParleyServer.layerSqlite({
  filename: args.filename,
  port: 0,
  keys: ParleyServer.parseKeys(`${benchKey}:bench,${hostileKey}:hostile`),
  models: Models.byAgent({ pricer, streamer: streamer(args.deltas) }),
  maxStreamsPerKey: 100_000,
  // The benchmark's clients bring their agents' definitions (pricer, streamer).
  acceptDefinitions: true,
  log: process.env.PARLEY_BENCH_LOG === "1"
})

const announce = Layer.effectDiscard(Effect.flatMap(HttpServer.HttpServer, (http) =>
  Effect.sync(() => {
    if (http.address._tag !== "UnixPathAddress") {
      process.stdout.write(`LISTENING http://127.0.0.1:${http.address.port}\n`)
    }
  })))

NodeRuntime.runMain(Layer.launch(announce.pipe(Layer.provide(server))))
