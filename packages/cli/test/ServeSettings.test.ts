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
