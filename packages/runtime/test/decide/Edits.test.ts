import { assert } from "@effect/vitest"
import type { Ids } from "@parley/core"
import { AgentSpec, Answer, Permissions, ToolSpec } from "@parley/core"
import { TreeState } from "@parley/log"
import { answer, appends, callbackOf, calls, ev, owner, rejects, rules, runningTurn, send } from "./spec.js"

// Approvals that edit their call (`AllowApproval({ arguments })`): checked against the tool's parameters like the
// model's call, recorded on the resolution, the call then goes on with them and the conversation shows them.

const params = {
  type: "object",
  properties: { to: { type: "string" }, body: { type: "string" } },
  required: ["to", "body"],
  additionalProperties: false
}

const sendEmail = new ToolSpec.ToolSpec({
  id: "client.send_email" as Ids.ToolId,
  name: "send_email",
  description: "Sends an email.",
  parameters: params
})
const transfer = new ToolSpec.ToolSpec({
  id: "client.transfer" as Ids.ToolId,
  name: "transfer",
  description: "Moves money.",
  parameters: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  runsIn: "runtime"
})

const mailer = AgentSpec.make({
  name: "mailer",
  model: "scripted",
  instructions: "Mail.",
  tools: [sendEmail, transfer],
  permissions: new Permissions.PermissionPolicy({
    default: "ask",
    rules: [new Permissions.PermissionRule({ tools: ["client.transfer"], decision: "ask", editable: false })]
  })
})

const asked = [send("Tell everyone."), calls({ name: "send_email", params: { to: "all@x.io", body: "Lunch." } })]
const toTeam = { to: "team@x.io", body: "Lunch." }
const edited = new Answer.AllowApproval({ arguments: toTeam })

const callOf = (state: TreeState.TreeState) => runningTurn(state, "root")?.calls[0]

rules("Answer", [
  {
    rule: "an approval with edited arguments that fit the tool: recorded, and the call goes on with them",
    agent: mailer,
    given: asked,
    when: answer(edited),
    then: appends(
      ev("CallbackResolved", { resolution: "answered", answer: edited }),
      ev("CallbackOpened", { callback: callbackOf("client_tool") }),
      "TurnBlocked"
    ),
    and: (state, events) => {
      const opened = events[1]
      assert.deepStrictEqual(
        opened._tag === "CallbackOpened" && opened.callback._tag === "OpenClientToolCall"
          ? opened.callback.request.arguments
          : undefined,
        toTeam
      )
      assert.deepStrictEqual(callOf(state)?.arguments, toTeam)
      // The model will see its call as made with the approved arguments.
      const conversation = TreeState.session(state, state.treeId)?.conversation ?? []
      const assistant = conversation.find((message) => message.role === "assistant")
      assert.deepStrictEqual(assistant?.role === "assistant" ? assistant.toolCalls[0].params : undefined, toTeam)
    }
  },
  {
    rule: "an approval with edited arguments that do not fit the tool's parameters",
    agent: mailer,
    given: asked,
    when: answer(new Answer.AllowApproval({ arguments: { to: 42 } })),
    then: rejects("AnswerMismatch"),
    and: (state, _events, reply) => {
      assert.strictEqual(state.open.length, 1, "the approval is still open")
      assert.deepStrictEqual(callOf(state)?.arguments, { to: "all@x.io", body: "Lunch." })
      if (reply._tag === "Failure") {
        assert.include(reply.failure.message, "the edited arguments do not match the parameters of client.send_email")
        assert.include(reply.failure.message, "/to must be string")
        assert.include(reply.failure.message, "must have required property 'body'")
      }
    }
  },
  {
    rule: "an approval with edited arguments of a tool whose rule says editable: false",
    agent: mailer,
    given: [send("Pay."), calls({ name: "transfer", params: { amount: 10 } })],
    when: answer(new Answer.AllowApproval({ arguments: { amount: 1000 } })),
    then: rejects("AnswerMismatch"),
    and: (_state, _events, reply) => {
      if (reply._tag === "Failure") {
        assert.include(reply.failure.message, "does not let calls of client.transfer be edited")
      }
    }
  },
  {
    rule: "a plain approval of a tool whose rule says editable: false",
    agent: mailer,
    given: [send("Pay."), calls({ name: "transfer", params: { amount: 10 } })],
    when: answer(new Answer.AllowApproval()),
    then: appends("CallbackResolved", ev("ToolExecutionStarted", { executor: owner }))
  }
])
