import { assert, describe, it } from "@effect/vitest"
import { Ids, ParleyError } from "@parley/core"
import { Effect, Schema } from "effect"

interface Constructor {
  readonly kind: ParleyError.InvalidId["kind"]
  readonly make: (value: string) => Effect.Effect<string, ParleyError.InvalidId>
  readonly good: ReadonlyArray<string>
  readonly bad: ReadonlyArray<string>
}

const constructors: ReadonlyArray<Constructor> = [
  {
    kind: "sessionId",
    make: Ids.sessionId,
    good: ["ses_1", "ses_abc-DEF_09", "ses__"],
    bad: ["session-1", "ses_", "ses-1", "SES_1", "ses_a b", "ses_1\n", " ses_1", "turn_1", "cb_1", ""]
  },
  {
    kind: "turnId",
    make: Ids.turnId,
    good: ["turn_1", "turn_child-2"],
    bad: ["turn-1", "turn_", "t_1", "turn_1.2", "ses_1", ""]
  },
  {
    kind: "callbackId",
    make: Ids.callbackId,
    good: ["cb_1", "cb_approval"],
    bad: ["callback_1", "cb_", "cb 1", "cb_é", "turn_1", ""]
  }
]

describe("Ids session, turn and callback ids", () => {
  it.effect("accept well-formed ids and return them unchanged", () =>
    Effect.gen(function*() {
      for (const { good, make } of constructors) {
        for (const value of good) assert.strictEqual(yield* make(value), value)
      }
    }))

  it.effect("fail with InvalidId naming the kind and the value", () =>
    Effect.gen(function*() {
      for (const { bad, kind, make } of constructors) {
        for (const value of bad) {
          const error = yield* Effect.flip(make(value))
          assert.instanceOf(error, ParleyError.InvalidId, `${kind} ${JSON.stringify(value)}`)
          assert.strictEqual(error.kind, kind)
          assert.strictEqual(error.value, value)
          assert.strictEqual(error.module, "Ids")
          assert.strictEqual(error.method, kind)
          assert.isString(error.description)
          assert.include(error.message, kind)
          assert.include(error.message, JSON.stringify(value))
        }
      }
    }))

  it.effect("the schemas decode the same strings", () =>
    Effect.gen(function*() {
      assert.strictEqual<string>(yield* Schema.decodeUnknownEffect(Ids.SessionId)("ses_1"), "ses_1")
      yield* Schema.decodeUnknownEffect(Ids.SessionId)("session-1").pipe(Effect.flip)
      yield* Schema.decodeUnknownEffect(Ids.TurnId)(1).pipe(Effect.flip)
      yield* Schema.decodeUnknownEffect(Ids.CallbackId)("turn_1").pipe(Effect.flip)
      assert.throws(() => Ids.SessionId.make("session-1"))
    }))

  it.effect("newSessionId, newTurnId and newCallbackId produce fresh ids that decode", () =>
    Effect.gen(function*() {
      const sessions = [yield* Ids.newSessionId, yield* Ids.newSessionId]
      const turns = [yield* Ids.newTurnId, yield* Ids.newTurnId]
      const callbacks = [yield* Ids.newCallbackId, yield* Ids.newCallbackId]
      for (const id of sessions) {
        assert.match(id, /^ses_/)
        assert.strictEqual(yield* Ids.sessionId(id), id)
        assert.strictEqual(yield* Schema.decodeUnknownEffect(Ids.SessionId)(id), id)
      }
      for (const id of turns) {
        assert.match(id, /^turn_/)
        assert.strictEqual(yield* Ids.turnId(id), id)
      }
      for (const id of callbacks) {
        assert.match(id, /^cb_/)
        assert.strictEqual(yield* Ids.callbackId(id), id)
      }
      assert.notStrictEqual(sessions[0], sessions[1])
      assert.notStrictEqual(turns[0], turns[1])
      assert.notStrictEqual(callbacks[0], callbacks[1])
    }))

  it.effect("a fresh id is its prefix and 20 hex digits, every one of them random (no fixed digit, as a UUID has)", () =>
    Effect.gen(function*() {
      const ids = yield* Effect.all(Array.from({ length: 200 }, () => Ids.newTurnId))
      for (const id of ids) assert.match(id, /^turn_[0-9a-f]{20}$/)
      for (let digit = 0; digit < 20; digit++) {
        const seen = new Set(ids.map((id) => id.charAt("turn_".length + digit)))
        assert.isAbove(seen.size, 1, `digit ${digit} varies`)
      }
    }))
})

describe("Ids tool ids", () => {
  const accepted = [
    ["client.x", "client"],
    ["client.get_location", "client"],
    ["client.get-location2", "client"],
    ["agents.spawn", "agents"],
    ["agents.message", "agents"],
    ["agents.wait", "agents"],
    ["agents.interrupt", "agents"],
    ["connector.gmail.latest_email", "connector"],
    ["connector.google-drive.list_files", "connector"]
  ] as const

  const rejected = [
    "agents.fly",
    "agents.spawn.x",
    "agents",
    "client",
    "client.",
    "client.a.b",
    "client._x",
    "client.*",
    "client.bad name",
    "connector.gmail",
    "connector.gmail.latest_email.x",
    "connector..latest_email",
    "other.x",
    "Client.x",
    "gmail latest",
    " client.x",
    ""
  ]

  it.effect("accepts client.<name>, the agents builtins and connector.<source>.<tool>", () =>
    Effect.gen(function*() {
      for (const [value, namespace] of accepted) {
        const id = yield* Ids.toolId(value)
        assert.strictEqual<string>(id, value)
        assert.strictEqual(Ids.toolNamespace(id), namespace)
        assert.isTrue(Ids.toolIdPattern.test(value), value)
      }
    }))

  it.effect("rejects anything else with InvalidId", () =>
    Effect.gen(function*() {
      for (const value of rejected) {
        const error = yield* Effect.flip(Ids.toolId(value))
        assert.instanceOf(error, ParleyError.InvalidId, JSON.stringify(value))
        assert.strictEqual(error.kind, "toolId")
        assert.strictEqual(error.value, value)
        assert.isFalse(Ids.toolIdPattern.test(value), value)
      }
    }))

  it.effect("the builtins are exactly spawn, message, wait and interrupt", () =>
    Effect.sync(() => {
      assert.deepStrictEqual([...Ids.builtinTools], ["spawn", "message", "wait", "interrupt"])
      assert.deepStrictEqual([...Ids.toolNamespaces], ["client", "agents", "connector"])
    }))

  it.effect("clientToolId and connectorToolId build ids and check them", () =>
    Effect.gen(function*() {
      assert.strictEqual<string>(yield* Ids.clientToolId("get_location"), "client.get_location")
      assert.strictEqual<string>(yield* Ids.connectorToolId("gmail", "latest_email"), "connector.gmail.latest_email")

      const badClient = yield* Effect.flip(Ids.clientToolId("bad name"))
      assert.strictEqual(badClient.kind, "toolId")
      assert.strictEqual(badClient.value, "client.bad name")

      const badConnector = yield* Effect.flip(Ids.connectorToolId("gmail", ""))
      assert.strictEqual(badConnector.value, "connector.gmail.")
      const dotted = yield* Effect.flip(Ids.connectorToolId("g.mail", "latest"))
      assert.strictEqual(dotted.value, "connector.g.mail.latest")
    }))
})
