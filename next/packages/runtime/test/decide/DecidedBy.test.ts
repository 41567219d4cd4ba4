import { assert } from "@effect/vitest"
import { Principal } from "@parley/core"
import { appends, calls, childCalls, contains, ev, grantedElsewhere, rules, send } from "./spec.js"

// What decided each call, on the log: a call the permission policy allows or denies without asking records the rule
// (or the default) and its decision on its `ToolCallStarted` (`decidedBy: Policy { rule }`); a call the policy asks for
// records none there (its approval names the rule that asked, and its `CallbackResolved` who answered); the subagent
// tools the policy does not cover record none.

const policy = (rule: string) => new Principal.Policy({ rule })

rules("ModelStepDone", [
  {
    rule: "a call the policy allows by its default: decidedBy names the default and its decision",
    given: [send("Where am I?")],
    when: calls("get_location"),
    then: appends(
      ev("ToolCallStarted", { toolId: "client.get_location", decidedBy: policy("default: allow") }),
      "CallbackOpened",
      "TurnBlocked"
    )
  },
  {
    rule: "a call a rule denies: decidedBy names the rule, its pattern and its decision; the call is not made",
    given: [send("Delete everything.")],
    when: calls("delete_all"),
    then: appends(
      ev("ToolCallStarted", { decidedBy: policy("rules[1] client.delete_all: deny") }),
      ev("ToolCallCompleted", { isFailure: true, result: contains("policy denies client.delete_all") }),
      "ModelStepStarted"
    )
  },
  {
    rule: "a call the policy asks for: no decidedBy on the call; the approval names the rule that asked",
    given: [send("Charge me.")],
    when: calls("charge"),
    then: appends(ev("ToolCallStarted", { decidedBy: undefined }), "CallbackOpened", "TurnBlocked"),
    and: (_state, events) => {
      const opened = events.find((event) => event._tag === "CallbackOpened")
      const callback = opened?._tag === "CallbackOpened" ? opened.callback : undefined
      assert.strictEqual(callback?._tag, "OpenApproval")
      const asked = callback?._tag === "OpenApproval" ? callback.request.decidedBy : undefined
      assert.deepStrictEqual(asked?._tag === "RuleMatched" ? [asked.index, asked.pattern] : [], [0, "client.charge"])
    }
  },
  {
    rule: "calls in one step each record their own verdict",
    given: [send("Rates, then delete.")],
    when: calls("fetch_rates", "delete_all"),
    then: appends(
      ev("ToolCallStarted", { toolId: "client.fetch_rates", decidedBy: policy("default: allow") }),
      ev("ToolCallStarted", { toolId: "client.delete_all", decidedBy: policy("rules[1] client.delete_all: deny") }),
      "ToolExecutionStarted",
      "ToolCallCompleted"
    )
  },
  {
    rule: "agents.spawn goes through the policy (allowed by default); agents.wait does not, and records nothing",
    given: [send("Research."), calls({ name: "agents_spawn", params: { agent: "researcher", task: "Look." } })],
    when: calls("agents_wait"),
    then: appends(ev("ToolCallStarted", { toolId: "agents.wait", decidedBy: undefined }))
  },
  {
    rule: "a subagent's call is decided by the subagent's policy and says so",
    given: [send("Research."), calls({ name: "agents_spawn", params: { agent: "researcher", task: "Look." } })],
    when: childCalls("lookup"),
    then: appends(
      ev("ToolCallStarted", { toolId: "client.lookup", decidedBy: policy("default: allow") }),
      "CallbackOpened"
    )
  },
  {
    rule: "a policy deny beats a grant: the call records the rule that denied it, not the grant",
    given: [
      send("Delete."),
      grantedElsewhere("client.delete_all")
    ],
    when: calls("delete_all"),
    then: appends(
      ev("ToolCallStarted", { decidedBy: policy("rules[1] client.delete_all: deny") }),
      ev("ToolCallCompleted", { isFailure: true }),
      "ModelStepStarted"
    )
  }
])
