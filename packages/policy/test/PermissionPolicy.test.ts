import { assert, describe, it } from "@effect/vitest"
import { ParleyError, Principal } from "@parley/core"
import { ArgumentCondition, PermissionPolicy } from "@parley/policy"
import { Effect, Schema } from "effect"

const { rule } = PermissionPolicy

type Expected =
  | { readonly decision: PermissionPolicy.Decision; readonly rule: number; readonly pattern: string }
  | { readonly decision: PermissionPolicy.Decision; readonly rule: "default" }

interface Row {
  readonly name: string
  readonly options: PermissionPolicy.MakeOptions
  readonly toolId: string
  readonly expected: Expected
}

const table: ReadonlyArray<Row> = [
  {
    name: "default allow, no rules",
    options: { default: "allow" },
    toolId: "client.get_location",
    expected: { decision: "allow", rule: "default" }
  },
  {
    name: "default deny, no rules",
    options: { default: "deny" },
    toolId: "client.get_location",
    expected: { decision: "deny", rule: "default" }
  },
  {
    name: "default ask, no rules",
    options: { default: "ask" },
    toolId: "agents.spawn",
    expected: { decision: "ask", rule: "default" }
  },
  {
    name: "permissionMode ask is default ask",
    options: { permissionMode: "ask" },
    toolId: "connector.gmail.latest_email",
    expected: { decision: "ask", rule: "default" }
  },
  {
    name: "permissionMode deny is default deny",
    options: { permissionMode: "deny" },
    toolId: "client.x",
    expected: { decision: "deny", rule: "default" }
  },
  {
    name: "no default and no permissionMode asks",
    options: {},
    toolId: "client.x",
    expected: { decision: "ask", rule: "default" }
  },
  {
    name: "permissionMode ask with a rule allowing an exact id",
    options: { permissionMode: "ask", rules: [rule(["client.get_location"], "allow")] },
    toolId: "client.get_location",
    expected: { decision: "allow", rule: 0, pattern: "client.get_location" }
  },
  {
    name: "exact id rule does not match another id",
    options: { default: "ask", rules: [rule(["client.get_location"], "allow")] },
    toolId: "client.get_weather",
    expected: { decision: "ask", rule: "default" }
  },
  {
    name: "first match wins when two rules match (deny first)",
    options: { default: "ask", rules: [rule(["client.*"], "deny"), rule(["client.get_location"], "allow")] },
    toolId: "client.get_location",
    expected: { decision: "deny", rule: 0, pattern: "client.*" }
  },
  {
    name: "first match wins when two rules match (allow first)",
    options: { default: "ask", rules: [rule(["client.get_location"], "allow"), rule(["client.*"], "deny")] },
    toolId: "client.get_location",
    expected: { decision: "allow", rule: 0, pattern: "client.get_location" }
  },
  {
    name: "a later rule decides when the earlier ones do not match",
    options: {
      default: "deny",
      rules: [rule(["agents.*"], "allow"), rule(["connector.outlook.*"], "deny"), rule(["client.*"], "ask")]
    },
    toolId: "client.get_location",
    expected: { decision: "ask", rule: 2, pattern: "client.*" }
  },
  {
    name: "connector.gmail.* matches a gmail tool",
    options: { default: "deny", rules: [rule(["connector.gmail.*"], "allow")] },
    toolId: "connector.gmail.send_email",
    expected: { decision: "allow", rule: 0, pattern: "connector.gmail.*" }
  },
  {
    name: "connector.gmail.* does not match another source",
    options: { default: "deny", rules: [rule(["connector.gmail.*"], "allow")] },
    toolId: "connector.outlook.send_email",
    expected: { decision: "deny", rule: "default" }
  },
  {
    name: "agents.* matches the builtins",
    options: { default: "deny", rules: [rule(["agents.*"], "allow")] },
    toolId: "agents.wait",
    expected: { decision: "allow", rule: 0, pattern: "agents.*" }
  },
  {
    name: "a non-matching rule falls to the default",
    options: { default: "allow", rules: [rule(["client.delete_*"], "deny")] },
    toolId: "client.get_location",
    expected: { decision: "allow", rule: "default" }
  },
  {
    name: "decidedBy names the first pattern of the rule that matched",
    options: {
      default: "deny",
      rules: [rule(["client.a", "connector.*.latest_email", "connector.gmail.*"], "allow")]
    },
    toolId: "connector.gmail.latest_email",
    expected: { decision: "allow", rule: 0, pattern: "connector.*.latest_email" }
  },
  {
    name: "plain objects as rules",
    options: { default: "ask", rules: [{ tools: ["client.x"], decision: "deny" }] },
    toolId: "client.x",
    expected: { decision: "deny", rule: 0, pattern: "client.x" }
  }
]

describe("PermissionPolicy.evaluate", () => {
  for (const row of table) {
    it.effect(row.name, () =>
      Effect.gen(function*() {
        const policy = yield* PermissionPolicy.make(row.options)
        const evaluation = PermissionPolicy.evaluate(policy, row.toolId)
        assert.strictEqual(evaluation.decision, row.expected.decision)
        const decidedBy = evaluation.decidedBy
        if (row.expected.rule === "default") {
          assert.strictEqual(decidedBy._tag, "DefaultDecision")
        } else {
          assert.strictEqual(decidedBy._tag, "RuleMatched")
          if (decidedBy._tag === "RuleMatched") {
            assert.strictEqual(decidedBy.index, row.expected.rule)
            assert.strictEqual(decidedBy.pattern, row.expected.pattern)
            assert.strictEqual(decidedBy.rule, policy.rules[row.expected.rule])
            assert.strictEqual(decidedBy.rule.decision, row.expected.decision)
          }
        }
        // data-last form gives the same evaluation
        assert.deepStrictEqual(PermissionPolicy.evaluate(row.toolId)(policy), evaluation)
      }))
  }

  it.effect("the conveniences decide everything by default", () =>
    Effect.sync(() => {
      assert.strictEqual(PermissionPolicy.evaluate(PermissionPolicy.allowAll, "client.x").decision, "allow")
      assert.strictEqual(PermissionPolicy.evaluate(PermissionPolicy.askAll, "agents.spawn").decision, "ask")
      assert.strictEqual(PermissionPolicy.evaluate(PermissionPolicy.denyAll, "connector.a.b").decision, "deny")
      assert.strictEqual(
        PermissionPolicy.evaluate(PermissionPolicy.askAll, "client.x").decidedBy._tag,
        "DefaultDecision"
      )
    }))

  it.effect("a policy built from core's schema directly evaluates the same way", () =>
    Effect.sync(() => {
      const policy = new PermissionPolicy.PermissionPolicy({
        default: "deny",
        rules: [new PermissionPolicy.PermissionRule({ tools: ["client.get_*"], decision: "allow" })]
      })
      assert.strictEqual(PermissionPolicy.evaluate(policy, "client.get_location").decision, "allow")
      assert.strictEqual(PermissionPolicy.evaluate(policy, "client.set_location").decision, "deny")
    }))
})

describe("PermissionPolicy.evaluate with conditions on the arguments", () => {
  const colleague = ArgumentCondition.glob("/to", "*@corp.com")
  const small = ArgumentCondition.bound("/amount", { max: 100 })
  const policy = new PermissionPolicy.PermissionPolicy({
    default: "ask",
    rules: [
      rule("client.send_email", "deny", { when: [ArgumentCondition.equals("/to", "ceo@corp.com")] }),
      rule("client.send_email", "allow", { when: [colleague] }),
      rule("client.pay", "allow", { when: [small, ArgumentCondition.equals("/currency", "EUR")] }),
      rule("client.pay", "deny", { when: [ArgumentCondition.bound("/amount", { min: 10_000 })] }),
      rule("client.*", "ask")
    ]
  })

  const rows: ReadonlyArray<{
    readonly name: string
    readonly toolId: string
    readonly args: unknown
    readonly decision: PermissionPolicy.Decision
    readonly rule: number | "default"
    readonly principal: string
  }> = [
    {
      name: "a colleague's address: the glob holds, the rule allows",
      toolId: "client.send_email",
      args: { to: "ana@corp.com", body: "hi" },
      decision: "allow",
      rule: 1,
      principal: `rules[1] client.send_email when /to matches "*@corp.com": allow`
    },
    {
      name: "an earlier rule's equality wins over a later glob",
      toolId: "client.send_email",
      args: { to: "ceo@corp.com" },
      decision: "deny",
      rule: 0,
      principal: `rules[0] client.send_email when /to = "ceo@corp.com": deny`
    },
    {
      name: "a customer's address: no condition holds, the catch-all asks",
      toolId: "client.send_email",
      args: { to: "bob@gmail.com" },
      decision: "ask",
      rule: 4,
      principal: "rules[4] client.*: ask"
    },
    {
      name: "the glob matches the whole string, not a part",
      toolId: "client.send_email",
      args: { to: "ana@corp.com.evil.net" },
      decision: "ask",
      rule: 4,
      principal: "rules[4] client.*: ask"
    },
    {
      name: "a missing field meets no condition",
      toolId: "client.send_email",
      args: {},
      decision: "ask",
      rule: 4,
      principal: "rules[4] client.*: ask"
    },
    {
      name: "every condition of a rule holds: a small payment in euros is allowed",
      toolId: "client.pay",
      args: { amount: 100, currency: "EUR" },
      decision: "allow",
      rule: 2,
      principal: `rules[2] client.pay when /amount <= 100 and /currency = "EUR": allow`
    },
    {
      name: "one condition fails: a small payment in dollars asks",
      toolId: "client.pay",
      args: { amount: 5, currency: "USD" },
      decision: "ask",
      rule: 4,
      principal: "rules[4] client.*: ask"
    },
    {
      name: "a bound's min is inclusive",
      toolId: "client.pay",
      args: { amount: 10_000, currency: "EUR" },
      decision: "deny",
      rule: 3,
      principal: "rules[3] client.pay when /amount >= 10000: deny"
    },
    {
      name: "a number given as a string is not a number",
      toolId: "client.pay",
      args: { amount: "50", currency: "EUR" },
      decision: "ask",
      rule: 4,
      principal: "rules[4] client.*: ask"
    },
    {
      name: "without arguments, a rule with conditions decides nothing",
      toolId: "client.pay",
      args: undefined,
      decision: "ask",
      rule: 4,
      principal: "rules[4] client.*: ask"
    },
    {
      name: "a tool no rule names: the default",
      toolId: "agents.spawn",
      args: { agent: "x" },
      decision: "ask",
      rule: "default",
      principal: "default: ask"
    }
  ]

  for (const row of rows) {
    it.effect(row.name, () =>
      Effect.sync(() => {
        const evaluation = PermissionPolicy.evaluate(policy, row.toolId, row.args)
        assert.strictEqual(evaluation.decision, row.decision)
        const { decidedBy } = evaluation
        if (row.rule === "default") {
          assert.strictEqual(decidedBy._tag, "DefaultDecision")
        } else {
          assert.isTrue(decidedBy._tag === "RuleMatched" && decidedBy.index === row.rule)
          // `decidedBy` names the conditions that held: the rule's own.
          assert.deepStrictEqual(decidedBy._tag === "RuleMatched" ? decidedBy.when : [], policy.rules[row.rule].when)
        }
        assert.strictEqual(PermissionPolicy.principal(evaluation).rule, row.principal)
        // the data-last form agrees
        assert.deepStrictEqual(PermissionPolicy.evaluate(row.toolId, row.args)(policy), evaluation)
      }))
  }

  it.effect("a bound's conditions apply to its own rules; the strictest decision stands", () =>
    Effect.sync(() => {
      const bounded = PermissionPolicy.bounded(
        new PermissionPolicy.PermissionPolicy({ default: "allow", rules: [] }),
        "server",
        new PermissionPolicy.PermissionPolicy({
          default: "allow",
          rules: [rule("client.pay", "ask", { when: [ArgumentCondition.bound("/amount", { min: 1_000 })] })]
        })
      )
      assert.strictEqual(PermissionPolicy.evaluate(bounded, "client.pay", { amount: 999 }).decision, "allow")
      const large = PermissionPolicy.evaluate(bounded, "client.pay", { amount: 1_000 })
      assert.strictEqual(PermissionPolicy.principal(large).rule, "server rules[0] client.pay when /amount >= 1000: ask")
    }))

  it.effect("an evaluation with conditions round-trips through JSON", () =>
    Effect.gen(function*() {
      const evaluation = PermissionPolicy.evaluate(policy, "client.pay", { amount: 1, currency: "EUR" })
      const json = JSON.parse(JSON.stringify(yield* Schema.encodeEffect(PermissionPolicy.Evaluation)(evaluation)))
      assert.deepStrictEqual(yield* Schema.decodeUnknownEffect(PermissionPolicy.Evaluation)(json), evaluation)
    }))
})

describe("PermissionPolicy.make", () => {
  it.effect("rule accepts one pattern or several", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(rule("client.x", "allow").tools, ["client.x"])
      assert.deepStrictEqual(rule(["client.x", "client.y"], "deny").tools, ["client.x", "client.y"])
      assert.strictEqual(rule("client.x", "ask").decision, "ask")
    }))

  it.effect("the same default and permissionMode do not contradict", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.make({ default: "ask", permissionMode: "ask" })
      assert.strictEqual(policy.default, "ask")
      assert.deepStrictEqual(policy.rules, [])
    }))

  it.effect("a contradictory default and permissionMode fail with PolicyInvalid", () =>
    Effect.gen(function*() {
      const error = yield* PermissionPolicy.make({ default: "allow", permissionMode: "ask" }).pipe(Effect.flip)
      assert.instanceOf(error, ParleyError.PolicyInvalid)
      assert.strictEqual(error.method, "make")
      assert.strictEqual(error.issues.length, 1)
      assert.include(error.issues[0], "default \"allow\" contradicts permissionMode \"ask\"")
    }))

  it.effect("the contradiction is reported together with the rule issues", () =>
    Effect.gen(function*() {
      const error = yield* PermissionPolicy.make({
        default: "deny",
        permissionMode: "allow",
        rules: [rule("tools.x", "allow")]
      }).pipe(Effect.flip)
      assert.strictEqual(error.issues.length, 2)
      assert.include(error.issues[0], "contradicts permissionMode")
      assert.include(error.issues[1], "rules[0].tools[0] \"tools.x\": unknown namespace")
    }))
})

describe("PermissionPolicy.validate", () => {
  it.effect("a valid policy comes back unchanged", () =>
    Effect.gen(function*() {
      const policy = new PermissionPolicy.PermissionPolicy({
        default: "deny",
        rules: [
          rule(["agents.spawn", "client.get_*"], "allow"),
          rule(["connector.*.latest_email", "connector.gmail.*"], "ask")
        ]
      })
      assert.strictEqual(yield* PermissionPolicy.validate(policy), policy)
    }))

  // [pattern, a fragment its issue must contain]
  const malformed: ReadonlyArray<readonly [pattern: string, why: string]> = [
    ["", "empty pattern"],
    ["client..x", "empty segment"],
    ["client.**", "\"**\" is not a pattern"],
    ["client.get location", "bad characters"],
    ["gmail.latest_email", "unknown namespace \"gmail\""],
    ["connector.gmail", "wrong segment count"],
    ["agents.fork", "unknown builtin \"fork\""]
  ]

  for (const [pattern, why] of malformed) {
    it.effect(`rejects ${JSON.stringify(pattern)} (${why})`, () =>
      Effect.gen(function*() {
        const policy = new PermissionPolicy.PermissionPolicy({ default: "allow", rules: [rule([pattern], "deny")] })
        const error = yield* PermissionPolicy.validate(policy).pipe(Effect.flip)
        assert.instanceOf(error, ParleyError.PolicyInvalid)
        assert.strictEqual(error.module, "PermissionPolicy")
        assert.strictEqual(error.method, "validate")
        assert.strictEqual(error.issues.length, 1)
        assert.isTrue(error.issues[0].startsWith(`rules[0].tools[0] ${JSON.stringify(pattern)}: `), error.issues[0])
        assert.include(error.issues[0], why)
      }))
  }

  it.effect("reports every issue together, with rule and pattern indices", () =>
    Effect.gen(function*() {
      const policy = new PermissionPolicy.PermissionPolicy({
        default: "ask",
        rules: [
          rule(["client.ok", "client..x"], "allow"),
          rule(["agents.spawn"], "allow"),
          rule(["tools.x", "connector.gmail", "agents.*"], "deny"),
          rule([], "deny")
        ]
      })
      const error = yield* PermissionPolicy.validate(policy).pipe(Effect.flip)
      assert.strictEqual(error.issues.length, 4)
      assert.isTrue(error.issues[0].startsWith("rules[0].tools[1] \"client..x\": empty segment"), error.issues[0])
      assert.isTrue(error.issues[1].startsWith("rules[2].tools[0] \"tools.x\": unknown namespace"), error.issues[1])
      assert.isTrue(error.issues[2].startsWith("rules[2].tools[1] \"connector.gmail\": wrong segment"), error.issues[2])
      assert.isTrue(error.issues[3].startsWith("rules[3]: no tool patterns"), error.issues[3])
      // the message lists them all
      for (const issue of error.issues) assert.include(error.message, issue)
    }))

  it.effect("a rule without the client. namespace asks \"did you mean\", from the agent's tools when given", () =>
    Effect.gen(function*() {
      const policy = new PermissionPolicy.PermissionPolicy({
        default: "allow",
        rules: [rule(["get_location"], "deny"), rule(["latest_email"], "ask")]
      })
      const alone = yield* PermissionPolicy.validate(policy).pipe(Effect.flip)
      assert.deepStrictEqual(alone.issues, [
        "rules[0].tools[0] \"get_location\": no namespace; tool ids start with client, agents or connector: did you mean client.get_location?",
        "rules[1].tools[0] \"latest_email\": no namespace; tool ids start with client, agents or connector: did you mean client.latest_email?"
      ])
      const withTools = yield* PermissionPolicy.validate(policy, {
        toolIds: ["client.get_location", "connector.gmail.latest_email"]
      }).pipe(Effect.flip)
      assert.deepStrictEqual(withTools.issues, [
        "rules[0].tools[0] \"get_location\": no namespace; tool ids start with client, agents or connector: did you mean client.get_location?",
        "rules[1].tools[0] \"latest_email\": no namespace; tool ids start with client, agents or connector: did you mean connector.gmail.latest_email?"
      ])
      assert.strictEqual(PermissionPolicy.closestTool("get_location", ["client.get_location"]), "client.get_location")
    }))

  it.effect("make fails with the same issues", () =>
    Effect.gen(function*() {
      const error = yield* PermissionPolicy.make({
        rules: [rule("client.**", "allow"), rule("agents.nope", "deny")]
      }).pipe(Effect.flip)
      assert.strictEqual(error.method, "make")
      assert.strictEqual(error.issues.length, 2)
      assert.include(error.issues[0], "rules[0].tools[0] \"client.**\"")
      assert.include(error.issues[1], "rules[1].tools[0] \"agents.nope\"")
    }))
})

describe("PermissionPolicy.decodeUnknown", () => {
  it.effect("decodes and checks an encoded policy", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.decodeUnknown({
        default: "deny",
        rules: [{ tools: ["agents.spawn"], decision: "ask" }]
      })
      assert.instanceOf(policy, PermissionPolicy.PermissionPolicy)
      assert.strictEqual(PermissionPolicy.evaluate(policy, "agents.spawn").decision, "ask")
      const noRules = yield* PermissionPolicy.decodeUnknown({ default: "allow" })
      assert.deepStrictEqual(noRules.rules, [])
    }))

  it.effect("fails with PolicyInvalid on a shape error", () =>
    Effect.gen(function*() {
      const error = yield* PermissionPolicy.decodeUnknown({ default: "maybe", rules: [{ tools: "client.x" }] }).pipe(
        Effect.flip
      )
      assert.instanceOf(error, ParleyError.PolicyInvalid)
      assert.strictEqual(error.method, "decodeUnknown")
      assert.isTrue(error.issues.some((issue) => issue.startsWith("default:")), error.issues.join("\n"))
      assert.isTrue(error.issues.some((issue) => issue.startsWith("rules.0.")), error.issues.join("\n"))
    }))

  it.effect("fails with PolicyInvalid on a malformed pattern", () =>
    Effect.gen(function*() {
      const error = yield* PermissionPolicy.decodeUnknown({
        default: "allow",
        rules: [{ tools: ["client.*", "nope"], decision: "deny" }]
      }).pipe(Effect.flip)
      assert.deepStrictEqual(error.issues.length, 1)
      assert.isTrue(error.issues[0].startsWith("rules[0].tools[1] \"nope\": no namespace"), error.issues[0])
    }))
})

describe("PermissionPolicy.Evaluation", () => {
  it.effect("round-trips through its encoded form", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.make({
        default: "deny",
        rules: [rule(["client.a"], "ask"), rule(["connector.*.latest_email"], "allow")]
      })
      for (const toolId of ["connector.gmail.latest_email", "client.b"]) {
        const evaluation = PermissionPolicy.evaluate(policy, toolId)
        const encoded = yield* Schema.encodeEffect(PermissionPolicy.Evaluation)(evaluation)
        const json = JSON.parse(JSON.stringify(encoded))
        const decoded = yield* Schema.decodeUnknownEffect(PermissionPolicy.Evaluation)(json)
        assert.instanceOf(decoded, PermissionPolicy.Evaluation)
        assert.deepStrictEqual(decoded, evaluation)
      }
    }))

  it.effect("the encoded form is plain JSON naming the rule and pattern", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.make({ default: "ask", rules: [rule(["client.*"], "deny")] })
      const encoded = yield* Schema.encodeEffect(PermissionPolicy.Evaluation)(
        PermissionPolicy.evaluate(policy, "client.rm")
      )
      assert.deepStrictEqual(JSON.parse(JSON.stringify(encoded)), {
        decision: "deny",
        decidedBy: {
          _tag: "RuleMatched",
          index: 0,
          rule: { tools: ["client.*"], decision: "deny" },
          pattern: "client.*"
        }
      })
      const byDefault = yield* Schema.encodeEffect(PermissionPolicy.Evaluation)(
        PermissionPolicy.evaluate(policy, "agents.wait")
      )
      assert.deepStrictEqual(JSON.parse(JSON.stringify(byDefault)), {
        decision: "ask",
        decidedBy: { _tag: "DefaultDecision" }
      })
    }))

  it.effect("decoding rejects a negative rule index", () =>
    Effect.gen(function*() {
      const error = yield* Schema.decodeUnknownEffect(PermissionPolicy.Evaluation)({
        decision: "deny",
        decidedBy: {
          _tag: "RuleMatched",
          index: -1,
          rule: { tools: ["client.*"], decision: "deny" },
          pattern: "client.*"
        }
      }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "SchemaError")
    }))
})

describe("PermissionPolicy conditions checked at load", () => {
  it.effect("validate refuses a malformed pointer and a Bound without a range, naming the rule and the condition", () =>
    Effect.gen(function*() {
      const error = yield* PermissionPolicy.make({
        rules: [
          rule("client.send_email", "allow", { when: [ArgumentCondition.glob("to", "*@corp.com")] }),
          rule("client.pay", "allow", { when: [ArgumentCondition.bound("/amount", {})] })
        ]
      }).pipe(Effect.flip)
      assert.instanceOf(error, ParleyError.PolicyInvalid)
      assert.deepStrictEqual(error.issues, [
        `rules[0].when[0] "to" is not a JSON pointer: it starts with "/" (as in /to), or is "" for all the arguments`,
        "rules[1].when[0] /amount: a Bound gives min, max or both"
      ])
    }))

  it.effect("approvers: kept on an ask rule; refused on a rule that does not ask, or naming nobody", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.make({
        rules: [rule("client.pay", "ask", { approvers: { roles: ["finance"] } })]
      })
      assert.deepStrictEqual(policy.rules[0].approvers?.roles, ["finance"])
      assert.deepStrictEqual(policy.rules[0].approvers?.principals, [])
      const error = yield* PermissionPolicy.make({
        rules: [
          rule("client.pay", "allow", { approvers: { roles: ["finance"] } }),
          rule("client.pay", "ask", { approvers: {} })
        ]
      }).pipe(Effect.flip)
      assert.deepStrictEqual(error.issues, [
        `rules[0]: approvers say who may answer an approval, and a rule deciding "allow" opens none`,
        "rules[1]: approvers name no role and no principal, so nobody could answer"
      ])
    }))

  it.effect("decodeUnknown reads conditions from JSON and checks them", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.decodeUnknown({
        default: "ask",
        rules: [{
          tools: ["client.send_email"],
          decision: "allow",
          when: [{ _tag: "Glob", pointer: "/to", pattern: "*@corp.com" }]
        }]
      })
      assert.deepStrictEqual(policy.rules[0].when, [ArgumentCondition.glob("/to", "*@corp.com")])
      const error = yield* PermissionPolicy.decodeUnknown({
        default: "ask",
        rules: [{ tools: ["client.pay"], decision: "allow", when: [{ _tag: "Bound", pointer: "/amount", min: "1" }] }]
      }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "PolicyInvalid")
    }))

  it.effect("checkTools refuses a condition on a field the tool does not have, or of a type it does not take", () =>
    Effect.sync(() => {
      const found = PermissionPolicy.checkTools(
        new PermissionPolicy.PermissionPolicy({
          default: "ask",
          rules: [
            rule("client.send_email", "allow", { when: [ArgumentCondition.glob("/too", "*@corp.com")] }),
            rule("client.*", "allow", { when: [ArgumentCondition.bound("/to", { max: 1 })] }),
            rule("client.send_email", "allow", { when: [ArgumentCondition.glob("/to", "*@corp.com")] })
          ]
        }),
        {
          agent: "mailer",
          toolIds: ["client.get_location", "client.send_email"],
          parameters: {
            "client.get_location": { type: "object", properties: {} },
            "client.send_email": {
              type: "object",
              properties: { to: { type: "string" }, body: { type: "string" } },
              additionalProperties: false
            }
          }
        }
      )
      assert.deepStrictEqual(found.issues, [
        `rules[0].when[0] (client.send_email) /too: no field "too" in the arguments; did you mean /to?`,
        `rules[1].when[0] (client.get_location) /to: the arguments have no fields, so there is no /to`,
        `rules[1].when[0] (client.send_email) /to <= 1: /to is string, and a Bound compares numbers`
      ])
    }))
})

describe("PermissionPolicy.checkTools", () => {
  const policy = (...rules: ReadonlyArray<PermissionPolicy.PermissionRule>) =>
    new PermissionPolicy.PermissionPolicy({ default: "allow", rules })
  const callable = {
    agent: "assistant",
    toolIds: ["client.get_location", "connector.gmail.latest_email"],
    pendingSources: ["drive"]
  }

  it.effect("an exact pattern no callable tool matches is an issue naming the rule and the closest tool id", () =>
    Effect.sync(() => {
      const found = PermissionPolicy.checkTools(
        policy(
          PermissionPolicy.rule("client.get_location", "allow"),
          PermissionPolicy.rule("client.get_locaton", "deny")
        ),
        callable
      )
      assert.deepStrictEqual(found.issues, [
        "rules[1].tools[0] \"client.get_locaton\" matches no tool agent \"assistant\" can call; did you mean client.get_location?"
      ])
      assert.deepStrictEqual(found.warnings, [])
    }))

  it.effect("a wildcard matching no callable tool is an issue naming the closest pattern that matches one", () =>
    Effect.sync(() => {
      const found = PermissionPolicy.checkTools(
        policy(
          PermissionPolicy.rule(["connector.gmial.*", "client.get_*"], "deny"),
          PermissionPolicy.rule("agents.*", "ask"),
          PermissionPolicy.rule("client.*_report", "allow"),
          PermissionPolicy.rule("client.gte_*", "allow")
        ),
        callable
      )
      assert.deepStrictEqual(found.issues, [
        "rules[0].tools[0] \"connector.gmial.*\" matches no tool agent \"assistant\" can call; did you mean connector.gmail.* (connector.gmail.latest_email)?",
        "rules[1].tools[0] \"agents.*\" matches no tool agent \"assistant\" can call (its tools: client.get_location, connector.gmail.latest_email)",
        "rules[2].tools[0] \"client.*_report\" matches no tool agent \"assistant\" can call (its tools: client.get_location, connector.gmail.latest_email)",
        "rules[3].tools[0] \"client.gte_*\" matches no tool agent \"assistant\" can call; did you mean client.get_* (client.get_location)?"
      ])
      assert.deepStrictEqual(found.warnings, [])
    }))

  it.effect("a pattern under a connector whose tools are not known yet is a warning, exact or wildcard", () =>
    Effect.sync(() => {
      const found = PermissionPolicy.checkTools(
        policy(PermissionPolicy.rule(["connector.drive.search", "connector.drive.*", "connector.*.list"], "deny")),
        callable
      )
      assert.deepStrictEqual(found.issues, [])
      assert.deepStrictEqual(found.warnings, [
        "rules[0].tools[0] \"connector.drive.search\": the tools of connector drive are not known yet, so this pattern is not checked against them",
        "rules[0].tools[1] \"connector.drive.*\": the tools of connector drive are not known yet, so this pattern is not checked against them",
        "rules[0].tools[2] \"connector.*.list\": the tools of connector drive are not known yet, so this pattern is not checked against them"
      ])
    }))

  it.effect("closestTool suggests only a near id", () =>
    Effect.sync(() => {
      assert.strictEqual(PermissionPolicy.closestTool("client.get_locaton", callable.toolIds), "client.get_location")
      assert.strictEqual(PermissionPolicy.closestTool("client.send_email", callable.toolIds), undefined)
    }))
})

describe("PermissionPolicy.principal", () => {
  it.effect("names the rule that matched (index, pattern, decision) or the default, as the log records it", () =>
    Effect.gen(function*() {
      const policy = yield* PermissionPolicy.make({
        default: "deny",
        rules: [rule(["client.get_*", "client.lookup"], "allow"), rule(["connector.*.send_*"], "ask")]
      })
      const principalOf = (toolId: string) => PermissionPolicy.principal(PermissionPolicy.evaluate(policy, toolId))
      assert.deepStrictEqual(
        principalOf("client.get_location"),
        new Principal.Policy({ rule: "rules[0] client.get_*: allow" })
      )
      assert.deepStrictEqual(
        principalOf("client.lookup"),
        new Principal.Policy({ rule: "rules[0] client.lookup: allow" })
      )
      assert.deepStrictEqual(principalOf("connector.gmail.send_email").rule, "rules[1] connector.*.send_*: ask")
      assert.deepStrictEqual(principalOf("client.rm"), new Principal.Policy({ rule: "default: deny" }))
      assert.strictEqual(Principal.describe(principalOf("client.rm")), "policy default: deny")
    }))
})

describe("PermissionPolicy.bounded", () => {
  const served = new PermissionPolicy.PermissionPolicy({
    default: "ask",
    rules: [
      rule(["client.get_*"], "allow"),
      rule(["connector.*.send_*"], "deny"),
      rule(["client.deploy"], "ask", { editable: false })
    ]
  })

  it.effect("a bound never widens: allow everything leaves the policy's ask and deny standing", () =>
    Effect.sync(() => {
      const bounded = PermissionPolicy.bounded(served, "client", PermissionPolicy.allowAll)
      for (const toolId of ["agents.spawn", "connector.gmail.send_email", "client.get_location", "client.deploy"]) {
        assert.deepStrictEqual(
          PermissionPolicy.evaluate(bounded, toolId),
          PermissionPolicy.evaluate(served, toolId),
          toolId
        )
      }
    }))

  it.effect("a bound narrows: its ask over an allow, its deny over an ask, named in decidedBy and the principal", () =>
    Effect.sync(() => {
      const bounded = PermissionPolicy.bounded(
        served,
        "client",
        new PermissionPolicy.PermissionPolicy({
          default: "allow",
          rules: [rule(["client.get_location"], "ask"), rule(["agents.*"], "deny"), rule(["client.deploy"], "ask")]
        })
      )
      const location = PermissionPolicy.evaluate(bounded, "client.get_location")
      assert.strictEqual(location.decision, "ask")
      assert.isTrue(location.decidedBy._tag === "RuleMatched" && location.decidedBy.bound === "client")
      assert.strictEqual(
        PermissionPolicy.principal(location).rule,
        "client rules[0] client.get_location: ask"
      )
      assert.strictEqual(PermissionPolicy.evaluate(bounded, "agents.spawn").decision, "deny")
      // A deny of the policy stays its own: the bound's default allows.
      const send = PermissionPolicy.evaluate(bounded, "connector.gmail.send_email")
      assert.strictEqual(send.decision, "deny")
      assert.isTrue(send.decidedBy._tag === "RuleMatched" && send.decidedBy.bound === undefined)
      // Both ask: the one that forbids edited arguments decides.
      const deploy = PermissionPolicy.evaluate(bounded, "client.deploy")
      assert.isTrue(deploy.decidedBy._tag === "RuleMatched" && deploy.decidedBy.rule.editable === false)
      assert.strictEqual(PermissionPolicy.evaluate(bounded, "client.other").decision, "ask")
    }))

  it.effect("a bound's default decides when it is the strictest; no policy is allow-all; bounds stack", () =>
    Effect.sync(() => {
      const floor = new PermissionPolicy.PermissionPolicy({ default: "ask", rules: [rule("client.read_*", "allow")] })
      const underFloor = PermissionPolicy.bounded(undefined, "server", floor)
      assert.strictEqual(PermissionPolicy.evaluate(underFloor, "client.read_file").decision, "allow")
      const write = PermissionPolicy.evaluate(underFloor, "client.write_file")
      assert.deepStrictEqual(write.decidedBy, new PermissionPolicy.DefaultDecision({ bound: "server" }))
      assert.strictEqual(PermissionPolicy.principal(write).rule, "server default: ask")
      const both = PermissionPolicy.bounded(underFloor, "client", PermissionPolicy.denyAll)
      assert.deepStrictEqual(both.bounds?.map((bound) => bound.by), ["server", "client"])
      assert.strictEqual(PermissionPolicy.evaluate(both, "client.read_file").decision, "deny")
      // The bound's own bounds come along, as the same party's.
      const nested = PermissionPolicy.bounded(PermissionPolicy.allowAll, "client", both)
      assert.deepStrictEqual(nested.bounds?.map((bound) => bound.by), ["client", "client", "client"])
      assert.strictEqual(PermissionPolicy.evaluate(nested, "client.read_file").decision, "deny")
    }))

  it.effect("a bounded policy round-trips its wire form, and validate names a bound's malformed pattern", () =>
    Effect.gen(function*() {
      const bounded = PermissionPolicy.bounded(served, "server", PermissionPolicy.askAll)
      const encoded = Schema.encodeSync(PermissionPolicy.PermissionPolicy)(bounded)
      const decoded = yield* PermissionPolicy.decodeUnknown(JSON.parse(JSON.stringify(encoded)))
      assert.deepStrictEqual(decoded, bounded)
      const broken = PermissionPolicy.bounded(
        served,
        "client",
        new PermissionPolicy.PermissionPolicy({ default: "ask", rules: [rule(["client..x"], "deny")] })
      )
      const error = yield* Effect.flip(PermissionPolicy.validate(broken))
      assert.strictEqual(error._tag, "PolicyInvalid")
      assert.match(
        error.issues.join("\n"),
        /^bounds\[0\] \(client\) rules\[0\]\.tools\[0\] "client\.\.x": empty segment/m
      )
    }))
})
