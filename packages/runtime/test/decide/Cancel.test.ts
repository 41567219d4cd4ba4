import { lead, sessionAt, turnAt } from "./fixtures.js"
import type { Step } from "./spec.js"
import {
  appends,
  calls,
  cancel,
  cancelOf,
  childCalls,
  contains,
  ev,
  final,
  nobody,
  nothing,
  rejects,
  replies,
  rules,
  send
} from "./spec.js"

// A cancel ends a session's turns (running and queued) and every subagent's under it, the deepest first, so each parent
// sees its children end (`SubagentEnded`); open callbacks close `cancelled`, unfinished calls get a failed result.

const spawn = (agent: string) => ({ name: "agents_spawn", params: { agent, task: "Go." } })
/** The root waits in agents_wait for the researcher (`sessionAt(4)`), whose first step is in flight. */
const waiting: ReadonlyArray<Step> = [send("Research."), calls(spawn("researcher")), calls("agents_wait")]
/** lead → manager (`sessionAt(4)`) → researcher: every turn's model step in flight. */
const twoLevels: ReadonlyArray<Step> = [send("Organise."), calls(spawn("manager")), childCalls(spawn("researcher"))]

rules("Cancel", [
  {
    rule: "a running turn waiting on an approval: the approval is cancelled, the call fails, the turn ends",
    given: [send("Charge me."), calls("charge")],
    when: cancel(),
    then: appends(
      ev("CancelRequested", { turnId: turnAt(0) }),
      ev("CallbackResolved", { resolution: "cancelled" }),
      ev("ToolCallCompleted", { isFailure: true, result: contains("The call to charge was cancelled.") }),
      ev("TurnEnded", { state: final("Cancelled") })
    )
  },
  {
    rule: "a running turn and a queued one: both end, the queued one never starts",
    given: [send("First."), send("Second.")],
    when: cancel(),
    then: appends(
      "CancelRequested",
      ev("TurnEnded", { turnId: turnAt(0), state: final("Cancelled") }),
      ev("TurnEnded", { turnId: turnAt(3), state: final("Cancelled") })
    )
  },
  {
    rule: "a cancel decided without executor is the same cancel",
    given: [send("Hello.")],
    when: cancel().by(nobody),
    then: appends("CancelRequested", "TurnEnded")
  },
  {
    rule: "an idle session",
    given: [send("Hello."), replies("Hi!")],
    when: cancel(),
    then: nothing
  },
  {
    rule: "a session the tree does not have",
    when: cancelOf("ses_unknown"),
    then: rejects("SessionNotFound")
  },
  {
    rule: "a tree with a running subagent: the subagent ends first, then its parent",
    given: waiting,
    when: cancel(),
    then: appends(
      ev("CancelRequested", { sessionId: "ses_spec" }),
      ev("TurnEnded", { sessionId: sessionAt(4), state: final("Cancelled") }),
      ev("SubagentEnded", { sessionId: "ses_spec", childSessionId: sessionAt(4), state: final("Cancelled") }),
      ev("ToolCallCompleted", { name: "agents_wait", isFailure: true }),
      ev("TurnEnded", { sessionId: "ses_spec", state: final("Cancelled") })
    )
  },
  {
    rule: "a tree two levels deep: the deepest first, each parent sees its child end",
    agent: lead,
    given: twoLevels,
    when: cancel(),
    then: appends(
      "CancelRequested",
      ev("TurnEnded", { sessionId: sessionAt(11) }),
      ev("SubagentEnded", { sessionId: sessionAt(4), childSessionId: sessionAt(11) }),
      ev("TurnEnded", { sessionId: sessionAt(4) }),
      ev("SubagentEnded", { sessionId: "ses_spec", childSessionId: sessionAt(4) }),
      ev("TurnEnded", { sessionId: "ses_spec" })
    )
  },
  {
    rule: "a subagent's session: its turn ends, the parent's agents_wait returns and the parent goes on",
    given: waiting,
    when: cancel("child"),
    then: appends(
      ev("CancelRequested", { sessionId: sessionAt(4) }),
      ev("TurnEnded", { sessionId: sessionAt(4), state: final("Cancelled") }),
      "SubagentEnded",
      ev("ToolCallCompleted", { name: "agents_wait", isFailure: false, result: contains("Cancelled") }),
      ev("ModelStepStarted", { sessionId: "ses_spec" })
    )
  },
  {
    rule: "an idle root whose subagent still runs: the subagent ends, under the turn that started it",
    given: [send("Research."), calls(spawn("researcher")), replies("Started it.")],
    when: cancel(),
    then: appends(
      ev("CancelRequested", { turnId: turnAt(0) }),
      ev("TurnEnded", { sessionId: sessionAt(4) }),
      ev("SubagentEnded", { sessionId: "ses_spec", turnId: turnAt(0) })
    )
  }
])
