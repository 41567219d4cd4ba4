/**
 * A defect ends the turn `Failed` (never a hang); a turn exists as soon as `sendMessage` returns (a queued one too).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import * as ScriptedModel from "../../../ScriptedModel.js"
import { kinds, logOf, ofTag, stateAs, turnOf, within } from "../assertions.js"
import { assistant, LOCATION, lyon, NO_LOCATION, policy } from "../fixtures.js"
import type { WithModel } from "../harness.js"
import { treeModel } from "../treeAgents.js"
import { boss, bossBrain, greeterOrLocator, GREETING, HELLO, outcomeOf, WHERE, worker } from "./scenarios.js"

export const failures = (withModel: WithModel) => {
  describe("a defect ends the turn Failed, never a hang", () => {
    const scripts: ReadonlyArray<readonly [string, () => Effect.Effect<ScriptedModel.Service>, string]> = [
      [
        "a first model step that dies",
        () => ScriptedModel.make([() => Effect.die(new Error("boom: the model died"))]),
        "boom: the model died"
      ],
      [
        "a brain that throws",
        () =>
          ScriptedModel.fromFunction(() => {
            throw new Error("boom: the brain threw")
          }),
        "boom: the brain threw"
      ],
      [
        "a model step that dies after a tool call",
        () =>
          ScriptedModel.make([
            ScriptedModel.reply({ toolCalls: [LOCATION] }),
            () => Effect.die(new Error("boom: the second step died"))
          ]),
        "boom: the second step died"
      ]
    ]
    for (const [name, script, message] of scripts) {
      it.effect(`${name}: Turn.result returns Failed with the defect's message`, () =>
        withModel(script(), () =>
          Effect.gen(function*() {
            const agent = assistant({ permissions: policy("allow") })
            const state = yield* within(
              "Agent.run",
              Agent.run(agent, WHERE).pipe(Effect.provide(CallbackHandler.layer({ clientTool: () => lyon })))
            )
            const failed = stateAs(state, "Failed")
            assert.include(failed.error.message, message)
            const events = yield* within("the turn's log", logOf(yield* turnOf(agent, failed)))
            const last = events[events.length - 1]
            assert.strictEqual(last._tag, "TurnEnded")
            if (last._tag === "TurnEnded") assert.strictEqual(last.state._tag, "Failed")
          })))
    }

    it.effect("a subagent whose model dies: agents_wait returns it Failed and the root turn completes", () =>
      withModel(
        treeModel([[boss, bossBrain], [worker, () => {
          throw new Error("boom: the worker's model died")
        }]]),
        () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(boss)
            const state = yield* within("Session.run", Session.run(session, "Tidy my inbox."))
            const completed = stateAs(state, "Completed")
            // The parent's model saw the child Failed, with the defect's message.
            assert.match(completed.text, /^worker Failed: .*boom: the worker's model died/)
            const events = yield* within("the root turn's log", logOf(yield* Session.turn(session, state.turnId)))
            const ended = ofTag(events, "SubagentEnded")
            assert.strictEqual(ended.length, 1)
            const child = stateAs(ended[0].state, "Failed")
            assert.include(child.error.message, "boom: the worker's model died")
          })
      ))
  })

  describe("a turn exists as soon as sendMessage returns", () => {
    it.effect("Session.turn finds the first turn right after sendMessage", () =>
      withModel(greeterOrLocator(), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const sent = yield* Session.sendMessage(session, HELLO)
          // At once: no wait (not even a bounded one, which would fork and let the engine run first).
          const outcome = yield* outcomeOf(Session.turn(session, sent.turnId))
          assert.strictEqual(outcome, "succeeded")
          const turn = yield* Session.turn(session, sent.turnId)
          assert.strictEqual(turn.turnId, sent.turnId)
          assert.strictEqual(stateAs(yield* within("Turn.result", Turn.result(turn)), "Completed").text, GREETING)
        })))

    it.effect("a turn queued behind a blocked one is found at once, starts after it ends and completes", () =>
      withModel(greeterOrLocator(), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const blocked = stateAs(yield* within("the first turn", Session.run(session, WHERE)), "Blocked")
          assert.deepStrictEqual(kinds(blocked.callbacks), ["approval"])
          const first = yield* Session.turn(session, blocked.turnId)
          const sent = yield* Session.sendMessage(session, HELLO)
          // The first turn still waits on its approval: the second is queued, and already a turn of the session.
          const outcome = yield* outcomeOf(Session.turn(session, sent.turnId))
          assert.strictEqual(outcome, "succeeded")
          const queued = yield* Session.turn(session, sent.turnId)
          assert.strictEqual(queued.turnId, sent.turnId)
          yield* Turn.answer(first, blocked.callbacks[0].id, new Answer.DenyApproval({ reason: "not now" }))
          const firstState = yield* within("the first turn's result", Turn.result(first, { after: blocked }))
          assert.strictEqual(stateAs(firstState, "Completed").text, NO_LOCATION)
          const secondState = yield* within("the queued turn's result", Turn.result(queued))
          assert.strictEqual(stateAs(secondState, "Completed").text, GREETING)
          // The queued turn started after the first one ended.
          const firstLog = yield* within("the first turn's log", logOf(first))
          const secondLog = yield* within("the queued turn's log", logOf(queued))
          const firstEnded = ofTag(firstLog, "TurnEnded")[0]
          const secondStarted = ofTag(secondLog, "TurnStarted")
          assert.strictEqual(secondStarted.length, 1)
          assert.strictEqual(secondStarted[0].input, HELLO)
          assert.isTrue(secondStarted[0].seq > firstEnded.seq, "the queued turn started after the first ended")
        })))
  })
}
