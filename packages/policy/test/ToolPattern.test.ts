import { assert, describe, it } from "@effect/vitest"
import { ToolPattern } from "@parley/policy"
import { Effect, Result } from "effect"

const parsed = (pattern: string) =>
  Effect.gen(function*() {
    const result = ToolPattern.parse(pattern)
    if (Result.isFailure(result)) {
      return yield* Effect.die(new Error(`expected ${pattern} to parse, got: ${result.failure}`))
    }
    return result.success
  })

describe("ToolPattern.parse", () => {
  const accepted: ReadonlyArray<readonly [pattern: string, exact: boolean]> = [
    ["client.get_location", true],
    ["client.get-location2", true],
    ["agents.spawn", true],
    ["agents.message", true],
    ["agents.wait", true],
    ["agents.interrupt", true],
    ["connector.gmail.latest_email", true],
    ["client.*", false],
    ["client.get_*", false],
    ["client.*_location", false],
    ["client.g*t_*", false],
    ["agents.*", false],
    ["connector.gmail.*", false],
    ["connector.*.latest_email", false],
    ["connector.*.*", false],
    ["connector.g*.*_email", false]
  ]

  it.effect("accepts exact ids and * within one segment", () =>
    Effect.gen(function*() {
      for (const [source, exact] of accepted) {
        const pattern = yield* parsed(source)
        assert.strictEqual(pattern.source, source)
        assert.strictEqual(pattern.exact, exact, source)
        assert.deepStrictEqual(pattern.segments, source.split("."))
        assert.isTrue(ToolPattern.isToolPattern(pattern))
      }
    }))

  // [pattern, a fragment the issue must contain]
  const rejected: ReadonlyArray<readonly [pattern: string, why: string]> = [
    ["", "empty pattern"],
    ["client", "wrong segment count"],
    ["client.", "empty segment"],
    [".client.x", "empty segment"],
    ["client..x", "empty segment"],
    ["connector..latest_email", "empty segment"],
    ["client.**", "\"**\" is not a pattern"],
    ["connector.**.x", "\"**\" is not a pattern"],
    ["client.get_**", "\"**\" is not a pattern"],
    ["client.get location", "bad characters"],
    ["client.get/location", "bad characters"],
    ["client.é", "bad characters"],
    [" client.x", "bad characters"],
    ["client._private", "bad characters"],
    ["client.-x", "bad characters"],
    ["client.x?", "bad characters"],
    ["tools.get_location", "unknown namespace \"tools\""],
    ["Client.get_location", "unknown namespace \"Client\""],
    ["*.get_location", "namespace cannot be a wildcard"],
    ["c*.get_location", "namespace cannot be a wildcard"],
    ["*", "namespace cannot be a wildcard"],
    ["client.a.b", "wrong segment count: client tool ids have 2 segments"],
    ["agents.spawn.now", "wrong segment count: agents tool ids have 2 segments"],
    ["connector.gmail", "wrong segment count: connector tool ids have 3 segments"],
    ["connector.*", "wrong segment count: connector tool ids have 3 segments"],
    ["connector.a.b.c", "wrong segment count: connector tool ids have 3 segments"],
    ["agents.fork", "unknown builtin \"fork\""],
    ["agents.spawn_all", "unknown builtin \"spawn_all\""],
    ["agents.s*", "unknown builtin \"s*\""]
  ]

  it.effect("rejects malformed patterns with the pattern and the reason", () =>
    Effect.sync(() => {
      for (const [pattern, why] of rejected) {
        const result = ToolPattern.parse(pattern)
        assert.isTrue(Result.isFailure(result), `expected ${JSON.stringify(pattern)} to be rejected`)
        if (Result.isFailure(result)) {
          assert.isTrue(result.failure.startsWith(`${JSON.stringify(pattern)}: `), result.failure)
          assert.include(result.failure, why, pattern)
        }
      }
    }))
})

describe("a pattern without a namespace, or a misspelt one, is a near miss", () => {
  // [pattern, the last words]
  const guessed: ReadonlyArray<readonly [pattern: string, suggestion: string | undefined]> = [
    ["get_location", "did you mean client.get_location?"],
    ["get_*", "did you mean client.get_*?"],
    ["spawn", "did you mean agents.spawn?"],
    ["Client.get_location", "did you mean client.get_location?"],
    ["agent.spawn", "did you mean agents.spawn?"],
    ["conector.gmail.latest_email", "did you mean connector.gmail.latest_email?"],
    ["tools.get_location", undefined]
  ]

  it.effect("without the agent's tools, it names the pattern with the namespace its shape calls for", () =>
    Effect.sync(() => {
      for (const [pattern, suggestion] of guessed) {
        const result = ToolPattern.parse(pattern)
        assert.isTrue(Result.isFailure(result), pattern)
        if (Result.isFailure(result)) {
          assert.include(result.failure, "tool ids start with client, agents or connector", pattern)
          if (suggestion === undefined) assert.notInclude(result.failure, "did you mean", pattern)
          else assert.isTrue(result.failure.endsWith(suggestion), result.failure)
        }
      }
      assert.deepStrictEqual(
        ToolPattern.parse("get_location"),
        Result.fail(
          "\"get_location\": no namespace; tool ids start with client, agents or connector: did you mean client.get_location?"
        )
      )
    }))

  it.effect("with the agent's tools, it names the closest of them, by its name without the namespace", () =>
    Effect.sync(() => {
      const toolIds = ["client.get_location", "connector.gmail.latest_email", "agents.spawn"]
      const suggested = (pattern: string) => {
        const result = ToolPattern.parse(pattern, { toolIds })
        return Result.isFailure(result) ? /did you mean (\S+)\?$/.exec(result.failure)?.[1] : "parsed"
      }
      assert.strictEqual(suggested("get_location"), "client.get_location")
      assert.strictEqual(suggested("get_locaton"), "client.get_location")
      assert.strictEqual(suggested("latest_email"), "connector.gmail.latest_email")
      assert.strictEqual(suggested("gmail.latest_email"), "connector.gmail.latest_email")
      assert.strictEqual(suggested("tools.get_location"), "client.get_location")
      assert.strictEqual(suggested("send_invoice"), undefined, "nothing close: no suggestion")
      assert.strictEqual(suggested("client.get_location"), "parsed")
      assert.strictEqual(ToolPattern.closest("client.get_locaton", toolIds), "client.get_location")
      assert.strictEqual(ToolPattern.closest("client.send_email", toolIds), undefined)
    }))
})

describe("ToolPattern.matches", () => {
  // [pattern, tool id, matches]
  const table: ReadonlyArray<readonly [pattern: string, toolId: string, matches: boolean]> = [
    ["client.get_location", "client.get_location", true],
    ["client.get_location", "client.get_locations", false],
    ["client.get_location", "client.get", false],
    ["client.get_location", "connector.client.get_location", false],
    ["client.*", "client.get_location", true],
    ["client.*", "client.x", true],
    ["client.*", "agents.spawn", false],
    ["client.*", "connector.gmail.latest_email", false],
    ["client.get_*", "client.get_location", true],
    ["client.get_*", "client.get_", true],
    ["client.get_*", "client.set_location", false],
    ["client.get_*", "client.xget_location", false],
    ["client.*_location", "client.get_location", true],
    ["client.*_location", "client.get_location_now", false],
    ["agents.*", "agents.spawn", true],
    ["agents.*", "agents.interrupt", true],
    ["agents.*", "client.spawn", false],
    ["agents.spawn", "agents.spawn", true],
    ["agents.spawn", "agents.wait", false],
    ["connector.gmail.*", "connector.gmail.latest_email", true],
    ["connector.gmail.*", "connector.gmail.send-email", true],
    ["connector.gmail.*", "connector.gmailx.latest_email", false],
    ["connector.gmail.*", "connector.outlook.latest_email", false],
    ["connector.*.latest_email", "connector.gmail.latest_email", true],
    ["connector.*.latest_email", "connector.outlook.latest_email", true],
    ["connector.*.latest_email", "connector.gmail.latest_emails", false],
    ["connector.*.*", "connector.a.b", true],
    ["connector.g*.*_email", "connector.gmail.latest_email", true],
    ["connector.g*.*_email", "connector.outlook.latest_email", false],
    // * never crosses a dot
    ["client.*", "client.a.b", false],
    ["connector.*.latest_email", "connector.a.b.latest_email", false],
    ["client.get_*", "client.get_.x", false],
    // strings that are not stable tool ids match nothing
    ["client.*", "client.", false],
    ["client.*", "client.get location", false],
    ["client.*", "", false]
  ]

  it.effect("matches ids segment by segment", () =>
    Effect.gen(function*() {
      for (const [source, toolId, expected] of table) {
        const pattern = yield* parsed(source)
        assert.strictEqual(ToolPattern.matches(pattern, toolId), expected, `${source} ~ ${toolId}`)
        assert.strictEqual(ToolPattern.matches(toolId)(pattern), expected, `${source} ~ ${toolId} (data-last)`)
      }
    }))
})

describe("ToolPattern.regexp", () => {
  it.effect("the compiled matcher never lets * cross a dot, even on its own", () =>
    Effect.gen(function*() {
      const rows: ReadonlyArray<readonly [pattern: string, crossing: string, within: string]> = [
        ["client.*", "client.a.b", "client.a"],
        ["client.get_*", "client.get_.x", "client.get_x"],
        ["connector.*.latest_email", "connector.a.b.latest_email", "connector.a.latest_email"],
        ["connector.gmail.*", "connector.gmail.a.b", "connector.gmail.a"]
      ]
      for (const [source, crossing, within] of rows) {
        const pattern = yield* parsed(source)
        assert.isFalse(pattern.regexp.test(crossing), `${source} ~ ${crossing}`)
        assert.isTrue(pattern.regexp.test(within), `${source} ~ ${within}`)
      }
    }))
})
