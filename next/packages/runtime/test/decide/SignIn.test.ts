import { assert } from "@effect/vitest"
import { Answer } from "@parley/core"
import { mailer } from "./fixtures.js"
import {
  answer,
  appends,
  callbackOf,
  calls,
  contains,
  ev,
  nothing,
  owner,
  rules,
  runningTurn,
  send,
  Step,
  toolFinished
} from "./spec.js"

// A connector whose server asks for an authorization mid-call (an MCP server's 401): the call waits on a sign-in that
// carries the authorization URL, and runs again once the answer connected the source.

const url =
  "https://auth.example.com/authorize?client_id=c1&code_challenge=x&code_challenge_method=S256&scope=mail.send"

/** The running turn's call `index` met a 401: the connector asks for a sign-in. */
const needsSignIn = (index = 0) =>
  new Step((state) => {
    const turn = runningTurn(state, "root")
    return {
      _tag: "ToolNeedsSignIn",
      turnId: turn!.turnId,
      toolCallId: turn?.calls[index]?.toolCallId ?? "call_none",
      source: "mail",
      authorizationUrl: url,
      scopes: ["mail.send"]
    }
  })

const send_ = "mail_send_message"

rules("ModelStepDone", [
  {
    rule: "a connector that signs in on its server's demand: its call starts without a sign-in",
    agent: mailer,
    given: [send("Send it.")],
    when: calls(send_),
    then: appends(
      ev("ToolCallStarted", { toolId: "connector.mail.send_message" }),
      ev("ToolExecutionStarted", { executor: owner })
    )
  }
])

rules("ToolNeedsSignIn", [
  {
    rule: "the server asked for an authorization: a sign_in callback with its URL and scopes, and the tree is blocked",
    agent: mailer,
    given: [send("Send it."), calls(send_)],
    when: needsSignIn(),
    then: appends(ev("CallbackOpened", { callback: callbackOf("sign_in") }), "TurnBlocked"),
    and: (_state, events) => {
      const opened = events[0]
      assert.strictEqual(opened._tag, "CallbackOpened")
      if (opened._tag !== "CallbackOpened" || opened.callback._tag !== "OpenSignIn") return
      const [request] = opened.callback.requests
      assert.deepStrictEqual({ ...request }, {
        id: "mail",
        source: "mail",
        toolCallId: request.toolCallId,
        authorizationUrl: url,
        scopes: ["mail.send"]
      })
    }
  },
  {
    rule: "a call that is not running (it finished): nothing",
    agent: mailer,
    given: [send("Send it."), calls(send_), toolFinished(0, "Sent.")],
    when: needsSignIn(),
    then: nothing
  }
])

rules("Answer", [
  {
    rule: "the sign-in the server asked for, connected: the same call starts again",
    agent: mailer,
    given: [send("Send it."), calls(send_), needsSignIn()],
    when: answer(new Answer.SignInAnswer({ connected: ["mail"] })),
    then: appends("CallbackResolved", ev("ToolExecutionStarted", { executor: owner }))
  },
  {
    rule: "the sign-in the server asked for, denied: a failed result the model explains",
    agent: mailer,
    given: [send("Send it."), calls(send_), needsSignIn()],
    when: answer(new Answer.SignInAnswer({ denied: ["mail"] })),
    then: appends(
      "CallbackResolved",
      ev("ToolCallCompleted", { isFailure: true, result: contains("denied the sign-in to mail") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "must reconnect, and the user denies: a failed result, though the source was connected before",
    agent: mailer,
    given: [
      send("Send it."),
      calls(send_),
      needsSignIn(),
      answer(new Answer.SignInAnswer({ connected: ["mail"] })),
      needsSignIn()
    ],
    when: answer(new Answer.SignInAnswer({ denied: ["mail"] })),
    then: appends(
      "CallbackResolved",
      ev("ToolCallCompleted", { isFailure: true, result: contains("denied the sign-in to mail") }),
      "ModelStepStarted"
    )
  }
])
