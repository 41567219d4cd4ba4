/**
 * Where a turn of the HTTP approval loop spends its time: each client call timed (p50 of `n`), against a bench server
 * process at `url`. `node --conditions=@parley/source --import tsx bench/src/http/turnProbe.ts <url> [n]`
 */
import { Agent, Answer, CallbackHandler, Session, Transport, Turn } from "@parley/core"
import { Tool } from "@parley/tools"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Schema } from "effect"
import { benchKey } from "./models.js"

const url = process.argv[2] ?? "http://127.0.0.1:8787"
const n = Number(process.argv[3] ?? 50)

const lookupPrice = Tool.make("lookup_price", {
  description: "The price of a product, in EUR.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ product: Schema.String, price: Schema.Number })
}, ({ product }) => Effect.succeed({ product, price: 129 }))
const pricer = Agent.make({ name: "pricer", model: "bench", tools: [lookupPrice], permissionMode: "ask" })
const approve = CallbackHandler.layer({ approval: () => Effect.succeed(new Answer.AllowApproval()) })

const timings: Record<string, Array<number>> = {}
const timed = <A, E, R>(name: string, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const started = performance.now()
    const value = yield* effect
    ;(timings[name] ??= []).push(performance.now() - started)
    return value
  })

const program = Effect.gen(function*() {
  const transport = yield* Transport.Transport
  for (let i = 0; i < n; i++) {
    const session = yield* timed("createSession", Agent.startSession(pricer))
    yield* timed("getSession", transport.getSession(session.id))
    const turn = yield* timed("sendMessage", Session.sendMessage(session, "What does the atlas cost?"))
    yield* timed("snapshot", transport.snapshot(session.id, turn.turnId))
    yield* timed("subscribe (first connection)", Effect.scoped(transport.subscribe(session.id, 0)))
    yield* timed("Turn.result (approval + tool + answer)", Turn.result(turn).pipe(Effect.provide(approve)))
  }
  for (const [name, samples] of Object.entries(timings)) {
    samples.sort((a, b) => a - b)
    console.log(`${name}: p50 ${samples[Math.floor(samples.length / 2)].toFixed(2)} ms`)
  }
}).pipe(Effect.provide(HttpTransport.layer({ url, apiKey: benchKey })))

Effect.runPromise(program)
