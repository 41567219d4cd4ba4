/**
 * A server that is down when a turn is followed (issue 35, point 7), for the transports that have one between the
 * program and its runtime: the first request of `Turn.result` and of `Turn.events` rides out the outage (connection
 * refused) and the turn completes once the server is back.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { Behaviour } from "../../TransportSuite.js"
import { stateAs } from "./assertions.js"
import { assistant, brain, IN_LYON, LOCATION, lyon, policy } from "./fixtures.js"

export const outage = (makeOutage: NonNullable<Behaviour["outage"]>) =>
  describe("a server that is down (issue 35, point 7)", () => {
    it.live(
      "Turn.result and Turn.events started while the server is down wait for it; the turn completes",
      () =>
        Effect.gen(function*() {
          const scripted = yield* brain([LOCATION])
          const server = yield* makeOutage(scripted.languageModel, { runtimeTools: [] })
          const transport = yield* Layer.build(Layer.fresh(server.transport))
          const agent = assistant({ permissions: policy("allow") })
          const session = yield* Agent.startSession(agent).pipe(Effect.provide(transport))
          const turn = yield* Session.sendMessage(session, "Where am I?").pipe(Effect.provide(transport))
          yield* server.down
          const result = yield* Effect.forkChild(
            Turn.result(turn).pipe(
              Effect.provide(CallbackHandler.layer({ clientTool: () => Effect.succeed(lyon) })),
              Effect.provide(transport)
            )
          )
          const events = yield* Effect.forkChild(
            Turn.events(turn).pipe(
              Stream.filter((event) => event._tag !== "MessageDelta"),
              Stream.map((event) => event._tag),
              Stream.runCollect,
              Effect.provide(transport)
            )
          )
          // Their first requests find no server; neither gives up.
          yield* Effect.sleep("500 millis")
          assert.isUndefined(result.pollUnsafe(), "Turn.result waits")
          assert.isUndefined(events.pollUnsafe(), "Turn.events waits")
          yield* server.up
          // Real time here (`it.live`): the transport's schedule sleeps on the clock.
          const state = yield* Fiber.join(result).pipe(Effect.timeout("60 seconds"))
          assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
          const read = yield* Fiber.join(events).pipe(Effect.timeout("60 seconds"))
          assert.strictEqual(read[0], "TurnQueued")
          assert.strictEqual(read[read.length - 1], "TurnEnded")
        }).pipe(Effect.scoped),
      { timeout: 120_000 }
    )
  })
