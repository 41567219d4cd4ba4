import { assert } from "@effect/vitest"
import { AgentSpec, Answer, Permissions, Principal } from "@parley/core"
import { TreeState } from "@parley/log"
import { assistant } from "./fixtures.js"
import type { Step as StepType } from "./spec.js"
import { answer, appends, calls, ev, rejects, rules, send, Step } from "./spec.js"

// Who may answer: a rule's `approvers` are copied to the approval it opens; an answer from a principal that holds
// none of their roles and is none of their principals is `NotAllowedToAnswer`, appends nothing and leaves the
// approval open. A program vouches for its own roles (`Client { roles }`); over HTTP only the key's roles count.

const finance = new Permissions.Approvers({ roles: ["finance"], principals: ["key_cfo00001", "alice"] })
const payments = AgentSpec.make({
  ...assistant,
  name: "payments",
  permissions: new Permissions.PermissionPolicy({
    default: "allow",
    rules: [new Permissions.PermissionRule({ tools: ["client.charge"], decision: "ask", approvers: finance })]
  })
})

const asked: ReadonlyArray<StepType> = [send("Charge me."), calls("charge")]

/** The open approval answered as `answeredBy`. */
const answerAs = (answeredBy: Principal.Principal | undefined, value: Answer.Answer = new Answer.AllowApproval()) => {
  const step = answer(value)
  return new Step((state) => ({ ...step.make(state), answeredBy }))
}

const stillOpen = (state: TreeState.TreeState) => assert.strictEqual(state.open.length, 1, "the approval is still open")

rules("ModelStepDone", [
  {
    rule: "the approval a rule with approvers opens lists them",
    agent: payments,
    given: [send("Charge me.")],
    when: calls("charge"),
    then: appends("ToolCallStarted", "CallbackOpened", "TurnBlocked"),
    and: (state) => {
      const record = TreeState.callback(state, state.open[0])
      assert.deepStrictEqual(
        record?.callback._tag === "OpenApproval" ? record.callback.request.approvers : undefined,
        finance
      )
    }
  }
])

rules("Answer", [
  {
    rule: "a program without the role: NotAllowedToAnswer, nothing appended",
    agent: payments,
    given: asked,
    when: answerAs(new Principal.Client({ label: "mallory", roles: ["sales"] })),
    then: rejects("NotAllowedToAnswer"),
    and: stillOpen
  },
  {
    rule: "an anonymous answer: NotAllowedToAnswer",
    agent: payments,
    given: asked,
    when: answerAs(undefined),
    then: rejects("NotAllowedToAnswer"),
    and: stillOpen
  },
  {
    rule: "a denial is an answer too: refused from a principal without the right",
    agent: payments,
    given: asked,
    when: answerAs(new Principal.Handler({ name: "auto-deny" }), new Answer.DenyApproval({ reason: "no" })),
    then: rejects("NotAllowedToAnswer"),
    and: stillOpen
  },
  {
    rule: "a program with the role answers",
    agent: payments,
    given: asked,
    when: answerAs(new Principal.Client({ label: "bob", roles: ["finance"] })),
    then: appends(
      ev("CallbackResolved", { answeredBy: new Principal.Client({ label: "bob", roles: ["finance"] }) }),
      "ToolExecutionStarted"
    )
  },
  {
    rule: "a principal named by label answers",
    agent: payments,
    given: asked,
    when: answerAs(new Principal.Client({ label: "alice" })),
    then: appends("CallbackResolved", "ToolExecutionStarted")
  },
  {
    rule: "an API key with the role answers",
    agent: payments,
    given: asked,
    when: answerAs(new Principal.ApiKey({ tenant: "acme", keyId: "key_0000beef", roles: ["finance"] })),
    then: appends("CallbackResolved", "ToolExecutionStarted")
  },
  {
    rule: "an API key named by its id answers",
    agent: payments,
    given: asked,
    when: answerAs(new Principal.ApiKey({ tenant: "acme", keyId: "key_cfo00001" })),
    then: appends("CallbackResolved", "ToolExecutionStarted")
  },
  {
    rule: "over HTTP, a client's claim is not the key's right: roles or a label claimed in onBehalfOf do not count",
    agent: payments,
    given: asked,
    when: answerAs(
      new Principal.ApiKey({
        tenant: "acme",
        keyId: "key_0000beef",
        onBehalfOf: new Principal.Client({ label: "alice", roles: ["finance"] })
      })
    ),
    then: rejects("NotAllowedToAnswer"),
    and: stillOpen
  },
  {
    rule: "without approvers on the rule, anyone who reaches the callback answers",
    given: asked,
    when: answerAs(new Principal.Client({ label: "mallory" })),
    then: appends("CallbackResolved", "ToolExecutionStarted")
  }
])
