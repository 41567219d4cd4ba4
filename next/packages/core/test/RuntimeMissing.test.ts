import { assert, describe, it } from "@effect/vitest"
import type { Transport } from "@parley/core"
import { Agent, Answer, Inbox, Session, Turn } from "@parley/core"
import type { Effect as EffectNs } from "effect"
import { Effect, Stream } from "effect"
import * as F from "./fixtures.js"

/**
 * What a program run without type-checking (`tsx main.ts`) does when it forgets its runtime layer: the type asks for
 * `Transport`, nothing provides it.
 */
const unchecked = <A, E>(effect: EffectNs.Effect<A, E, Transport.Transport>) => effect as EffectNs.Effect<A, E>

const assistant = Agent.make({ name: "assistant", model: "m", instructions: "Be brief." })
const turn: Turn.Turn = { sessionId: F.sessionId, turnId: F.turnId, cursor: 0, handler: undefined }
const session: Session.Session = { id: F.sessionId, handler: undefined }

describe("the client API with no runtime in context", () => {
  it.effect("fails with RuntimeMissing, naming the call and the layers that provide a runtime, not a defect", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(unchecked(Agent.run(assistant, "Hello")))
      assert.strictEqual(error._tag, "RuntimeMissing")
      assert.strictEqual(
        error.message,
        "Agent.startSession: no Parley runtime in context (no @parley/core/Transport service): provide " +
          "`LocalTransport.layerMemory()` (in-process, from @parley/runtime), the SQLite one-liner " +
          "`SqlRuntime.layerSqlite()` (durable, from @parley/store-sql), or `HttpTransport.layer(…)` (a server, from " +
          "@parley/transport-http)"
      )
    }))

  it.effect("every entry point of the client API", () =>
    Effect.gen(function*() {
      const failures = [
        yield* Effect.flip(unchecked(Agent.startSession(assistant))),
        yield* Effect.flip(unchecked(Agent.session(assistant, F.sessionId))),
        yield* Effect.flip(unchecked(Session.sendMessage(session, "hi"))),
        yield* Effect.flip(unchecked(Turn.result(turn))),
        yield* Effect.flip(unchecked(Turn.answer(turn, F.approvalId, new Answer.AllowApproval()))),
        yield* Effect.flip(unchecked(Stream.runDrain(Turn.events(turn)))),
        yield* Effect.flip(unchecked(Inbox.listOpen())),
        yield* Effect.flip(unchecked(Inbox.answer("cb_0123456789abcdef", new Answer.AllowApproval())))
      ]
      assert.deepStrictEqual(failures.map((error) => error._tag), Array(failures.length).fill("RuntimeMissing"))
      assert.deepStrictEqual(
        failures.map((error) => error._tag === "RuntimeMissing" ? `${error.module}.${error.method}` : ""),
        [
          "Agent.startSession",
          "Agent.session",
          "Session.sendMessage",
          "Turn.result",
          "Turn.answer",
          "Turn.events",
          "Inbox.listOpen",
          "Inbox.answer"
        ]
      )
    }))
})
