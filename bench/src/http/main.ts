/**
 * The HTTP benchmark (issue 18): `npm run bench:http` (or `-- --quick`). The server runs in a process of its own
 * (`server.ts`: `ParleyServer.layerSqlite` on a temporary file); this process is the client.
 *
 * Rows:
 * - the approval loop over HTTP through `HttpTransport` (an agent with `permissionMode: "ask"` and a `lookup_price`
 *   tool whose handler runs here; a `CallbackHandler` approves; `Agent.run`: session created, message sent, approval
 *   and tool result answered, result read): p50 per turn sequentially, and turns/s with 64 clients at once;
 * - SSE throughput of one long streamed answer (`deltas` `MessageDelta`s) to one `Turn.events` reader, and to 1,000
 *   raw SSE readers of one session at once (events/s in total);
 * - next to the approval loop and the one reader, the same measured in this process on the server's engine
 *   (`LocalTransport` on SQLite, no HTTP; its turns taken by turns with the HTTP ones, under the same load): what HTTP
 *   adds is the difference;
 * - the server's RSS with 10,000 idle SSE streams open (`/proc/<pid>/status`), against its RSS before;
 * - push: how long after its append (timed in the server) an event reaches a client's stream (`push.ts`).
 *
 * Sizes: `--turns=` (sequential turns), `--seconds=` (the 64-client phase), `--deltas=`, `--readers=`,
 * `--idle=`, `--clients=`, `--push-turns=`. `--only=approval,reader,readers,idle,push` runs some rows only.
 */
import { Transport } from "@parley/core"
import { Agent, Answer, CallbackHandler, Session } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { Tool } from "@parley/tools"
import { HttpTransport } from "@parley/transport-http"
import type { Context } from "effect"
import { Console, Effect, Fiber, Layer, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { benchKey, pricer as pricerModel, streamer as streamerModel } from "./models.js"
import { push } from "./push.js"
import { rssOf, startServer } from "./serverProcess.js"

const quick = process.argv.includes("--quick")
const arg = (name: string, full: number, small: number) => {
  const given = process.argv.find((a) => a.startsWith(`--${name}=`))
  return given === undefined ? (quick ? small : full) : Number(given.split("=")[1])
}
const only = process.argv.find((a) => a.startsWith("--only="))?.split("=")[1]?.split(",")
const runs = (row: "approval" | "reader" | "readers" | "idle" | "push") => only === undefined || only.includes(row)
const sizes = {
  turns: arg("turns", 500, 100),
  seconds: arg("seconds", 15, 5),
  clients: arg("clients", 64, 64),
  deltas: arg("deltas", 50_000, 20_000),
  readers: arg("readers", 1_000, 200),
  readerDeltas: arg("reader-deltas", 2_000, 500),
  idle: arg("idle", 10_000, 1_000),
  pushTurns: arg("push-turns", 300, 60)
}

// ----------------------------------------------------------------------------
// The approval loop
// ----------------------------------------------------------------------------

const Price = Schema.Struct({ product: Schema.String, price: Schema.Number })
const lookupPrice = Tool.make("lookup_price", {
  description: "The price of a product, in EUR.",
  parameters: { product: Schema.String },
  success: Price
}, ({ product }) => Effect.succeed({ product, price: 129 }))

const pricer = Agent.make({ name: "pricer", model: "bench", tools: [lookupPrice], permissionMode: "ask" })
const streamer = Agent.make({ name: "streamer", model: "bench" })

const approve = CallbackHandler.layer({ approval: () => Effect.succeed(new Answer.AllowApproval()) })

const oneTurn = Agent.run(pricer, "What does the atlas cost?").pipe(
  Effect.flatMap((state) =>
    state._tag === "Completed" && state.text === "The atlas costs 129 EUR."
      ? Effect.void
      : Effect.die(new Error(`unexpected state ${state._tag}`))
  )
)

const at = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
const ms = (n: number) => `${n.toFixed(2)} ms`
const fmt = (n: number) => Math.round(n).toLocaleString("en-US")

/**
 * The engine of the server (`LocalTransport` on a SQLite file, the same models) in this process: the approval loop and
 * the reader measured without HTTP, next to the HTTP rows, so what HTTP adds is their difference.
 */
const inProcess = Effect.gen(function*() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-local-"))
  return yield* Layer.build(
    LocalTransport.layer.pipe(Layer.provide([
      SqlStore.layerSqlite({ filename: path.join(dir, "sessions.db") }),
      Connectors.layer([]),
      RuntimeTools.layer(),
      Models.layer(Models.byAgent({ pricer: pricerModel, streamer: streamerModel(sizes.deltas) }))
    ]))
  )
})

/** CPU time (user + system) of a process so far, in ms: this one's from Node, another's from `/proc/<pid>/stat`. */
const cpuOf = (pid: number | undefined) => {
  if (pid === undefined) {
    const { system, user } = process.cpuUsage()
    return (user + system) / 1000
  }
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? []
  // utime and stime, in clock ticks (100 per second on Linux)
  return (Number(fields[11]) + Number(fields[12])) * 10
}

const approvalLoop = (local: Context.Context<Transport.Transport>, serverPid: number | undefined) =>
  Effect.gen(function*() {
    for (let i = 0; i < 30; i++) yield* Effect.andThen(oneTurn, Effect.provide(oneTurn, local))
    // One turn over HTTP, one in this process, by turns: both under the same load. The CPU each takes is summed too
    // (less at the mercy of the load than wall time): the client's and the server's for a turn over HTTP.
    const samples: Array<number> = []
    const localSamples: Array<number> = []
    const cpu = { client: 0, server: 0, local: 0 }
    for (let i = 0; i < sizes.turns; i++) {
      const started = performance.now()
      const [client, server] = [cpuOf(undefined), cpuOf(serverPid)]
      yield* oneTurn
      samples.push(performance.now() - started)
      cpu.client += cpuOf(undefined) - client
      cpu.server += cpuOf(serverPid) - server
      const localStarted = performance.now()
      const local0 = cpuOf(undefined)
      yield* Effect.provide(oneTurn, local)
      localSamples.push(performance.now() - localStarted)
      cpu.local += cpuOf(undefined) - local0
    }
    samples.sort((a, b) => a - b)
    localSamples.sort((a, b) => a - b)
    yield* Console.log(
      `approval loop over HTTP, sequential, ${sizes.turns} turns (session created, message, approval, tool result, answer):`
    )
    yield* Console.log(
      `  p50 ${ms(at(samples, 0.5))}  p90 ${ms(at(samples, 0.9))}  p99 ${ms(at(samples, 0.99))}  (target p50 ≤ 2 ms)`
    )
    yield* Console.log(`  sequential turns/s: ${fmt(1000 / (samples.reduce((a, b) => a + b, 0) / samples.length))}`)
    yield* Console.log(
      `  the same turns in this process (LocalTransport on SQLite, no HTTP), taken by turns with them: p50 ${
        ms(at(localSamples, 0.5))
      }  p90 ${ms(at(localSamples, 0.9))}: HTTP adds ${ms(at(samples, 0.5) - at(localSamples, 0.5))} at p50`
    )
    const per = (total: number) => ms(total / sizes.turns)
    yield* Console.log(
      `  CPU per turn: over HTTP ${per(cpu.client + cpu.server)} (client ${per(cpu.client)}, server ${
        per(cpu.server)
      }); in this process ${per(cpu.local)}`
    )
    let done = 0
    const deadline = performance.now() + sizes.seconds * 1000
    const started = performance.now()
    yield* Effect.all(
      Array.from({ length: sizes.clients }, () =>
        Effect.gen(function*() {
          while (performance.now() < deadline) {
            yield* oneTurn
            done += 1
          }
        })),
      { concurrency: "unbounded", discard: true }
    )
    const elapsed = (performance.now() - started) / 1000
    yield* Console.log(
      `  ${sizes.clients} clients at once for ${sizes.seconds} s: ${fmt(done)} turns, ${
        fmt(done / elapsed)
      } turns/s (target ≥ 1,000)`
    )
  }).pipe(Effect.provide(approve))

// ----------------------------------------------------------------------------
// SSE throughput
// ----------------------------------------------------------------------------

const oneReader = (label: string) =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const session = yield* Agent.startSession(streamer)
    let first = 0
    let connected = false
    // The reader is connected before the message: it gets every live delta.
    const reader = yield* Effect.forkChild(
      transport.events(session.id, 0).pipe(
        Stream.tap((event) =>
          Effect.sync(() => {
            connected = true
            if (first === 0 && event._tag === "MessageDelta") first = performance.now()
          })
        ),
        Stream.takeUntil((event) => event._tag === "TurnEnded"),
        Stream.runCount
      )
    )
    yield* Effect.sleep("300 millis")
    yield* Session.sendMessage(session, "Tell me a long story.")
    const events = yield* Fiber.join(reader)
    const seconds = (performance.now() - first) / 1000
    yield* Console.log(
      `${label}, one answer of ${fmt(sizes.deltas)} deltas: ${fmt(events)} events, ${fmt(events / seconds)} events/s${
        connected ? "" : " (no event read)"
      }`
    )
  })

/** A raw SSE reader: counts the frames until `TurnEnded`. */
const rawReader = (url: string, sessionId: string, connected: () => void) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${benchKey}` }
    })
    connected()
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let frames = 0
    let tail = ""
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      const text = tail + decoder.decode(value, { stream: true })
      const parts = text.split("\n\n")
      tail = parts.pop() ?? ""
      for (const part of parts) {
        if (part.includes("data: ")) frames += 1
        if (part.includes("event: TurnEnded")) {
          await reader.cancel()
          return frames
        }
      }
    }
    return frames
  })

const manyReaders = (url: string) =>
  Effect.gen(function*() {
    const session = yield* Agent.startSession(streamer)
    let connected = 0
    const all = yield* Effect.forkChild(Effect.all(
      Array.from({ length: sizes.readers }, () => rawReader(url, session.id, () => (connected += 1))),
      { concurrency: "unbounded" }
    ))
    while (connected < sizes.readers) yield* Effect.sleep("20 millis")
    const started = performance.now()
    yield* Session.sendMessage(session, "Tell me a story.")
    const counts = yield* Fiber.join(all)
    const seconds = (performance.now() - started) / 1000
    const total = counts.reduce((a, b) => a + b, 0)
    yield* Console.log(
      `SSE, ${fmt(sizes.readers)} raw readers of one session, one answer of ${fmt(sizes.readerDeltas)} deltas: ${
        fmt(total)
      } events in ${seconds.toFixed(2)} s, ${fmt(total / seconds)} events/s in total (target ≥ 20,000)`
    )
  })

// ----------------------------------------------------------------------------
// Idle streams
// ----------------------------------------------------------------------------

const idleStreams = (url: string, pid: number) =>
  Effect.gen(function*() {
    const sessions = yield* Effect.all(Array.from({ length: 100 }, () => Agent.startSession(streamer)))
    const gc = () => new Promise((resolve) => setTimeout(resolve, 500))
    yield* Effect.promise(gc)
    const before = rssOf(pid)
    const controllers: Array<AbortController> = []
    let open = 0
    yield* Effect.forEach(Array.from({ length: sizes.idle }, (_, i) => i), (i) =>
      Effect.promise(async () => {
        const controller = new AbortController()
        controllers.push(controller)
        try {
          const response = await fetch(`${url}/sessions/${sessions[i % sessions.length].id}/events`, {
            headers: { authorization: `Bearer ${benchKey}` },
            signal: controller.signal
          })
          if (response.status === 200) open += 1
        } catch {
          // counted as not open
        }
      }).pipe(Effect.catchDefect(() => Effect.void)), { concurrency: 50, discard: true })
    yield* Effect.promise(gc)
    const after = rssOf(pid)
    yield* Console.log(
      `server RSS with ${fmt(open)} idle SSE streams open: ${fmt(after / 1024 / 1024)} MiB (before: ${
        fmt(before / 1024 / 1024)
      } MiB; ${fmt((after - before) / Math.max(1, open) / 1024)} KiB per stream)`
    )
    for (const controller of controllers) controller.abort()
  })

// ----------------------------------------------------------------------------

const main = Effect.gen(function*() {
  yield* Console.log(`HTTP benchmark${quick ? " (quick)" : ""} on ${os.cpus().length} cores, Node ${process.version}`)
  const { child, url } = yield* startServer(sizes.deltas)
  const transport = HttpTransport.layer({ url, apiKey: benchKey })
  const run = <A, E>(effect: Effect.Effect<A, E, Transport.Transport>) => Effect.provide(effect, transport)
  yield* Console.log(`load average at start: ${os.loadavg().map((n) => n.toFixed(2)).join(", ")}`)
  const local = yield* inProcess
  if (runs("approval")) yield* run(approvalLoop(local, child.pid))
  if (runs("reader")) {
    yield* run(oneReader("SSE, one reader (Transport.events over HttpTransport; target ≥ 100,000 events/s)"))
    yield* Effect.provide(oneReader("  the same reader in this process (LocalTransport on SQLite, no HTTP)"), local)
  }
  if (runs("readers")) {
    yield* Effect.scoped(Effect.gen(function*() {
      // the 1,000 readers read a shorter answer: a server of its own
      const second = yield* startServer(sizes.readerDeltas)
      yield* manyReaders(second.url).pipe(Effect.provide(HttpTransport.layer({ url: second.url, apiKey: benchKey })))
    }))
  }
  if (runs("idle")) yield* run(idleStreams(url, child.pid ?? 0))
  if (runs("push")) {
    yield* Effect.scoped(Effect.gen(function*() {
      // the push row times the appends of a server of its own
      const timed = yield* startServer(sizes.deltas, true)
      yield* push(timed.child, sizes.pushTurns).pipe(
        Effect.provide(HttpTransport.layer({ url: timed.url, apiKey: benchKey }))
      )
    }))
  }
  yield* Console.log(`load average at end: ${os.loadavg().map((n) => n.toFixed(2)).join(", ")}`)
}).pipe(Effect.scoped)

Effect.runPromise(main).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
