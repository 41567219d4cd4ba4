import { assert } from "@effect/vitest"
import { AgentSpec, Answer, Principal } from "@parley/core"
import { TreeState } from "@parley/log"
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
