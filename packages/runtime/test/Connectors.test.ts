import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Session, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Duration, Effect, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"

// Issue 8: "a defect in a model or connector ends no turn: Turn.result and agents.wait hang forever". A defect in a
// connector tool's `run` ends the turn Failed with the defect's message.

/** `effect`, failed when it has not finished after `seconds` of real time (a `TestClock` never moves by itself). */
const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 5): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    TestClock.withLive(Effect.sleep(Duration.seconds(seconds))).pipe(
      Effect.andThen(Effect.sync(() => assert.fail(`${what}: still waiting after ${seconds} s (real time)`)))
    )
  )

const crm = Agent.make({
  name: "crm-assistant",
  model: "scripted",
  instructions: "Find the contact, then answer in one sentence.",
  connectors: ["crm"]
})

/** Calls the CRM's `find_contact`, then answers from its result. */
const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const found = ScriptedModel.toolResults(call).find((result) => result.name === "crm_find_contact")
  return found === undefined
    ? ScriptedModel.toolCall("crm_find_contact", { name: "Camille" })
    : ScriptedModel.text(`Found: ${JSON.stringify(found.result)}`)
}

const connectAll = CallbackHandler.layer({
  signIn: (callback) => new Answer.SignInAnswer({ connected: callback.requests.map((request) => request.id) })
})

const defects: ReadonlyArray<readonly [string, (args: unknown) => Effect.Effect<unknown, string>, string]> = [
  ["dies", () => Effect.die(new Error("boom: the CRM client died")), "boom: the CRM client died"],
  ["throws", () => {
    throw new Error("boom: the CRM client threw")
  }, "boom: the CRM client threw"]
]

describe("Connectors: a defect in a connector tool", () => {
  for (const [name, run, message] of defects) {
    it.effect(`a connector tool whose run ${name} ends the turn Failed with the defect's message`, () =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.fromFunction(brain)
        const engine = LocalTransport.layer.pipe(
          Layer.provide([
            SessionStore.layerMemory,
            Connectors.layer([Connectors.make("crm", [{ name: "find_contact", description: "Find a contact.", run }])]),
            RuntimeTools.layerEmpty,
            Models.layer(Models.single(model.languageModel))
          ])
        )
        const { events, state } = yield* Effect.gen(function*() {
          const session = yield* Agent.startSession(crm)
          const state = yield* within("Session.run", Session.run(session, "Who is Camille?"))
          const turn = yield* Session.turn(session, state.turnId)
          const events = yield* within(
            "the turn's log",
            Stream.runCollect(Turn.events(turn))
          )
          return { events, state }
        }).pipe(Effect.provide(connectAll), Effect.provide(engine))
        assert.strictEqual(state._tag, "Failed")
        if (state._tag === "Failed") assert.include(state.error.message, message)
        const last = events[events.length - 1]
        assert.strictEqual(last._tag, "TurnEnded")
        if (last._tag === "TurnEnded") assert.strictEqual(last.state._tag, "Failed")
        // The model was not called again after the defect.
        assert.strictEqual((yield* model.calls).length, 1)
      }))
  }
})

describe("Connectors: a sign-in answered with a credential", () => {
  it.effect("a connector that takes no credential refuses the grant with AnswerMismatch; the sign-in stays open", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction((call) =>
        ScriptedModel.toolResults(call).length === 0
          ? ScriptedModel.toolCall("gmail_latest_email", {})
          : ScriptedModel.text("done")
      )
      const engine = LocalTransport.layer.pipe(
        Layer.provide([
          SessionStore.layerMemory,
          Connectors.layer([Connectors.demoMailbox()]),
          RuntimeTools.layerEmpty,
          Models.layer(Models.single(model.languageModel))
        ])
      )
      const gmailAgent = Agent.make({
        name: "mail",
        model: "scripted",
        instructions: "Read mail.",
        connectors: ["gmail"]
      })
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(gmailAgent)
        const blocked = yield* within("Session.run", Session.run(session, "Mail?"))
        assert.strictEqual(blocked._tag, "Blocked")
        if (blocked._tag !== "Blocked") return
        const [callback] = blocked.callbacks
        const turn = yield* Session.turn(session, blocked.turnId)
        const error = yield* Effect.flip(Turn.answer(
          turn,
          callback.id,
          new Answer.SignInAnswer({ connected: [new Answer.SignInGrant({ id: "gmail", code: "a-code" })] })
        ))
        assert.strictEqual(error._tag, "AnswerMismatch")
        assert.include(error.message, "the sign-in to gmail takes no credential: connect it by its id")
        assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
        // Connected by id, the same call runs.
        yield* Turn.answer(turn, callback.id, new Answer.SignInAnswer({ connected: ["gmail"] }))
        const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
        assert.strictEqual(state._tag, "Completed")
      }).pipe(Effect.provide(engine))
    }))
})
