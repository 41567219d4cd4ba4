import { assert, describe, it } from "@effect/vitest"
import { Answer, ParleyError } from "@parley/core"
import { TreeState } from "@parley/log"
import { callbackAt, minutesAfter, sessionAt, shadowing, treeId, turnAt } from "./fixtures.js"
import type { Step } from "./spec.js"
import {
  answer,
  appends,
  callbackOf,
  calls,
  cancel,
  check,
  childCalls,
  contains,
  ev,
  expire,
  latest,
  nobody,
  nothing,
  open,
  owner,
  rejects,
  rules,
  runningTurn,
  send,
  workFails
} from "./spec.js"

// Answers: what each kind of callback takes, what an answer moves on, and every reason an answer is refused (nothing is
// appended then — except the expiry of a callback whose deadline passed). Deadlines: one hour after the callback opened.

const allow = new Answer.AllowApproval()
const deny = new Answer.DenyApproval({ reason: "too much" })
const lyon = Answer.ClientToolResult.success({ city: "Lyon" })
const connected = new Answer.SignInAnswer({ connected: ["gmail"] })

/** The root turn waits on the approval `callbackAt(4)` of a call to `charge` (a runtime tool). */
const askedToCharge: ReadonlyArray<Step> = [send("Charge me."), calls("charge")]
/** ... of a call to `send_email` (a client tool). */
const askedToEmail: ReadonlyArray<Step> = [send("Email Bob."), calls("send_email")]
/** The root turn waits on the client_tool callback of `get_location`. */
const locating: ReadonlyArray<Step> = [send("Where am I?"), calls("get_location")]
/** The root turn waits on the sign_in callback of `gmail`. */
const signingIn: ReadonlyArray<Step> = [send("Mail?"), calls("gmail_latest_email")]
/** The researcher (`sessionAt(4)`) waits on the client_tool callback of `lookup`; its parent waits in agents_wait. */
const childLooking: ReadonlyArray<Step> = [
  send("Research."),
  calls({ name: "agents_spawn", params: { agent: "researcher", task: "Look." } }),
  calls("agents_wait"),
  childCalls("lookup")
]

const late = minutesAfter(61)
const defect = new ParleyError.ToolFailure({ module: "Engine", method: "runTool", toolId: "client.charge" })

rules("Answer", [
  {
    rule: "AllowApproval of a runtime tool, by the owner: the decision and the start in one append",
    given: askedToCharge,
    when: answer(allow),
    then: appends(
      ev("CallbackResolved", { callbackId: callbackAt(4), resolution: "answered", answer: allow }),
      ev("ToolExecutionStarted", { executor: owner })
    )
  },
  {
    rule: "AllowApproval decided without executor: the decision alone; the call waits for the owner",
    given: askedToCharge,
    when: answer(allow).by(nobody),
    then: appends(ev("CallbackResolved", { resolution: "answered" })),
    and: (state) => {
      assert.strictEqual(runningTurn(state, "root")?.calls[0]?.stage._tag, "Callback")
      assert.isFalse(TreeState.isBlocked(state))
    }
  },
  {
    rule: "DenyApproval: the call does not run, the model is told why",
    given: askedToCharge,
    when: answer(deny),
    then: appends(
      "CallbackResolved",
      ev("ToolCallCompleted", { isFailure: true, result: contains("denied the call to charge: too much") }),
      ev("ModelStepStarted", { step: 1 })
    )
  },
  {
    rule: "AllowApproval of a client tool: its client_tool callback opens",
    given: askedToEmail,
    when: answer(allow),
    then: appends("CallbackResolved", ev("CallbackOpened", { callback: callbackOf("client_tool") }), "TurnBlocked")
  },
  {
    rule: "a ClientToolResult matching the tool's success schema: the call's result",
    given: locating,
    when: answer(lyon),
    then: appends(
      "CallbackResolved",
      ev("ToolCallCompleted", { isFailure: false, result: { city: "Lyon" } }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a ClientToolResult that is a tool error: not checked against the success schema",
    given: locating,
    when: answer(Answer.ClientToolResult.failure("GPS off")),
    then: appends(
      "CallbackResolved",
      ev("ToolCallCompleted", { isFailure: true, result: "GPS off" }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a SignInAnswer connecting the source, by the owner: the source is connected, the tool starts",
    given: signingIn,
    when: answer(connected),
    then: appends("CallbackResolved", ev("ToolExecutionStarted", { executor: owner })),
    and: (state) => assert.deepStrictEqual(TreeState.session(state, treeId)?.connected, ["gmail"])
  },
  {
    rule: "a SignInAnswer connecting the source, without executor: the tool waits for the owner",
    given: signingIn,
    when: answer(connected).by(nobody),
    then: appends("CallbackResolved")
  },
  {
    rule: "a SignInAnswer denying the source: the tool does not run, the model is told",
    given: signingIn,
    when: answer(new Answer.SignInAnswer({ denied: ["gmail"] })),
    then: appends(
      "CallbackResolved",
      ev("ToolCallCompleted", { isFailure: true, result: contains("denied the sign-in to gmail") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a subagent's callback answered in its session: the subagent goes on",
    given: childLooking,
    when: answer(Answer.ClientToolResult.success("found")),
    then: appends(
      ev("CallbackResolved", { sessionId: sessionAt(4) }),
      ev("ToolCallCompleted", { sessionId: sessionAt(4) }),
      ev("ModelStepStarted", { sessionId: sessionAt(4), step: 1 })
    )
  },
  {
    rule: "a subagent's callback answered through the root session's turn",
    given: childLooking,
    when: answer(Answer.ClientToolResult.success("found"), open(0), { sessionId: treeId, runningTurnOf: "root" }),
    then: appends(ev("CallbackResolved", { sessionId: sessionAt(4) }), "ToolCallCompleted", "ModelStepStarted")
  },
  {
    rule: "an answer a minute before the deadline",
    given: askedToCharge,
    when: answer(allow).at(minutesAfter(59)),
    then: appends("CallbackResolved", "ToolExecutionStarted")
  },
  // ----- refused: nothing is appended -----
  {
    rule: "a ClientToolResult to an approval",
    given: askedToCharge,
    when: answer(lyon),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "an AllowApproval to a client tool call",
    given: locating,
    when: answer(allow),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "a SignInAnswer to an approval",
    given: askedToCharge,
    when: answer(connected),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "a client tool result that does not match the tool's success schema",
    given: locating,
    when: answer(Answer.ClientToolResult.success({ town: "Lyon" })),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "a subagent's client tool result, checked against the subagent's tool",
    given: childLooking,
    when: answer(allow, open(0), { sessionId: treeId, runningTurnOf: "root" }),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "a SignInAnswer omitting the requested source",
    given: signingIn,
    when: answer(new Answer.SignInAnswer({})),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "a SignInAnswer naming a source that was not requested",
    given: signingIn,
    when: answer(new Answer.SignInAnswer({ connected: ["gmail", "slack"] })),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "a SignInAnswer naming the source both connected and denied",
    given: signingIn,
    when: answer(new Answer.SignInAnswer({ connected: ["gmail"], denied: ["gmail"] })),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "no such callback",
    given: askedToCharge,
    when: answer(allow, open(0), { callbackId: "cb_unknown" }),
    then: rejects("CallbackNotOpen")
  },
  {
    rule: "a callback that expired",
    given: [...askedToCharge, expire().at(late)],
    when: answer(allow, latest).at(late),
    then: rejects("CallbackNotOpen")
  },
  {
    rule: "a callback closed when its turn ended (turn_ended)",
    given: [...askedToCharge, workFails(defect)],
    when: answer(allow, latest),
    then: rejects("CallbackNotOpen")
  },
  {
    rule: "a callback of a cancelled turn (cancelled)",
    given: [...askedToCharge, cancel()],
    when: answer(allow, latest),
    then: rejects("CallbackNotOpen")
  },
  {
    rule: "a callback that belongs to another turn of the session",
    given: [...askedToCharge, send("Next.")],
    when: answer(allow, open(0), { turnId: turnAt(6) }),
    then: rejects("CallbackNotOpen")
  },
  {
    rule: "an approval already answered",
    given: [...askedToCharge, answer(allow)],
    when: answer(allow, latest),
    then: rejects("CallbackAlreadyAnswered")
  },
  {
    rule: "an answer with the client's request id: the id is recorded with the resolution",
    given: askedToCharge,
    when: answer(allow, open(0), { requestId: "req-1" }),
    then: appends(
      ev("CallbackResolved", { callbackId: callbackAt(4), resolution: "answered", answer: allow, requestId: "req-1" }),
      ev("ToolExecutionStarted", { executor: owner })
    )
  },
  {
    rule: "an answer repeated with the request id of the one that won (a retry): accepted, nothing appended",
    given: [...askedToCharge, answer(allow, open(0), { requestId: "req-1" })],
    when: answer(deny, latest, { requestId: "req-1" }),
    then: nothing
  },
  {
    rule: "an approval already answered, asked again with another request id",
    given: [...askedToCharge, answer(allow, open(0), { requestId: "req-1" })],
    when: answer(allow, latest, { requestId: "req-2" }),
    then: rejects("CallbackAlreadyAnswered")
  },
  {
    rule: "an approval already answered without a request id, asked again with one",
    given: [...askedToCharge, answer(allow)],
    when: answer(allow, latest, { requestId: "req-1" }),
    then: rejects("CallbackAlreadyAnswered")
  },
  {
    rule: "a request id does not open a callback again that its cancelled turn closed",
    given: [...askedToCharge, cancel()],
    when: answer(allow, latest, { requestId: "req-1" }),
    then: rejects("CallbackNotOpen")
  },
  {
    rule: "an approval already answered elsewhere, its call waiting for the owner",
    given: [...askedToCharge, answer(allow).by(nobody)],
    when: answer(deny, latest),
    then: rejects("CallbackAlreadyAnswered")
  },
  {
    rule: "a session the tree does not have",
    given: askedToCharge,
    when: answer(allow, open(0), { sessionId: "ses_unknown" }),
    then: rejects("SessionNotFound")
  },
  {
    rule: "a turn the session does not have",
    given: askedToCharge,
    when: answer(allow, open(0), { turnId: "turn_unknown" }),
    then: rejects("TurnNotFound")
  },
  {
    rule: "a turn of another session",
    given: childLooking,
    when: answer(Answer.ClientToolResult.success("found"), open(0), { runningTurnOf: "root" }),
    then: rejects("TurnNotFound")
  },
  // ----- deadlines -----
  {
    rule: "an answer after the deadline: refused, and the expiry is appended",
    given: askedToCharge,
    when: answer(allow).at(late),
    then: rejects(
      "CallbackNotOpen",
      ev("CallbackResolved", { resolution: "expired" }),
      ev("ToolCallCompleted", { isFailure: true, result: contains("expired before anyone answered") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "an answer at the deadline itself: too late",
    given: askedToCharge,
    when: answer(allow).at(minutesAfter(60)),
    then: rejects(
      "CallbackNotOpen",
      ev("CallbackResolved", { resolution: "expired" }),
      "ToolCallCompleted",
      "ModelStepStarted"
    )
  },
  {
    rule: "an answer of the wrong kind after the deadline: the expiry all the same",
    given: locating,
    when: answer(allow).at(late),
    then: rejects(
      "CallbackNotOpen",
      ev("CallbackResolved", { resolution: "expired" }),
      "ToolCallCompleted",
      "ModelStepStarted"
    )
  }
])

rules("Expire", [
  {
    rule: "an approval past its deadline: the call fails, the model is told",
    given: askedToCharge,
    when: expire().at(late),
    then: appends(
      ev("CallbackResolved", { callbackId: callbackAt(4), resolution: "expired" }),
      ev("ToolCallCompleted", { isFailure: true, result: contains("approval request for charge expired") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a client tool call past its deadline",
    given: locating,
    when: expire().at(late),
    then: appends(
      ev("CallbackResolved", { resolution: "expired" }),
      ev("ToolCallCompleted", { result: contains("call to the client tool get_location expired") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a sign-in past its deadline (sign-ins wait as long as approvals)",
    given: signingIn,
    when: expire().at(late),
    then: appends(
      ev("CallbackResolved", { resolution: "expired" }),
      ev("ToolCallCompleted", { result: contains("sign-in to gmail expired") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a subagent's callback past its deadline: the subagent goes on",
    given: childLooking,
    when: expire().at(late),
    then: appends(
      ev("CallbackResolved", { sessionId: sessionAt(4), resolution: "expired" }),
      ev("ToolCallCompleted", { sessionId: sessionAt(4), isFailure: true }),
      ev("ModelStepStarted", { sessionId: sessionAt(4) })
    )
  },
  {
    rule: "an open callback before its deadline",
    given: askedToCharge,
    when: expire().at(minutesAfter(59)),
    then: nothing
  },
  {
    rule: "a callback already answered",
    given: [...askedToCharge, answer(allow)],
    when: expire(latest).at(late),
    then: nothing
  },
  {
    rule: "a callback the tree does not have",
    given: askedToCharge,
    when: expire(open(0), "cb_unknown").at(late),
    then: nothing
  }
])

// Found writing these rules (issue 17): a subagent's client tool result answered through the root session was checked
// against the root agent's tool of the same id, not the subagent's — the tool whose callback it is, and whose success
// schema `TreeState.answerSchema` publishes. Fixed in `validateAnswer`: the callback's session is looked up first.
describe("Answer: a subagent's tool that shares its id with the root's", () => {
  const childLookingUp: ReadonlyArray<Step> = [
    send("Research."),
    calls({ name: "agents_spawn", params: { agent: "researcher", task: "Look." } }),
    calls("agents_wait"),
    childCalls("lookup")
  ]
  const rootShaped = Answer.ClientToolResult.success({ a: 1 })
  it("in the subagent's session, a result of the root's shape is refused", () =>
    check("Answer", {
      rule: "",
      agent: shadowing,
      given: childLookingUp,
      when: answer(rootShaped),
      then: rejects("AnswerMismatch")
    }))
  it("through the root session, a result of the root's shape is refused as well", () =>
    check("Answer", {
      rule: "",
      agent: shadowing,
      given: childLookingUp,
      when: answer(rootShaped, open(0), { sessionId: treeId, runningTurnOf: "root" }),
      then: rejects("AnswerMismatch")
    }))
})
