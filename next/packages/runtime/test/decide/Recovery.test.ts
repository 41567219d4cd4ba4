import { Answer } from "@parley/core"
import type { Step } from "./spec.js"
import {
  answer,
  answeredElsewhere,
  appends,
  calls,
  contains,
  ev,
  newOwner,
  nobody,
  nothing,
  owner,
  replies,
  resume,
  rules,
  send,
  settle
} from "./spec.js"

// A tree's owner recovers it (`Resume`, under its lease): a model step in flight is aborted and issued again; a tool
// another lease started may have run — the model is told it was interrupted, unless running it again is harmless.
// `Settle` applies what the log calls for: the owner records the starts that decisions without executor left to it.

const allow = new Answer.AllowApproval()
/** The owner started `charge` (not idempotent) after its approval. */
const charging: ReadonlyArray<Step> = [send("Charge me."), calls("charge"), answer(allow)]
/** The owner started `fetch_rates` (idempotent). */
const fetching: ReadonlyArray<Step> = [send("Rates?"), calls("fetch_rates")]

rules("Resume", [
  {
    rule: "a model step in flight: aborted, and issued again as the same step",
    given: [send("Hello.")],
    when: resume,
    then: appends(ev("MessageAborted", { messageId: "msg_2" }), ev("ModelStepStarted", { messageId: "msg_4", step: 0 }))
  },
  {
    rule: "a start of another owner, not idempotent: reported interrupted, never run again",
    given: charging,
    when: resume,
    then: appends(
      ev("ToolCallCompleted", { isFailure: true, result: contains("interrupted (the runtime stopped)") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a start of the same owner under an earlier lease: interrupted",
    given: charging,
    when: resume.by({ owner: owner.owner, epoch: owner.epoch + 1 }),
    then: appends(ev("ToolCallCompleted", { isFailure: true }), "ModelStepStarted")
  },
  {
    rule: "a start of another owner, idempotent: started again, under the new lease",
    given: fetching,
    when: resume,
    then: appends(ev("ToolExecutionStarted", { toolId: "client.fetch_rates", executor: newOwner }))
  },
  {
    rule: "a start under the lease that resumes: left to run",
    given: fetching,
    when: resume.by(owner),
    then: nothing
  },
  {
    rule: "an approved call that waited for an owner: the new owner starts it",
    given: [send("Charge me."), calls("charge"), answer(allow).by(nobody)],
    when: resume,
    then: appends(ev("ToolExecutionStarted", { executor: newOwner }))
  },
  {
    rule: "nothing in flight",
    given: [send("Hello."), replies("Hi!")],
    when: resume,
    then: nothing
  }
])

rules("Settle", [
  {
    rule: "nothing to do",
    given: [send("Hello.")],
    when: settle,
    then: nothing
  },
  {
    rule: "an approval answered elsewhere, settled by the owner: the start, under its lease",
    given: [send("Charge me."), calls("charge"), answer(allow).by(nobody)],
    when: settle,
    then: appends(ev("ToolExecutionStarted", { executor: owner }))
  },
  {
    rule: "an approval answered elsewhere, settled by another process: nothing",
    given: [send("Charge me."), calls("charge"), answer(allow).by(nobody)],
    when: settle.by(nobody),
    then: nothing
  },
  {
    rule: "a runtime tool allowed without executor, settled by the owner: its start",
    given: [send("Rates?"), calls("fetch_rates").by(nobody)],
    when: settle,
    then: appends(ev("ToolExecutionStarted", { executor: owner }))
  },
  {
    rule: "a spawn decided without executor, settled by the owner: the subagent starts once",
    given: [
      send("Research."),
      calls({ name: "agents_spawn", params: { agent: "researcher", task: "Look." } }).by(nobody)
    ],
    when: settle,
    then: appends(
      "SubagentStarted",
      "TurnQueued",
      "TurnStarted",
      "ModelStepStarted",
      ev("ToolCallCompleted", { isFailure: false }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a DenyApproval another writer appended, unsettled: the call fails, the next step starts",
    given: [send("Charge me."), calls("charge"), answeredElsewhere(new Answer.DenyApproval({}))],
    when: settle.by(nobody),
    then: appends(ev("ToolCallCompleted", { isFailure: true, result: contains("denied") }), "ModelStepStarted")
  },
  {
    rule: "an AllowApproval another writer appended, unsettled: the owner starts the call",
    given: [send("Charge me."), calls("charge"), answeredElsewhere(new Answer.AllowApproval())],
    when: settle,
    then: appends(ev("ToolExecutionStarted", { executor: owner }))
  },
  {
    rule: "a blocked tree is reported once",
    given: [send("Charge me."), calls("charge")],
    when: settle,
    then: nothing
  }
])
