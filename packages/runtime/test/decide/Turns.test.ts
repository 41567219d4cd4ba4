import { assert } from "@effect/vitest"
import { Answer, ParleyError, TurnEvent } from "@parley/core"
import { TreeState } from "@parley/log"
import { HashMap, Result } from "effect"
import { oneStep, treeId, turnAt } from "./fixtures.js"
import {
  answer,
  appends,
  calls,
  contains,
  ev,
  final,
  modelStep,
  nobody,
  nothing,
  rejects,
  replies,
  rules,
  send,
  sendTo,
  sendTraced,
  sendWithId,
  stepFails,
  workFails
} from "./spec.js"

// A turn's life: queued, started (its first model step), each model step's result, and its end.

const modelFailure = new ParleyError.ModelFailure({ module: "Engine", method: "modelStep", model: "scripted" })
const defect = new ParleyError.ToolFailure({ module: "Engine", method: "runTool", toolId: "client.charge" })

rules("SendMessage", [
  {
    rule: "a message to a free session",
    when: send("Hello."),
    then: appends(
      ev("TurnQueued", { turnId: turnAt(0), input: "Hello." }),
      ev("TurnStarted", { turnId: turnAt(0) }),
      ev("ModelStepStarted", { messageId: "msg_2", step: 0 })
    ),
    // The reply names the turn, and the cursor its events start from.
    and: (_state, _events, reply) => {
      const ref = Result.getOrUndefined(reply)
      assert.deepStrictEqual([ref?.sessionId, ref?.turnId, ref?.cursor], [treeId, turnAt(0), 0])
    }
  },
  {
    rule: "a message while a turn runs: it waits its turn",
    given: [send("First.")],
    when: send("Second."),
    then: appends(ev("TurnQueued", { turnId: turnAt(3), input: "Second." })),
    and: (state) => assert.deepStrictEqual(TreeState.session(state, treeId)?.queue.map(String), [turnAt(3)])
  },
  {
    rule: "a traced message: its TurnQueued records the turn span's context, and the turn keeps it",
    when: sendTraced("Hello.", { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" }),
    then: appends(
      ev("TurnQueued", {
        turnId: turnAt(0),
        trace: new TurnEvent.TraceContext({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" })
      }),
      "TurnStarted",
      "ModelStepStarted"
    ),
    and: (state) =>
      assert.deepStrictEqual(
        { ...TreeState.turn(state, turnAt(0))?.trace },
        { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" }
      )
  },
  {
    rule: "a message to a session the tree does not have",
    when: sendTo("ses_unknown", "Hello?"),
    then: rejects("SessionNotFound")
  },
  {
    rule: "a message with a request id: its TurnQueued records the id",
    when: sendWithId("Hello.", "req-1"),
    then: appends(ev("TurnQueued", { turnId: turnAt(0), requestId: "req-1" }), "TurnStarted", "ModelStepStarted"),
    and: (state) => assert.strictEqual(TreeState.requested(state, treeId, "req-1")?.turnId, turnAt(0))
  },
  {
    rule: "the same request id again (a retry): the same turn and cursor, nothing queued",
    given: [sendWithId("Hello.", "req-1")],
    when: sendWithId("Hello.", "req-1"),
    then: nothing,
    and: (state, _events, reply) => {
      const ref = Result.getOrUndefined(reply)
      assert.deepStrictEqual([ref?.sessionId, ref?.turnId, ref?.cursor], [treeId, turnAt(0), 0])
      assert.strictEqual(HashMap.size(state.turns), 1)
    }
  },
  {
    rule: "the same request id after its turn ended: still that turn, nothing queued",
    given: [sendWithId("Hello.", "req-1"), replies("Hi!"), send("Next."), replies("Done.")],
    when: sendWithId("Hello, again?", "req-1"),
    then: nothing,
    and: (_state, _events, reply) => assert.strictEqual(Result.getOrUndefined(reply)?.turnId, turnAt(0))
  },
  {
    rule: "another request id: another turn, queued behind the first",
    given: [sendWithId("First.", "req-1")],
    when: sendWithId("Second.", "req-2"),
    then: appends(ev("TurnQueued", { turnId: turnAt(3), input: "Second.", requestId: "req-2" })),
    and: (state, _events, reply) => {
      assert.strictEqual(Result.getOrUndefined(reply)?.turnId, turnAt(3))
      assert.deepStrictEqual(TreeState.session(state, treeId)?.queue.map(String), [turnAt(3)])
    }
  },
  {
    rule: "a request id is per session: the same id sent to a subagent queues its own turn",
    given: [
      sendWithId("Research.", "req-1"),
      calls({ name: "agents_spawn", params: { agent: "researcher", task: "Look." } })
    ],
    when: sendWithId("More.", "req-1", "child"),
    then: appends(ev("TurnQueued", { requestId: "req-1" }))
  },
  {
    rule: "a message to a subagent's session while its turn runs: it waits its turn",
    given: [send("Research."), calls({ name: "agents_spawn", params: { agent: "researcher", task: "Look." } })],
    when: send("More.", "child"),
    then: appends("TurnQueued")
  }
])

rules("ModelStepDone", [
  {
    rule: "text and no tool calls: the turn completes",
    given: [send("Hello.")],
    when: replies("Hi!"),
    then: appends(
      ev("MessageCompleted", { messageId: "msg_2", text: "Hi!" }),
      ev("TurnEnded", { state: final("Completed") })
    )
  },
  {
    rule: "the turn that ends frees its session: the next queued turn starts",
    given: [send("First."), send("Second.")],
    when: replies("Done."),
    then: appends(
      "MessageCompleted",
      ev("TurnEnded", { turnId: turnAt(0) }),
      ev("TurnStarted", { turnId: turnAt(3) }),
      ev("ModelStepStarted", { turnId: turnAt(3), step: 0 })
    )
  },
  {
    rule: "a result for a step no longer in flight (another messageId)",
    given: [send("Hello.")],
    when: modelStep({ text: "late" }, { messageId: "msg_old" }),
    then: nothing
  },
  {
    rule: "a result for a turn that ended",
    given: [send("Hello."), replies("Hi!")],
    when: modelStep({ text: "again" }, { messageId: "msg_2" }),
    then: nothing
  },
  {
    rule: "text and a tool call: the message, then the call",
    given: [send("Rates?")],
    when: modelStep({ text: "Let me look.", calls: ["fetch_rates"] }),
    then: appends(
      ev("MessageCompleted", { text: "Let me look." }),
      ev("ToolCallStarted", { toolId: "client.fetch_rates", name: "fetch_rates" }),
      "ToolExecutionStarted"
    )
  },
  {
    rule: "maxSteps reached: a step whose calls all have results fails the turn",
    agent: oneStep,
    given: [send("Delete.")],
    when: calls("delete_all"),
    then: appends(
      "ToolCallStarted",
      ev("ToolCallCompleted", { isFailure: true }),
      ev("TurnEnded", { state: final("Failed", "StepLimitReached") })
    )
  }
])

rules("ModelStepFailed", [
  {
    rule: "the step in flight failed: the turn fails",
    given: [send("Hello.")],
    when: stepFails(modelFailure),
    then: appends(ev("TurnEnded", { state: final("Failed", "ModelFailure") }))
  },
  {
    rule: "the step in flight failed: the next queued turn starts",
    given: [send("First."), send("Second.")],
    when: stepFails(modelFailure),
    then: appends("TurnEnded", ev("TurnStarted", { turnId: turnAt(3) }), "ModelStepStarted")
  },
  {
    rule: "a failure of a step no longer in flight",
    given: [send("Hello.")],
    when: stepFails(modelFailure, { messageId: "msg_old" }),
    then: nothing
  }
])

rules("WorkFailed", [
  {
    rule: "a running turn's work failed: its callbacks close (turn_ended), its calls fail, it ends",
    given: [send("Charge and locate."), calls("charge", "get_location")],
    when: workFails(defect),
    then: appends(
      ev("CallbackResolved", { resolution: "turn_ended" }),
      ev("CallbackResolved", { resolution: "turn_ended" }),
      ev("ToolCallCompleted", { isFailure: true, result: contains("its turn ended") }),
      ev("ToolCallCompleted", { isFailure: true, result: contains("its turn ended") }),
      ev("TurnEnded", { state: final("Failed", "ToolFailure") })
    )
  },
  {
    rule: "a started call of a failed turn gets a failed result",
    given: [send("Rates?"), calls("fetch_rates")],
    when: workFails(defect),
    then: appends(ev("ToolCallCompleted", { isFailure: true }), "TurnEnded")
  },
  {
    rule: "a turn that already ended",
    given: [send("Hello."), replies("Hi!")],
    when: workFails(defect).by(nobody),
    then: nothing
  },
  {
    rule: "an answered approval of a failed turn stays answered",
    given: [send("Charge."), calls("charge"), answer(new Answer.AllowApproval()).by(nobody)],
    when: workFails(defect),
    then: appends(ev("ToolCallCompleted", { isFailure: true }), "TurnEnded")
  }
])
