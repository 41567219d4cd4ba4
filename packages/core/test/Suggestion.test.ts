import { assert, describe, it } from "@effect/vitest"
import { Suggestion } from "@parley/core"

describe("Suggestion.closest", () => {
  it("suggests the known name a typo is closest to, and nothing when none is close", () => {
    assert.strictEqual(Suggestion.closest("remeber", ["_tag", "remember", "reason"]), "remember")
    assert.strictEqual(Suggestion.closest("requestID", ["input", "requestId"]), "requestId")
    assert.strictEqual(Suggestion.closest("permisions", ["name", "permissions", "model"]), "permissions")
    assert.isUndefined(Suggestion.closest("zzzzzzzz", ["_tag", "remember"]), "no name within three edits")
    assert.isUndefined(Suggestion.closest("remeber", []))
  })

  it("allows a third of a long name's length in edits; the first of equally close names wins", () => {
    assert.strictEqual(
      Suggestion.closest("client.get_locaton_now", ["client.get_location_now"]),
      "client.get_location_now"
    )
    assert.strictEqual(Suggestion.closest("ab", ["aa", "bb"]), "aa")
  })
})
