import { assert, describe, it } from "@effect/vitest"
import { Serve } from "@parley/cli"
import { Effect } from "effect"

describe("Serve.settingsFromEnv", () => {
  it.effect("PARLEY_ACCEPT_DEFINITIONS turns accepting callers' definitions on only when it says true", () =>
    Effect.sync(() => {
      const accepts = (value: string | undefined) =>
        Serve.settingsFromEnv({ PARLEY_ACCEPT_DEFINITIONS: value }, ".parley").acceptDefinitions
      assert.strictEqual(accepts(undefined), false)
      assert.strictEqual(accepts(""), false)
      assert.strictEqual(accepts("false"), false)
      assert.strictEqual(accepts("1"), false)
      assert.strictEqual(accepts("true"), true)
      assert.strictEqual(accepts(" TRUE "), true)
    }))
})

describe("Serve.settingsFromEnv: PARLEY_LOG_LEVEL", () => {
  it.effect("warn unless it names a level (in any case): the request log is behind info", () =>
    Effect.sync(() => {
      const level = (value: string | undefined) =>
        Serve.settingsFromEnv({ PARLEY_LOG_LEVEL: value }, ".parley").logLevel
      assert.strictEqual(level(undefined), "warn")
      assert.strictEqual(level(""), "warn")
      assert.strictEqual(level("verbose"), "warn")
      assert.strictEqual(level("info"), "info")
      assert.strictEqual(level(" INFO "), "info")
      assert.strictEqual(level("debug"), "debug")
      assert.strictEqual(level("error"), "error")
      assert.deepStrictEqual(Serve.logLevels, ["error", "warn", "info", "debug"])
    }))
})
