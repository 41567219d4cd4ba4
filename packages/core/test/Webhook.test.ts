import { assert, describe, it } from "@effect/vitest"
import { Webhook } from "@parley/core"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { createHmac } from "node:crypto"

const body = JSON.stringify({ id: "ses_a.3", type: "turn.ended" })
const now = 1_800_000_000

describe("Webhook signatures", () => {
  it.effect("signs HMAC-SHA256 over `${t}.${body}`, as node:crypto computes it, and verifies its own", () =>
    Effect.gen(function*() {
      const header = yield* Effect.promise(() => Webhook.signatureOf({ secrets: "whsec_a", body, timestamp: now }))
      const expected = createHmac("sha256", "whsec_a").update(`${now}.${body}`).digest("hex")
      assert.strictEqual(header, `t=${now},v1=${expected}`)
      yield* Webhook.verify({ secrets: "whsec_a", header, body, now })
      assert.isTrue(
        yield* Effect.promise(() => Webhook.isValid({ secrets: ["whsec_a"], header, body, now: now + 300 }))
      )
    }))

  it.effect("sign uses the clock; a request older than the tolerance is refused as expired", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now * 1000)
      const header = yield* Webhook.sign({ secrets: "whsec_a", body })
      assert.isTrue(header.startsWith(`t=${now},v1=`))
      yield* Webhook.verify({ secrets: "whsec_a", header, body })
      const late = yield* Effect.flip(Webhook.verify({ secrets: "whsec_a", header, body, now: now + 301 }))
      assert.strictEqual(late.reason, "expired")
      const shorter = yield* Effect.flip(
        Webhook.verify({ secrets: "whsec_a", header, body, now: now + 20, tolerance: 10 })
      )
      assert.strictEqual(shorter.reason, "expired")
    }))

  it.effect("a wrong secret, a tampered body or a missing header is refused, typed", () =>
    Effect.gen(function*() {
      const header = yield* Effect.promise(() => Webhook.signatureOf({ secrets: "whsec_a", body, timestamp: now }))
      const wrong = yield* Effect.flip(Webhook.verify({ secrets: "whsec_b", header, body, now }))
      assert.strictEqual(wrong._tag, "SignatureInvalid")
      assert.strictEqual(wrong.reason, "mismatch")
      const tampered = yield* Effect.flip(Webhook.verify({ secrets: "whsec_a", header, body: body + " ", now }))
      assert.strictEqual(tampered.reason, "mismatch")
      // A timestamp changed after signing breaks the signature too.
      const moved = header.replace(`t=${now}`, `t=${now + 1}`)
      assert.strictEqual(
        (yield* Effect.flip(Webhook.verify({ secrets: "whsec_a", header: moved, body, now }))).reason,
        "mismatch"
      )
      assert.strictEqual(
        (yield* Effect.flip(Webhook.verify({ secrets: "whsec_a", header: undefined, body, now }))).reason,
        "malformed"
      )
      assert.strictEqual(
        (yield* Effect.flip(Webhook.verify({ secrets: "whsec_a", header: "v1=abc", body, now }))).reason,
        "malformed"
      )
      assert.isFalse(yield* Effect.promise(() => Webhook.isValid({ secrets: "whsec_b", header, body, now })))
    }))

  it.effect("rotation: a request signed with two secrets verifies with either; old receivers keep working", () =>
    Effect.gen(function*() {
      const header = yield* Effect.promise(() =>
        Webhook.signatureOf({ secrets: ["whsec_new", "whsec_old"], body, timestamp: now })
      )
      assert.strictEqual(header.split(",").length, 3)
      yield* Webhook.verify({ secrets: "whsec_old", header, body, now })
      yield* Webhook.verify({ secrets: "whsec_new", header, body, now })
      // A receiver that knows both accepts a request signed with the old one only.
      const old = yield* Effect.promise(() => Webhook.signatureOf({ secrets: "whsec_old", body, timestamp: now }))
      yield* Webhook.verify({ secrets: ["whsec_new", "whsec_old"], header: old, body, now })
    }))
})
