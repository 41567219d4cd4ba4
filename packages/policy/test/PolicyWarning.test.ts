import { assert, describe, it } from "@effect/vitest"
import { PermissionPolicy, PolicyWarning } from "@parley/policy"
import { Effect, Schema } from "effect"

const { rule } = PermissionPolicy

const fix = `Add PermissionPolicy.rule(["agents.spawn"], "allow") (or "ask") before the first rule that matches it.`

describe("PolicyWarning.check", () => {
  it.effect("reports SpawnDenied for a deny default without a rule for agents.spawn", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.make({ default: "deny", rules: [rule(["client.*"], "allow")] })
      const warnings = PolicyWarning.check(policy, { agent: "researcher", hasSubagents: true })
      assert.strictEqual(warnings.length, 1)
      const [warning] = warnings
      assert.instanceOf(warning, PolicyWarning.SpawnDenied)
      assert.strictEqual(warning._tag, "SpawnDenied")
      assert.strictEqual(warning.agent, "researcher")
      assert.strictEqual(warning.decidedBy._tag, "DefaultDecision")
      assert.strictEqual(
        warning.message,
        `Agent "researcher" declares subagents, but its permission policy denies 'agents.spawn' ` +
          `(its default is "deny" and no rule matches it), so every spawn is refused. ${fix}`
      )
      assert.strictEqual(PolicyWarning.message(warning), warning.message)
    }))

  it.effect("reports SpawnDenied for denyAll", () =>
    Effect.sync(() => {
      const warnings = PolicyWarning.check(PermissionPolicy.denyAll, { agent: "a", hasSubagents: true })
      assert.strictEqual(warnings.length, 1)
      assert.include(warnings[0].message, fix)
    }))

  it.effect("reports SpawnDenied for an explicit deny rule, naming the rule", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.make({
        default: "allow",
        rules: [rule(["client.x"], "ask"), rule(["client.y", "agents.*"], "deny"), rule(["agents.spawn"], "allow")]
      })
      const warnings = PolicyWarning.check(policy, { agent: "planner", hasSubagents: true })
      assert.strictEqual(warnings.length, 1)
      const [warning] = warnings
      const decidedBy = warning.decidedBy
      assert.strictEqual(decidedBy._tag, "RuleMatched")
      if (decidedBy._tag === "RuleMatched") {
        assert.strictEqual(decidedBy.index, 1)
        assert.strictEqual(decidedBy.pattern, "agents.*")
      }
      assert.include(warning.message, `Agent "planner" declares subagents`)
      assert.include(warning.message, `(rules[1] denies it with the pattern 'agents.*')`)
      assert.include(warning.message, fix)
    }))

  for (const decision of ["allow", "ask"] as const) {
    it.effect(`does not report with an ${decision} rule for agents.spawn before the deny`, () =>
      Effect.gen(function*() {
        const policy = yield* PermissionPolicy.make({
          default: "deny",
          rules: [rule(["agents.spawn"], decision), rule(["agents.*"], "deny")]
        })
        assert.deepStrictEqual(PolicyWarning.check(policy, { agent: "a", hasSubagents: true }), [])
      }))
  }

  it.effect("does not report when the default allows or asks", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(PolicyWarning.check(PermissionPolicy.allowAll, { agent: "a", hasSubagents: true }), [])
      assert.deepStrictEqual(PolicyWarning.check(PermissionPolicy.askAll, { agent: "a", hasSubagents: true }), [])
    }))

  it.effect("does not report for an agent without subagents", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.make({ default: "deny", rules: [rule(["agents.spawn"], "deny")] })
      assert.deepStrictEqual(PolicyWarning.check(policy, { agent: "a", hasSubagents: false }), [])
      assert.deepStrictEqual(PolicyWarning.check(PermissionPolicy.denyAll, { agent: "a", hasSubagents: false }), [])
    }))

  it.effect("a warning round-trips through its encoded form", () =>
    Effect.gen(function*() {
      const [warning] = PolicyWarning.check(PermissionPolicy.denyAll, { agent: "a", hasSubagents: true })
      const encoded = yield* Schema.encodeEffect(PolicyWarning.PolicyWarning)(warning)
      const decoded = yield* Schema.decodeUnknownEffect(PolicyWarning.PolicyWarning)(
        JSON.parse(JSON.stringify(encoded))
      )
      assert.isTrue(PolicyWarning.isPolicyWarning(decoded))
      assert.deepStrictEqual(decoded, warning)
      assert.isFalse(PolicyWarning.isPolicyWarning({ _tag: "SpawnDenied" }))
    }))
})
