import { assert } from "@effect/vitest"
import { AgentSpec, Answer, Permissions, Principal } from "@parley/core"
import { TreeState } from "@parley/log"
import { ArgumentCondition } from "@parley/policy"
import { assistant, callbackAt, charge, grantAt } from "./fixtures.js"
import type { Step } from "./spec.js"
import {
  answer,
  appends,
  callbackOf,
  calls,
  childCalls,
  ev,
  grantedElsewhere,
  owner,
  rejects,
  rules,
  send,
  Step as Command,
  toolFinished
} from "./spec.js"

// Remembered grants: an approval answered with `remember` becomes an `ApprovalGranted`; later calls of the same tool
// id in its scope are answered by it at once (the approval is on record, `answeredBy: Grant`), never past the policy;
// a revoked grant asks again.

const payer = AgentSpec.make({ name: "payer", instructions: "Pay.", tools: [charge] })
const boss = AgentSpec.make({ ...assistant, name: "boss", subagents: [payer] })

const allowFor = (remember: Answer.Remember) => new Answer.AllowApproval({ remember })
const charged: ReadonlyArray<Step> = [send("Charge me."), calls("charge")]
const granted = (remember: Answer.Remember): ReadonlyArray<Step> => [
  ...charged,
  answer(allowFor(remember)),
  toolFinished(0, { ok: true })
]
/** Then the model starts a payer subagent, which calls `charge` in its own session. */
const spawned = (remember: Answer.Remember): ReadonlyArray<Step> => [
  ...granted(remember),
  calls({ name: "agents_spawn", params: { agent: "payer", task: "Charge again." } })
]

const byGrant = (id: string) => new Principal.Grant({ id })
const revoke = (grantId: string) =>
  new Command((state) => ({
    _tag: "RevokeGrant",
    sessionId: state.treeId,
    grantId,
    revokedBy: new Principal.Client({ label: "ops" })
  }))

rules("Answer", [
  {
    rule: "an approval answered with remember: the answer, then the grant of its tool id, then the call goes on",
    given: charged,
    when: answer(allowFor("session")).by(owner),
    then: appends(
      "CallbackResolved",
      ev("ApprovalGranted", {
        grantId: grantAt(7),
        toolPattern: "client.charge",
        decision: "allow",
        scope: "session",
        callbackId: callbackAt(4)
      }),
      ev("ToolExecutionStarted", { executor: owner })
    ),
    and: (state) => assert.deepStrictEqual(state.grants.map((grant) => grant.grantId), [grantAt(7)])
  },
  {
    rule: "a denial answered with remember: a deny grant",
    given: charged,
    when: answer(new Answer.DenyApproval({ reason: "no", remember: "tree" })),
    then: appends(
      "CallbackResolved",
      ev("ApprovalGranted", { decision: "deny", scope: "tree" }),
      "ToolCallCompleted",
      "ModelStepStarted"
    )
  }
])

rules("ModelStepDone", [
  {
    rule: "a later call of a granted tool in the same session: answered by the grant in the same append",
    agent: boss,
    given: granted("session"),
    when: calls("charge"),
    then: appends(
      "ToolCallStarted",
      ev("CallbackOpened", { callback: callbackOf("approval") }),
      ev("CallbackResolved", {
        resolution: "answered",
        answer: new Answer.AllowApproval(),
        answeredBy: byGrant(grantAt(7))
      }),
      "ToolExecutionStarted"
    )
  },
  {
    rule: "a session grant does not cover a subagent's session: the subagent's call asks",
    agent: boss,
    given: spawned("session"),
    when: childCalls("charge"),
    then: appends("ToolCallStarted", ev("CallbackOpened", { callback: callbackOf("approval") })),
    and: (state) => assert.strictEqual(state.open.length, 1, "the approval waits for an answer")
  },
  {
    rule: "a tree grant covers a subagent's session",
    agent: boss,
    given: spawned("tree"),
    when: childCalls("charge"),
    then: appends(
      "ToolCallStarted",
      "CallbackOpened",
      ev("CallbackResolved", { answeredBy: byGrant(grantAt(7)) }),
      "ToolExecutionStarted"
    )
  },
  {
    rule: "a deny grant denies the later call without asking; the model is told",
    agent: boss,
    given: [...charged, answer(new Answer.DenyApproval({ remember: "session" }))],
    when: calls("charge"),
    then: appends(
      "ToolCallStarted",
      "CallbackOpened",
      ev("CallbackResolved", { answeredBy: byGrant(grantAt(7)) }),
      "ToolCallCompleted",
      "ModelStepStarted"
    )
  },
  {
    rule: "the policy decides before any grant: a tool it denies stays denied, whatever a grant says",
    given: [
      send("Delete."),
      grantedElsewhere("client.delete_all")
    ],
    when: calls("delete_all"),
    then: appends("ToolCallStarted", ev("ToolCallCompleted", { isFailure: true }), "ModelStepStarted")
  }
])

rules("RevokeGrant", [
  {
    rule: "revoking a grant in force",
    given: granted("session"),
    when: revoke(grantAt(7)),
    then: appends(ev("GrantRevoked", { grantId: grantAt(7), revokedBy: new Principal.Client({ label: "ops" }) })),
    and: (state) => {
      assert.deepStrictEqual(state.grants, [])
      assert.isUndefined(TreeState.grantFor(state, state.treeId, "client.charge", {}))
    }
  },
  {
    rule: "revoking a grant that is not in force",
    given: [...granted("session"), revoke(grantAt(7))],
    when: revoke(grantAt(7)),
    then: rejects("GrantNotFound")
  }
])

// Scoped grants: `rememberWhen` makes a grant that decides only the calls whose arguments meet its conditions.

const colleagues = [ArgumentCondition.glob("/to", "*@corp.com")]
const chargeTo = (to: string) => calls({ name: "charge", params: { amount: 5, to } })
const scoped: ReadonlyArray<Step> = [
  send("Charge Ana."),
  chargeTo("ana@corp.com"),
  answer(new Answer.AllowApproval({ remember: "session", rememberWhen: colleagues })),
  toolFinished(0, { ok: true })
]

rules("Answer", [
  {
    rule: "an approval remembered with conditions: the grant carries them",
    given: [send("Charge Ana."), chargeTo("ana@corp.com")],
    when: answer(new Answer.AllowApproval({ remember: "session", rememberWhen: colleagues })),
    then: appends(
      "CallbackResolved",
      ev("ApprovalGranted", { toolPattern: "client.charge", decision: "allow", when: colleagues }),
      "ToolExecutionStarted"
    ),
    and: (state) => assert.deepStrictEqual(state.grants[0].when, colleagues)
  },
  {
    rule: "rememberWhen on a field the tool does not have: refused naming the closest field, nothing appended",
    given: [send("Charge Ana."), chargeTo("ana@corp.com")],
    when: answer(
      new Answer.AllowApproval({ remember: "session", rememberWhen: [ArgumentCondition.glob("/too", "*@corp.com")] })
    ),
    then: rejects("AnswerMismatch"),
    and: (state) => assert.strictEqual(state.open.length, 1, "the approval stays open")
  },
  {
    rule: "rememberWhen of the wrong type (a Bound on a string): refused",
    given: [send("Charge Ana."), chargeTo("ana@corp.com")],
    when: answer(
      new Answer.DenyApproval({ remember: "tree", rememberWhen: [ArgumentCondition.bound("/to", { max: 3 })] })
    ),
    then: rejects("AnswerMismatch")
  },
  {
    rule: "rememberWhen without remember: refused (it would scope no grant)",
    given: [send("Charge Ana."), chargeTo("ana@corp.com")],
    when: answer(new Answer.AllowApproval({ rememberWhen: colleagues })),
    then: rejects("AnswerMismatch")
  }
])

rules("ModelStepDone", [
  {
    rule: "a later call whose arguments meet the grant's conditions: answered by the grant",
    given: scoped,
    when: chargeTo("bob@corp.com"),
    then: appends(
      "ToolCallStarted",
      "CallbackOpened",
      ev("CallbackResolved", { answer: new Answer.AllowApproval(), answeredBy: byGrant(grantAt(7)) }),
      "ToolExecutionStarted"
    )
  },
  {
    rule: "a later call whose arguments do not: it asks, the grant stays in force",
    given: scoped,
    when: chargeTo("bob@gmail.com"),
    then: appends("ToolCallStarted", ev("CallbackOpened", { callback: callbackOf("approval") }), "TurnBlocked"),
    and: (state) => {
      assert.strictEqual(state.open.length, 1, "the approval waits for an answer")
      assert.strictEqual(state.grants.length, 1)
    }
  }
])

// Rules with conditions: the policy decides on the call's arguments, and says which condition decided.

const smallCharges = AgentSpec.make({
  ...assistant,
  name: "small-charges",
  permissions: new Permissions.PermissionPolicy({
    default: "ask",
    rules: [
      new Permissions.PermissionRule({
        tools: ["client.charge"],
        decision: "allow",
        when: [ArgumentCondition.bound("/amount", { max: 10 })]
      })
    ]
  })
})

rules("ModelStepDone", [
  {
    rule: "a call whose arguments meet the rule's conditions runs; ToolCallStarted names the rule and the condition",
    agent: smallCharges,
    given: [send("Charge 5.")],
    when: calls({ name: "charge", params: { amount: 5 } }),
    then: appends(
      ev("ToolCallStarted", {
        decidedBy: new Principal.Policy({ rule: "rules[0] client.charge when /amount <= 10: allow" })
      }),
      "ToolExecutionStarted"
    )
  },
  {
    rule: "a call whose arguments do not: the default asks",
    agent: smallCharges,
    given: [send("Charge 50.")],
    when: calls({ name: "charge", params: { amount: 50 } }),
    then: appends("ToolCallStarted", ev("CallbackOpened", { callback: callbackOf("approval") }), "TurnBlocked"),
    and: (state) => {
      const record = TreeState.callback(state, state.open[0])
      assert.isTrue(
        record?.callback._tag === "OpenApproval" && record.callback.request.decidedBy._tag === "DefaultDecision"
      )
    }
  }
])
