import { assert, describe, it } from "@effect/vitest"
import { ToolSpec } from "@parley/core"
import { ToolAnnotations } from "@parley/tools"
import { Effect, Schema } from "effect"

describe("ToolAnnotations", () => {
  it.effect("is core's ToolAnnotations class, every hint false by default", () =>
    Effect.sync(() => {
      assert.strictEqual(ToolAnnotations.ToolAnnotations, ToolSpec.ToolAnnotations)
      assert.instanceOf(ToolAnnotations.none, ToolSpec.ToolAnnotations)
      assert.deepStrictEqual(
        [
          ToolAnnotations.none.readOnlyHint,
          ToolAnnotations.none.destructiveHint,
          ToolAnnotations.none.idempotentHint,
          ToolAnnotations.none.openWorldHint
        ],
        [false, false, false, false]
      )
      assert.isUndefined(ToolAnnotations.none.title)
    }))

  it.effect("has one constructor per hint", () =>
    Effect.sync(() => {
      assert.isTrue(ToolAnnotations.readOnly.readOnlyHint)
      assert.isFalse(ToolAnnotations.readOnly.destructiveHint)
      assert.isTrue(ToolAnnotations.destructive.destructiveHint)
      assert.isTrue(ToolAnnotations.idempotent.idempotentHint)
      assert.isTrue(ToolAnnotations.openWorld.openWorldHint)
      assert.strictEqual(ToolAnnotations.title("Location").title, "Location")
      const made = ToolAnnotations.make({ readOnlyHint: true, title: undefined })
      assert.deepStrictEqual(made, ToolAnnotations.readOnly)
      assert.strictEqual(ToolAnnotations.make(ToolAnnotations.readOnly), ToolAnnotations.readOnly)
    }))

  it.effect("combines hints, the last title winning", () =>
    Effect.sync(() => {
      const combined = ToolAnnotations.combine(
        ToolAnnotations.destructive,
        { title: "Send", openWorldHint: true },
        ToolAnnotations.title("Send an email")
      )
      assert.deepStrictEqual(
        Schema.encodeSync(ToolAnnotations.ToolAnnotations)(combined),
        {
          title: "Send an email",
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: false,
          openWorldHint: true
        }
      )
    }))
})
