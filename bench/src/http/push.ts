/**
 * The push row of the HTTP benchmark (issue 35, point 7): how long after its append an event reaches a client's event
 * stream. The server is `server.ts` with `appends: true` (the default server, its store's appends timed); the client
 * follows each session with `Transport.subscribe` of `HttpTransport.layer` (default options) connected before the
 * message, while `Turn.result` with a `CallbackHandler` drives the approval loop's turn (the pricer: approval, the
 * client's `lookup_price`, the answer). For every stored event the stream gets, the latency is the time it was taken
 * from the stream minus the time its append returned in the server.
 *
 * The two processes read one clock (`performance.timeOrigin + performance.now()`); the offset between them is measured
 * over the server's stdin/stdout (the round trip with the least time of 50), and its uncertainty (half that round
 * trip) is printed with the result.
 */
import type { TurnEvent } from "@parley/core"
import { Agent, Answer, CallbackHandler, Session, Transport, Turn } from "@parley/core"
import { Tool } from "@parley/tools"
import { Cause, Console, Effect, Fiber, Queue, Schema } from "effect"
import type * as ChildProcess from "node:child_process"
import * as os from "node:os"

const now = () => performance.timeOrigin + performance.now()

const lookupPrice = Tool.make("lookup_price", {
  description: "The price of a product, in EUR.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ product: Schema.String, price: Schema.Number })
}, ({ product }) => Effect.succeed({ product, price: 129 }))

const pricer = Agent.make({ name: "pricer", model: "bench", tools: [lookupPrice], permissionMode: "ask" })
const approve = CallbackHandler.layer({ approval: () => Effect.succeed(new Answer.AllowApproval()) })

/** Line requests to the server process: `ask("CLOCK")` gives the text after `CLOCK `. */
const linesOf = (child: ChildProcess.ChildProcess) => {
  const waiting: Array<{ readonly prefix: string; readonly resume: (text: string) => void }> = []
  let buffered = ""
  child.stdout?.on("data", (chunk) => {
    buffered += String(chunk)
    let end = buffered.indexOf("\n")
    while (end >= 0) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(end + 1)
      const index = waiting.findIndex((entry) => line.startsWith(`${entry.prefix} `))
      if (index >= 0) {
        const [entry] = waiting.splice(index, 1)
        entry.resume(line.slice(entry.prefix.length + 1))
      }
      end = buffered.indexOf("\n")
    }
  })
  return (command: string) =>
    Effect.callback<string>((resume) => {
      waiting.push({ prefix: command, resume: (text) => resume(Effect.succeed(text)) })
      child.stdin?.write(`${command}\n`)
    })
}

/** The server's clock minus this one's, and the uncertainty (half the best round trip), in ms. */
const clockOffset = (ask: (command: string) => Effect.Effect<string>) =>
  Effect.gen(function*() {
    let best = { offset: 0, uncertainty: Infinity }
    for (let i = 0; i < 50; i++) {
      const sent = now()
      const server = Number(yield* ask("CLOCK"))
      const received = now()
      const uncertainty = (received - sent) / 2
      if (uncertainty < best.uncertainty) best = { offset: server - (sent + received) / 2, uncertainty }
    }
    return best
  })

const at = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
const ms = (n: number) => `${n.toFixed(2)} ms`

/** One approval-loop turn with a stream connected before its message: when each stored event was taken from it. */
const oneTurn = Effect.scoped(Effect.gen(function*() {
  const transport = yield* Transport.Transport
  const session = yield* Agent.startSession(pricer)
  // `subscribe` returns once the stream's connection is open.
  const events = yield* transport.subscribe(session.id, 0)
  const received: Array<{ readonly event: TurnEvent.TurnEvent; readonly at: number }> = []
  const reader = yield* Effect.forkScoped(
    Effect.gen(function*() {
      while (true) {
        const batch = yield* Queue.takeAll(events)
        const taken = now()
        for (const event of batch) {
          if (event._tag === "MessageDelta") continue
          received.push({ event, at: taken })
          if (event._tag === "TurnEnded") return
        }
      }
    }).pipe(Effect.catchIf(Cause.isDone, () => Effect.void))
  )
  // The server subscribes as it starts the response's body: let it.
  yield* Effect.sleep("20 millis")
  const turn = yield* Session.sendMessage(session, "What does the atlas cost?")
  const state = yield* Turn.result(turn)
  if (state._tag !== "Completed") return yield* Effect.die(new Error(`unexpected state ${state._tag}`))
  yield* Fiber.join(reader)
  return received
})).pipe(Effect.provide(approve))

export const push = (child: ChildProcess.ChildProcess, turns: number) =>
  Effect.gen(function*() {
    const ask = linesOf(child)
    for (let i = 0; i < 20; i++) yield* oneTurn
    yield* ask("APPENDS")
    const before = yield* clockOffset(ask)
    const load = os.loadavg()[0]
    const all: Array<{ readonly event: TurnEvent.TurnEvent; readonly at: number }> = []
    for (let i = 0; i < turns; i++) all.push(...(yield* oneTurn))
    const appended = JSON.parse(yield* ask("APPENDS")) as Record<string, number>
    const after = yield* clockOffset(ask)
    const offset = (before.offset + after.offset) / 2
    const latencies: Array<number> = []
    const opened: Array<number> = []
    for (const { at: taken, event } of all) {
      const append = appended[`${event.sessionId} ${event.seq}`]
      if (append === undefined) continue
      const latency = taken + offset - append
      latencies.push(latency)
      if (event._tag === "CallbackOpened") opened.push(latency)
    }
    latencies.sort((a, b) => a - b)
    opened.sort((a, b) => a - b)
    yield* Console.log(
      `push: an event's append (in the server) to the client's stream (Transport.subscribe over HttpTransport), ${turns} approval-loop turns, ${latencies.length} stored events (load ${
        load.toFixed(2)
      } → ${os.loadavg()[0].toFixed(2)}):`
    )
    yield* Console.log(
      `  p50 ${ms(at(latencies, 0.5))}  p90 ${ms(at(latencies, 0.9))}  p99 ${ms(at(latencies, 0.99))}  max ${
        ms(at(latencies, 1))
      }  (target p50 < 1 ms)`
    )
    yield* Console.log(
      `  CallbackOpened only: p50 ${ms(at(opened, 0.5))}  p99 ${ms(at(opened, 0.99))}; the two clocks: offset ${
        ms(offset)
      } ± ${ms(Math.max(before.uncertainty, after.uncertainty))} (moved ${ms(Math.abs(after.offset - before.offset))})`
    )
  })
