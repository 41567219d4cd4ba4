/**
 * `Turn.result` hands handlers only the callbacks still open: once, concurrently, never held by a handler whose callback closed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import type { Callback } from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import type { CallbackResolved } from "@parley/core/TurnEvent"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import { assertOneResolution, kinds, logOf, stateAs, turnOf, within } from "../assertions.js"
import { allow, assistant, brain, IN_LYON, LOCATION, lyon, NO_LOCATION } from "../fixtures.js"
import type { WithModel } from "../harness.js"
import { ATLAS, ATLAS_ANSWER, BOTH, BOTH_ANSWER, pricer, pricerBrain, priceTool, WHERE } from "./scenarios.js"

export const handlers = (withModel: WithModel) => {
  describe("Turn.result and client-tool handlers", () => {
    it.effect("Turn.result on a finished turn does not run the client tool's handler again", () =>
      withModel(pricerBrain(), () =>
        Effect.gen(function*() {
          let runs = 0
          const agent = pricer(priceTool(() => Effect.sync(() => void runs++)))
          const state = yield* within("Agent.run", Agent.run(agent, ATLAS))
          const completed = stateAs(state, "Completed")
          assert.strictEqual(completed.text, ATLAS_ANSWER)
          assert.strictEqual(runs, 1)
          const turn = yield* turnOf(agent, completed)
          for (let again = 0; again < 2; again++) {
            const replayed = yield* within("Turn.result on the finished turn", Turn.result(turn))
            assert.strictEqual(stateAs(replayed, "Completed").text, ATLAS_ANSWER)
          }
          assert.strictEqual(runs, 1, "the handler ran once, for the one call")
        })))

    it.effect("two concurrent Turn.results on one turn run the tool's handler once per call", () =>
      withModel(pricerBrain(), () =>
        Effect.gen(function*() {
          let runs = 0
          const agent = pricer(priceTool(() => Effect.sync(() => void runs++)))
          const session = yield* Agent.startSession(agent)
          const turn = yield* Session.sendMessage(session, ATLAS)
          const [a, b] = yield* within(
            "two Turn.results",
            Effect.all([Turn.result(turn), Turn.result(turn)], { concurrency: "unbounded" })
          )
          assert.strictEqual(stateAs(a, "Completed").text, ATLAS_ANSWER)
          assert.strictEqual(stateAs(b, "Completed").text, ATLAS_ANSWER)
          assert.strictEqual(runs, 1, "one call, one handler run")
        })))

    it.effect("a slow handler does not delay the answer to another callback open at the same time", () =>
      withModel(pricerBrain(), () =>
        Effect.gen(function*() {
          const gate = yield* Deferred.make<void>()
          const held = yield* Deferred.make<string>()
          let started = 0
          let heldFinished = false
          // The first call to reach the handler is held until the gate opens; the other answers at once.
          const agent = pricer(priceTool((product) =>
            started++ === 0
              ? Deferred.succeed(held, product).pipe(
                Effect.andThen(Deferred.await(gate)),
                Effect.andThen(Effect.sync(() => void (heldFinished = true)))
              )
              : Effect.void
          ))
          const session = yield* Agent.startSession(agent)
          const turn = yield* Session.sendMessage(session, BOTH)
          const waiter = yield* Effect.forkChild(Turn.result(turn))
          yield* within("the first handler starts", Deferred.await(held))
          const opened = yield* within(
            "both client tool calls open",
            Turn.events(turn).pipe(
              Stream.filter((event) => event._tag === "CallbackOpened"),
              Stream.take(2),
              Stream.runCollect
            )
          )
          assert.strictEqual(opened.length, 2)
          const resolvedFirst = yield* within(
            "a CallbackResolved while the slow handler still runs",
            Turn.events(turn).pipe(
              Stream.filter((event): event is CallbackResolved => event._tag === "CallbackResolved"),
              Stream.runHead
            )
          )
          assert.isTrue(Option.isSome(resolvedFirst))
          assert.isFalse(heldFinished, "the slow handler has not finished")
          if (Option.isSome(resolvedFirst)) assert.strictEqual(resolvedFirst.value.resolution, "answered")
          yield* Deferred.succeed(gate, undefined)
          const state = yield* within("Turn.result", Fiber.join(waiter))
          assert.strictEqual(stateAs(state, "Completed").text, BOTH_ANSWER)
          assert.strictEqual(started, 2)
          assert.isTrue(heldFinished)
        })))

    it.effect("a handler that never returns does not keep Turn.result once its callback expired", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const asked = yield* Deferred.make<Callback>()
          const stuck = CallbackHandler.layer({
            approval: (context) => Effect.andThen(Deferred.succeed(asked, context.callback), Effect.never)
          })
          const session = yield* Agent.startSession(assistant())
          const turn = yield* Session.sendMessage(session, WHERE)
          const waiter = yield* Effect.forkChild(Turn.result(turn).pipe(Effect.provide(stuck)))
          const callback = yield* within("the handler is asked", Deferred.await(asked))
          yield* within(
            "the turn reports Blocked",
            Turn.events(turn).pipe(Stream.filter((event) => event._tag === "TurnBlocked"), Stream.runHead)
          )
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* TestClock.adjust("1 hour")
          const state = yield* within("Turn.result after the approval expired", Fiber.join(waiter))
          // The expiry is a denial: the model answers without the location.
          assert.strictEqual(stateAs(state, "Completed").text, NO_LOCATION)
          assertOneResolution(yield* within("the turn's log", logOf(turn)), callback.id, "expired")
        })))

    it.effect("Turn.result hands the handlers only the callbacks still open", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const agent = assistant()
          const blocked = stateAs(yield* within("Agent.run", Agent.run(agent, WHERE)), "Blocked")
          assert.deepStrictEqual(kinds(blocked.callbacks), ["approval"])
          const approval = blocked.callbacks[0]
          const turn = yield* turnOf(agent, blocked)
          yield* Turn.answer(turn, approval.id, allow)
          const seen: Array<string> = []
          const record = CallbackHandler.layer({
            approval: (context) => {
              seen.push(`${context.callback.kind} ${context.callback.id}`)
              return allow
            },
            clientTool: (callback) => {
              seen.push(`${callback.kind} ${callback.id}`)
              return lyon
            }
          })
          // From the turn's start: the approval answered by id is in the log, but no longer open.
          const state = yield* within("Turn.result", Turn.result(turn).pipe(Effect.provide(record)))
          assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
          assert.isFalse(seen.includes(`approval ${approval.id}`), "the answered approval reached a handler")
          assert.deepStrictEqual(seen.map((entry) => entry.split(" ")[0]), ["client_tool"])
        })))
  })
}
