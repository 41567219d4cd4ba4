import { assert } from "@effect/vitest"
import { Answer } from "@parley/core"
import { TreeState } from "@parley/log"
import { callbackAt, oneStep, sessionAt, turnAt } from "./fixtures.js"
import type { Step } from "./spec.js"
import {
  answer,
  appends,
  callbackOf,
  calls,
  childCalls,
  contains,
  ev,
  final,
  nobody,
  nothing,
  owner,
  replies,
  rules,
  runningTurn,
  send,
  toolFinished
} from "./spec.js"

// A tool call's way, as the model's step hands it over: the policy allows, denies or asks; a client tool opens a
// client_tool callback; a runtime tool's start is recorded by the tree's owner only; a connector needs its source
// connected; the `agents_*` builtins change the tree; a step whose calls all have results calls the model again.

const spawn = { name: "agents_spawn", params: { agent: "researcher", task: "Look." } }
/** The root turn spawned the researcher (its session `sessionAt(4)`, running); the root's next step is in flight. */
const spawned: ReadonlyArray<Step> = [send("Research."), calls(spawn)]
/** ... and waits for it in `agents_wait`. */
const waiting: ReadonlyArray<Step> = [...spawned, calls("agents_wait")]

const stageOf = (state: TreeState.TreeState, index = 0) => runningTurn(state, "root")?.calls[index]?.stage._tag

rules("ModelStepDone", [
  {
    rule: "a client tool the policy allows: a client_tool callback, and the tree is blocked",
    given: [send("Where am I?")],
    when: calls("get_location"),
    then: appends(
      ev("ToolCallStarted", { toolId: "client.get_location" }),
      ev("CallbackOpened", { callback: callbackOf("client_tool") }),
      ev("TurnBlocked", { callbackIds: [callbackAt(4)] })
    )
  },
  {
    rule: "a tool the policy asks for: an approval",
    given: [send("Charge me.")],
    when: calls("charge"),
    then: appends("ToolCallStarted", ev("CallbackOpened", { callback: callbackOf("approval") }), "TurnBlocked")
  },
  {
    rule: "a tool the policy denies: a failed result, and the next step",
    given: [send("Delete everything.")],
    when: calls("delete_all"),
    then: appends(
      "ToolCallStarted",
      ev("ToolCallCompleted", { isFailure: true, result: contains("policy denies client.delete_all") }),
      ev("ModelStepStarted", { step: 1 })
    )
  },
  {
    rule: "a runtime tool the policy allows, decided by the owner: its start, under the owner's lease",
    given: [send("Rates?")],
    when: calls("fetch_rates"),
    then: appends("ToolCallStarted", ev("ToolExecutionStarted", { toolId: "client.fetch_rates", executor: owner }))
  },
  {
    rule: "a runtime tool the policy allows, decided without executor: the call waits for the owner",
    given: [send("Rates?")],
    when: calls("fetch_rates").by(nobody),
    then: appends("ToolCallStarted"),
    and: (state) => {
      assert.strictEqual(stageOf(state), "Started")
      assert.isFalse(TreeState.isBlocked(state), "a call waiting for its owner is not a blocked tree")
    }
  },
  {
    rule: "a tool the agent does not have: a failed result",
    given: [send("Fly.")],
    when: calls("fly"),
    then: appends(
      ev("ToolCallStarted", { toolId: "client.unknown", name: "fly" }),
      ev("ToolCallCompleted", { isFailure: true, result: contains("There is no tool named fly") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "the calls of a step go through the policy in the model's order",
    given: [send("Locate, then delete.")],
    when: calls("get_location", "delete_all"),
    then: appends("ToolCallStarted", "ToolCallStarted", "CallbackOpened", "ToolCallCompleted", "TurnBlocked")
  },
  {
    rule: "a connector's tool, its source not connected: a sign_in callback",
    given: [send("Mail?")],
    when: calls("gmail_latest_email"),
    then: appends(
      ev("ToolCallStarted", { toolId: "connector.gmail.latest_email" }),
      ev("CallbackOpened", { callback: callbackOf("sign_in") }),
      "TurnBlocked"
    )
  },
  {
    rule: "a connector's tool, its source connected: its start",
    given: [
      send("Mail?"),
      calls("gmail_latest_email"),
      answer(new Answer.SignInAnswer({ connected: ["gmail"] })),
      toolFinished(0, { subject: "Hi" })
    ],
    when: calls("gmail_latest_email"),
    then: appends("ToolCallStarted", ev("ToolExecutionStarted", { executor: owner }))
  },
  {
    rule: "agents_spawn by the owner: the subagent starts, and the call returns at once",
    given: [send("Research.")],
    when: calls(spawn),
    then: appends(
      "ToolCallStarted",
      ev("SubagentStarted", { childSessionId: sessionAt(4), childTurnId: turnAt(5), agent: "researcher" }),
      ev("TurnQueued", { sessionId: sessionAt(4), input: "Look." }),
      ev("TurnStarted", { sessionId: sessionAt(4) }),
      ev("ModelStepStarted", { sessionId: sessionAt(4), step: 0 }),
      ev("ToolCallCompleted", { isFailure: false, result: contains("started") }),
      ev("ModelStepStarted", { sessionId: "ses_spec", step: 1 })
    )
  },
  {
    rule: "agents_spawn decided without executor: the spawn waits for the owner",
    given: [send("Research.")],
    when: calls(spawn).by(nobody),
    then: appends("ToolCallStarted")
  },
  {
    rule: "agents_spawn of a subagent the agent does not declare: a failed result",
    given: [send("Research.")],
    when: calls({ name: "agents_spawn", params: { agent: "poet", task: "Rhyme." } }),
    then: appends(
      "ToolCallStarted",
      ev("ToolCallCompleted", { isFailure: true, result: contains("no subagent named poet") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "agents_spawn without a task: a failed result",
    given: [send("Research.")],
    when: calls({ name: "agents_spawn", params: { agent: "researcher" } }),
    then: appends(
      "ToolCallStarted",
      ev("ToolCallCompleted", { isFailure: true, result: contains(`needs a "task" string`) }),
      "ModelStepStarted"
    )
  },
  {
    rule: "agents_message to a running subagent: a turn queued in its session",
    given: spawned,
    when: calls({ name: "agents_message", params: { sessionId: sessionAt(4), message: "Also this." } }),
    then: appends(
      "ToolCallStarted",
      ev("TurnQueued", { sessionId: sessionAt(4), input: "Also this." }),
      ev("ToolCallCompleted", { isFailure: false }),
      "ModelStepStarted"
    )
  },
  {
    rule: "agents_message to a session that is not its subagent: a failed result",
    given: spawned,
    when: calls({ name: "agents_message", params: { sessionId: "ses_spec", message: "Me?" } }),
    then: appends(
      "ToolCallStarted",
      ev("ToolCallCompleted", { isFailure: true, result: contains("no subagent session ses_spec ") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "agents_interrupt of a running subagent: its turn is cancelled",
    given: spawned,
    when: calls({ name: "agents_interrupt", params: { sessionId: sessionAt(4) } }),
    then: appends(
      "ToolCallStarted",
      ev("TurnEnded", { sessionId: sessionAt(4), state: final("Cancelled") }),
      ev("SubagentEnded", { sessionId: "ses_spec", childSessionId: sessionAt(4) }),
      ev("ToolCallCompleted", { isFailure: false, result: contains("interrupted") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "agents_wait while a subagent runs: the call waits, and the tree is not blocked",
    given: spawned,
    when: calls("agents_wait"),
    then: appends("ToolCallStarted"),
    and: (state) => assert.isFalse(TreeState.isBlocked(state))
  },
  {
    rule: "agents_wait with no subagent: it returns at once",
    given: [send("Wait.")],
    when: calls("agents_wait"),
    then: appends("ToolCallStarted", ev("ToolCallCompleted", { isFailure: false, result: [] }), "ModelStepStarted")
  },
  {
    rule: "a subagent waits on its callback while its parent waits in agents_wait: TurnBlocked",
    given: waiting,
    when: childCalls("lookup"),
    then: appends(
      ev("ToolCallStarted", { sessionId: sessionAt(4) }),
      ev("CallbackOpened", { sessionId: sessionAt(4), callback: callbackOf("client_tool") }),
      ev("TurnBlocked", { sessionId: "ses_spec" })
    )
  },
  {
    rule: "the subagent's answer ends its turn, and the agents_wait waiting for it",
    given: waiting,
    when: replies("Found it.", "child"),
    then: appends(
      ev("MessageCompleted", { sessionId: sessionAt(4) }),
      ev("TurnEnded", { sessionId: sessionAt(4), state: final("Completed") }),
      ev("SubagentEnded", { sessionId: "ses_spec", childSessionId: sessionAt(4) }),
      ev("ToolCallCompleted", { name: "agents_wait", isFailure: false, result: contains("Found it.") }),
      ev("ModelStepStarted", { sessionId: "ses_spec", step: 2 })
    )
  }
])

rules("ToolFinished", [
  {
    rule: "the result of a started runtime tool: the step's calls all have results, the next step",
    given: [send("Rates?"), calls("fetch_rates")],
    when: toolFinished(0, { eur: 1 }),
    then: appends(
      ev("ToolCallCompleted", { isFailure: false, result: { eur: 1 } }),
      ev("ModelStepStarted", { step: 1 })
    )
  },
  {
    rule: "a tool error: the model sees it",
    given: [send("Rates?"), calls("fetch_rates")],
    when: toolFinished(0, "timeout", { isFailure: true }),
    then: appends(ev("ToolCallCompleted", { isFailure: true, result: "timeout" }), "ModelStepStarted")
  },
  {
    rule: "one result of two: the step waits for the other",
    given: [send("Rates?"), calls("fetch_rates", "fetch_rates")],
    when: toolFinished(1, { eur: 1 }),
    then: appends("ToolCallCompleted")
  },
  {
    rule: "the last allowed step's results: maxSteps reached, the turn fails",
    agent: oneStep,
    given: [send("Rates?"), calls("fetch_rates")],
    when: toolFinished(0, { eur: 1 }),
    then: appends("ToolCallCompleted", ev("TurnEnded", { state: final("Failed", "StepLimitReached") }))
  },
  {
    rule: "a result for a call not started (it waits on its approval)",
    given: [send("Charge me."), calls("charge")],
    when: toolFinished(0, "charged"),
    then: nothing
  },
  {
    rule: "a result for a call that has its result",
    given: [send("Delete."), calls("delete_all", "fetch_rates")],
    when: toolFinished(0, "deleted"),
    then: nothing
  },
  {
    rule: "a result for a call the turn does not have",
    given: [send("Rates?"), calls("fetch_rates")],
    when: toolFinished(0, "?", { toolCallId: "call_unknown" }),
    then: nothing
  }
])
