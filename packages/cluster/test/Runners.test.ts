import { assert, describe, it } from "@effect/vitest"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Session, Transport, Turn } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Context, Duration, Effect, Exit, Layer, Schema, Scope } from "effect"
import { Sharding } from "effect/cluster"
import { freePorts, pgSchema } from "./databases.js"
import { runner, settled } from "./runners.js"

// Three runners of one cluster on PostgreSQL, in one process: trees are placed across them, approvals are answered
// through any of them, and a runner that stops while its trees' tools run (a drain: its scope closes, its shards go
// to the others) loses no turn, and no tool whose start was recorded runs twice (the crash test's ledger).

const SESSIONS = 24

/** What the tools did: the products whose price lookup began, and those whose lookup finished (its side effect). */
const ledger = { began: new Map<string, number>(), finished: new Map<string, number>() }
const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)

const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, ({ product }) =>
  Effect.gen(function*() {
    bump(ledger.began, product)
    yield* Effect.sleep("300 millis")
    bump(ledger.finished, product)
    return { price: "1,200 EUR" }
  }))

const pricer = Agent.make({
  name: "pricer",
  model: "scripted",
  instructions: "Look up the price, then answer in one sentence.",
  tools: [lookupPrice.spec],
  permissionMode: "ask"
})

/** Looks up the product the user names, then gives its price or the failure it got. */
const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const price = ScriptedModel.toolResults(call).find((result) => result.name === "lookup_price")
  const product = (ScriptedModel.lastUserText(call) ?? "").split(" ")[1]
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product })
  if (price.isFailure) return ScriptedModel.text(`No price for ${product}.`)
  return ScriptedModel.text(`${product} costs 1,200 EUR.`)
}

/** Fails with the phase's name when it takes longer than `seconds`. */
const phase = (name: string, seconds: number) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.timeoutOrElse(effect, {
    duration: Duration.seconds(seconds),
    orElse: () => Effect.fail(new Error(`${name}: still running after ${seconds} s`))
  })

describe("ClusterRuntime.layerSocket: three runners", () => {
  it.live(
    "trees spread over the runners; a runner drained mid-tool loses no turn and runs no tool twice",
    () =>
      Effect.gen(function*() {
        const url = yield* pgSchema
        const model = yield* ScriptedModel.fromFunction(brain)
        const ports = yield* freePorts(3)
        const started = []
        for (const port of ports) {
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            runner({ url, port, model: model.languageModel, runtimeTools: [lookupPrice] }),
            scope
          )
          started.push({ scope, context })
        }
        yield* settled(started.map(({ context }) => Context.get(context, Sharding.Sharding))).pipe(
          phase("settling", 60)
        )
        const [first, second, third] = started
        const through = (runner: typeof first) => Effect.provide(runner.context)

        // Sessions started through the first runner, each blocked on its approval.
        const turns = yield* through(first)(Effect.forEach(
          Array.from({ length: SESSIONS }, (_, i) => `product-${i}`),
          (product) =>
            Effect.gen(function*() {
              const session = yield* Agent.startSession(pricer)
              const turn = yield* Session.sendMessage(session, `Price ${product} please.`)
              const state = yield* Turn.result(turn)
              assert.strictEqual(state._tag, "Blocked")
              return { product, turn, blocked: state as TurnState.Blocked }
            }),
          { concurrency: 8 }
        ))
        const held = yield* Effect.forEach(
          started,
          ({ context }) => Context.get(context, Sharding.Sharding).activeEntityCount
        )
        assert.isAtLeast(held.filter((count) => count > 0).length, 2, `trees per runner: ${held.join(", ")}`)

        // Every approval answered through the second runner; the third stops while the tools run.
        yield* through(second)(Effect.forEach(
          turns,
          ({ blocked, turn }) => Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()),
          { concurrency: 8, discard: true }
        ))
        yield* Effect.sleep("100 millis")
        yield* Scope.close(third.scope, Exit.void)

        // Every turn completes, read through the first runner.
        const ended = yield* through(first)(Effect.forEach(
          turns,
          ({ turn }) => Effect.map(Turn.result(turn), (state) => state),
          { concurrency: 8 }
        ))
        for (const [i, state] of ended.entries()) {
          assert.strictEqual(state._tag, "Completed", `${turns[i].product}: ${state._tag}`)
        }
        // The ledger: no tool ran twice.
        for (const [i, { product }] of turns.entries()) {
          const began = ledger.began.get(product) ?? 0
          const finished = ledger.finished.get(product) ?? 0
          assert.isAtMost(began, 1, `${product} began ${began} times`)
          const text = ended[i]._tag === "Completed" ? (ended[i] as TurnState.Completed).text : ""
          // A price comes only from a run that finished; a run cut off before its result was recorded is reported
          // failed to the model, never run again.
          assert.include([`${product} costs 1,200 EUR.`, `No price for ${product}.`], text)
          if (text.endsWith("costs 1,200 EUR.")) assert.strictEqual(finished, 1, product)
        }
        const transport = yield* through(first)(Transport.Transport)
        assert.deepStrictEqual(yield* transport.listOpen(), [])
        yield* Scope.close(second.scope, Exit.void)
        yield* Scope.close(first.scope, Exit.void)
      }).pipe(Effect.scoped),
    300_000
  )
})
