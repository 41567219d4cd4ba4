import { assert, describe, it } from "@effect/vitest"
import { Permissions } from "@parley/core"
import { ArgumentCondition } from "@parley/policy"
import { Arbitrary, Option, Result, Schema } from "effect"

const { bound, equals, glob, holds } = ArgumentCondition

// ----- generators, on effect's Arbitrary -----

const letters = (alphabet: ReadonlyArray<string>, maxLength: number) =>
  Arbitrary.map(
    Arbitrary.array(Arbitrary.schema(Schema.Literals(alphabet)), { maxLength }),
    (chars) => chars.join("")
  )
const finite = Arbitrary.schema(Schema.Finite)
const optionalFinite = Arbitrary.flatMap(
  Arbitrary.schema(Schema.Boolean),
  (given) =>
    given ? Arbitrary.map(finite, (n): number | undefined => n) : Arbitrary.Constant<number | undefined>(undefined)
)
const json: Arbitrary.Arbitrary<Schema.Json> = Arbitrary.schema(Schema.Json)
/** Keys that need escaping in a pointer (`/`, `~`) as well as plain ones. */
const key = letters(["a", "b", "/", "~", "0", "1"], 4)

// ----- oracles: the meaning of each condition, written another way -----

/** Whether `text` matches `pattern` (`*` any run), by dynamic programming over both strings. */
const globOracle = (pattern: string, text: string): boolean => {
  let row = [true, ...Array.from({ length: text.length }, () => false)]
  for (const p of pattern) {
    const next = [p === "*" && row[0]]
    for (let j = 1; j <= text.length; j++) {
      next[j] = p === "*" ? next[j - 1] || row[j] : row[j - 1] && p === text[j - 1]
    }
    row = next
  }
  return row[text.length]
}

/** JSON text with sorted keys: two JSON values are equal when theirs are. */
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(",")}]`
    : typeof value === "object" && value !== null
    ? `{${
      Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
        .join(",")
    }}`
    : JSON.stringify(value)

const escape = (token: string) => token.replace(/~/g, "~0").replace(/\//g, "~1")

describe("ArgumentCondition (properties: a condition accepts exactly the arguments it should)", () => {
  it.prop(
    "Glob accepts exactly the strings its pattern matches",
    [letters(["a", "b", "*", "."], 6), letters(["a", "b", "."], 8)],
    ([pattern, text]) => {
      assert.strictEqual(holds(glob("/to", pattern), { to: text }), globOracle(pattern, text), `${pattern} ~ ${text}`)
    },
    { arbitrary: { runs: 500 } }
  )

  it.prop(
    "Glob with `*` accepts every string between its prefix and suffix, and no value that is not a string",
    [letters(["a", "@", "."], 5), letters(["a", "b", "*"], 5), letters(["c", "@", "."], 5), json],
    ([prefix, middle, suffix, other]) => {
      const condition = glob("/to", `${prefix}*${suffix}`)
      assert.isTrue(holds(condition, { to: `${prefix}${middle}${suffix}` }))
      if (typeof other !== "string") assert.isFalse(holds(condition, { to: other }))
    }
  )

  it.prop(
    "Bound accepts exactly the finite numbers within min and max, inclusive, and nothing else",
    [finite, optionalFinite, optionalFinite, json],
    ([value, min, max, other]) => {
      const condition = bound("/amount", { min, max })
      const within = (min === undefined || value >= min) && (max === undefined || value <= max)
      assert.strictEqual(holds(condition, { amount: value }), within)
      if (min !== undefined) assert.isTrue(holds(bound("/amount", { min, max: min }), { amount: min }))
      if (typeof other !== "number") assert.isFalse(holds(condition, { amount: other }))
    },
    { arbitrary: { runs: 300 } }
  )

  it.prop(
    "Equals accepts exactly the JSON values equal to its own, whatever the order of their keys",
    [json, json],
    ([value, other]) => {
      assert.isTrue(holds(equals("/v", value), { v: value }))
      assert.isTrue(holds(equals("/v", value), { v: JSON.parse(JSON.stringify(value)) }))
      assert.strictEqual(holds(equals("/v", value), { v: other }), canonical(value) === canonical(other))
    },
    { arbitrary: { runs: 300 } }
  )

  it.prop(
    "a pointer names the value under its escaped keys, and a pointer to nothing meets no condition",
    [key, key, json],
    ([outer, inner, value]) => {
      const args = { [outer]: { [inner]: value } }
      const pointer = `/${escape(outer)}/${escape(inner)}`
      assert.deepStrictEqual(ArgumentCondition.valueAt(args, pointer), Option.some(value))
      assert.isTrue(holds(equals(pointer, value), args))
      assert.isFalse(holds(equals(`${pointer}/missing`, value), args))
      assert.isFalse(holds(glob(`/${escape(outer)}x`, "*"), args))
    }
  )
})

describe("ArgumentCondition", () => {
  it("pointers: RFC 6901 tokens, array indexes, the whole arguments", () => {
    assert.deepStrictEqual(ArgumentCondition.parsePointer(""), Result.succeed([]))
    assert.deepStrictEqual(ArgumentCondition.parsePointer("/a~1b/~0c/0"), Result.succeed(["a/b", "~c", "0"]))
    assert.isTrue(Result.isFailure(ArgumentCondition.parsePointer("to")))
    assert.isTrue(Result.isFailure(ArgumentCondition.parsePointer("/a~2")))
    const args = { recipients: ["ana@corp.com", "bob@gmail.com"] }
    assert.isTrue(holds(glob("/recipients/1", "*@gmail.com"), args))
    assert.isFalse(holds(glob("/recipients/2", "*"), args))
    assert.isFalse(holds(glob("/recipients/01", "*"), args))
    assert.isTrue(holds(equals("", args), args))
  })

  it("describe writes each condition as the audit shows it", () => {
    assert.strictEqual(ArgumentCondition.describe(equals("/to", "ana@corp.com")), `/to = "ana@corp.com"`)
    assert.strictEqual(ArgumentCondition.describe(glob("/to", "*@corp.com")), `/to matches "*@corp.com"`)
    assert.strictEqual(ArgumentCondition.describe(bound("/amount", { min: 10, max: 100 })), "/amount in 10..100")
    assert.strictEqual(ArgumentCondition.describe(bound("/amount", { max: 100 })), "/amount <= 100")
    assert.strictEqual(ArgumentCondition.describe(bound("/amount", { min: 0 })), "/amount >= 0")
  })

  it("issues: a malformed pointer, a Bound without a range or with min above max", () => {
    assert.deepStrictEqual(ArgumentCondition.issues(glob("/to", "*@corp.com")), [])
    assert.deepStrictEqual(ArgumentCondition.issues(glob("to", "*")), [
      `"to" is not a JSON pointer: it starts with "/" (as in /to), or is "" for all the arguments`
    ])
    assert.deepStrictEqual(ArgumentCondition.issues(bound("/n", {})), [
      "/n: a Bound gives min, max or both"
    ])
    assert.deepStrictEqual(ArgumentCondition.issues(bound("/n", { min: 5, max: 1 })), [
      "/n: min 5 is above max 1, so no number is within"
    ])
  })

  const parameters = {
    type: "object",
    properties: {
      to: { type: "string" },
      amount: { type: "number" },
      priority: { enum: ["low", "high"] },
      cc: { type: "array", items: { type: "string" } },
      meta: { type: "object", properties: { tag: { type: "string" } }, additionalProperties: false },
      extra: {}
    },
    required: ["to"],
    additionalProperties: false
  }

  it("checkParameters accepts conditions on fields the tool has, of a type they take", () => {
    for (
      const condition of [
        glob("/to", "*@corp.com"),
        bound("/amount", { max: 100 }),
        equals("/priority", "high"),
        glob("/cc/0", "*"),
        equals("/meta/tag", "x"),
        bound("/extra/anything", { min: 1 })
      ]
    ) {
      assert.deepStrictEqual(
        ArgumentCondition.checkParameters(condition, parameters),
        [],
        ArgumentCondition.describe(condition)
      )
    }
  })

  it("checkParameters names an unknown field with the closest one, and a type mismatch", () => {
    assert.deepStrictEqual(ArgumentCondition.checkParameters(glob("/tp", "*"), parameters), [
      `/tp: no field "tp" in the arguments; did you mean /to?`
    ])
    assert.deepStrictEqual(ArgumentCondition.checkParameters(equals("/meta/tga", "x"), parameters), [
      `/meta/tga: no field "tga" in /meta; did you mean /meta/tag?`
    ])
    assert.deepStrictEqual(ArgumentCondition.checkParameters(glob("/zzzzzzzz", "*"), parameters), [
      `/zzzzzzzz: no field "zzzzzzzz" in the arguments (its fields: to, amount, priority, cc, meta, extra)`
    ])
    assert.deepStrictEqual(ArgumentCondition.checkParameters(glob("/amount", "1*"), parameters), [
      `/amount matches "1*": /amount is number, and a Glob matches strings`
    ])
    assert.deepStrictEqual(ArgumentCondition.checkParameters(bound("/to", { max: 3 }), parameters), [
      `/to <= 3: /to is string, and a Bound compares numbers`
    ])
    assert.deepStrictEqual(ArgumentCondition.checkParameters(equals("/priority", 1), parameters), [
      `/priority = 1: /priority is string, and the value is a number`
    ])
    assert.deepStrictEqual(ArgumentCondition.checkParameters(glob("/cc/first", "*"), parameters), [
      `/cc/first: /cc has no fields, so there is no /cc/first`
    ])
  })

  it("the schemas decode from the wire and are core's", () => {
    const decoded = Schema.decodeUnknownSync(Schema.Array(ArgumentCondition.ArgumentCondition))([
      { _tag: "Glob", pointer: "/to", pattern: "*@corp.com" },
      { _tag: "Bound", pointer: "/amount", max: 100 },
      { _tag: "Equals", pointer: "/to", value: { nested: [1, null] } }
    ])
    assert.instanceOf(decoded[0], Permissions.Glob)
    assert.deepStrictEqual(decoded, [
      glob("/to", "*@corp.com"),
      bound("/amount", { max: 100 }),
      equals("/to", { nested: [1, null] })
    ])
  })
})
