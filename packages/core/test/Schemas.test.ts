import { assert, describe, it } from "@effect/vitest"
import {
  AgentSpec,
  Answer,
  Callback,
  Ids,
  ParleyError,
  Permissions,
  Principal,
  ToolSpec,
  Transport,
  TurnEvent,
  TurnState
} from "@parley/core"
import { DateTime, Duration, Effect, Result, Schema } from "effect"
import * as F from "./fixtures.js"

/** Encodes with `schema`, goes through JSON text, and decodes the JSON back with the same schema. */
const roundTrip = <A, I>(schema: Schema.Codec<A, I>, value: A) =>
  Effect.gen(function*() {
    const encoded = yield* Schema.encodeEffect(schema)(value)
    const json = JSON.parse(JSON.stringify(encoded)) as unknown
    return yield* Schema.decodeUnknownEffect(schema)(json)
  })

const assertSame = <A extends { readonly _tag: string }>(decoded: A, original: A) => {
  assert.strictEqual(decoded._tag, original._tag)
  assert.strictEqual(Object.getPrototypeOf(decoded), Object.getPrototypeOf(original), original._tag)
  assert.deepStrictEqual(decoded, original)
}

describe("Callback", () => {
  it.effect("a version-3 CallbackResolved (no requestId) upcasts unchanged and decodes without one", () =>
    Effect.gen(function*() {
      const resolved = new TurnEvent.CallbackResolved({
        ...common,
        seq: 4,
        callbackId: F.approvalId,
        resolution: "answered",
        answer: new Answer.AllowApproval()
      })
      const v3 = JSON.parse(JSON.stringify(yield* Schema.encodeEffect(TurnEvent.TurnEvent)(resolved)))
      const upcast = TurnEvent.upcast(3, v3)
      assert.deepStrictEqual(upcast, Result.succeed(v3))
      const decoded = yield* Schema.decodeUnknownEffect(TurnEvent.TurnEvent)(Result.getOrThrow(upcast))
      assert.isTrue(decoded._tag === "CallbackResolved" && decoded.requestId === undefined)
      // A request id that is not one is refused by the schema, as anywhere else.
      const bad = yield* Effect.result(
        Schema.decodeUnknownEffect(TurnEvent.TurnEvent)({ ...v3, requestId: "two words" })
      )
      assert.isTrue(Result.isFailure(bad))
    }))

  it.effect("round-trips every member through JSON with the union schema", () =>
    Effect.gen(function*() {
      for (const callback of F.callbacks) {
        const decoded = yield* roundTrip(Callback.Callback, callback)
        assertSame(decoded, callback)
      }
      const approval = yield* roundTrip(Callback.Callback, F.approval)
      assert.instanceOf(approval, Callback.OpenApproval)
      assert.strictEqual(approval.kind, "approval")
      if (approval._tag !== "OpenApproval") return assert.fail("expected an OpenApproval")
      assert.instanceOf(approval.request, Callback.ApprovalRequest)
      assert.instanceOf(approval.request.decidedBy, Permissions.RuleMatched)
      assert.isTrue(DateTime.isDateTime(approval.openedAt))
      assert.strictEqual(DateTime.toEpochMillis(approval.openedAt), 0)
      assert.strictEqual(approval.expiresAt && DateTime.toEpochMillis(approval.expiresAt), 3_600_000)

      const byDefault = yield* roundTrip(Callback.Callback, F.approvalByDefault)
      assert.instanceOf(byDefault, Callback.OpenApproval)
      assert.isUndefined(byDefault.expiresAt)

      const clientTool = yield* roundTrip(Callback.Callback, F.clientToolCall)
      assert.instanceOf(clientTool, Callback.OpenClientToolCall)
      assert.strictEqual(clientTool.kind, "client_tool")

      const signIn = yield* roundTrip(Callback.Callback, F.signIn)
      assert.instanceOf(signIn, Callback.OpenSignIn)
      assert.strictEqual(signIn.kind, "sign_in")
    }))

  it.effect("encodes times as ISO strings and carries the kind", () =>
    Effect.gen(function*() {
      const encoded = yield* Schema.encodeEffect(Callback.Callback)(F.approval)
      assert.strictEqual(encoded._tag, "OpenApproval")
      assert.strictEqual(encoded.kind, "approval")
      assert.strictEqual(encoded.openedAt, "1970-01-01T00:00:00.000Z")
      assert.strictEqual(encoded.id, "cb_approval")
    }))

  it.effect("isCallback recognises members only", () =>
    Effect.sync(() => {
      for (const callback of F.callbacks) assert.isTrue(Callback.isCallback(callback))
      assert.isFalse(Callback.isCallback(F.allow))
      assert.isFalse(Callback.isCallback({ _tag: "OpenApproval" }))
    }))

  it.effect("rejects a wrong tag, a bad id, a wrong kind and an empty sign-in", () =>
    Effect.gen(function*() {
      const encoded = yield* Schema.encodeEffect(Callback.OpenApproval)(F.approval)
      const decode = Schema.decodeUnknownEffect(Callback.Callback)
      yield* decode({ ...encoded, _tag: "OpenQuestion" }).pipe(Effect.flip)
      yield* decode({ ...encoded, sessionId: "session-1" }).pipe(Effect.flip)
      yield* decode({ ...encoded, id: "callback_1" }).pipe(Effect.flip)
      yield* decode({ ...encoded, turnId: "ses_1" }).pipe(Effect.flip)
      yield* decode({ ...encoded, kind: "client_tool" }).pipe(Effect.flip)
      yield* decode({ ...encoded, openedAt: "yesterday" }).pipe(Effect.flip)
      yield* decode({ ...encoded, request: { ...encoded.request, tool: { id: "client bad", name: "x" } } }).pipe(
        Effect.flip
      )
      const signIn = yield* Schema.encodeEffect(Callback.Callback)(F.signIn)
      yield* decode({ ...signIn, requests: [] }).pipe(Effect.flip)
      // and the untouched value decodes, so the failures above come from the changes
      const ok = yield* decode(encoded)
      assert.strictEqual(ok._tag, "OpenApproval")
    }))
})

describe("Answer", () => {
  it.effect("round-trips every member through JSON with the union schema", () =>
    Effect.gen(function*() {
      for (const answer of F.answers) {
        const decoded = yield* roundTrip(Answer.Answer, answer)
        assertSame(decoded, answer)
      }
      const allow = yield* roundTrip(Answer.Answer, F.allow)
      assert.instanceOf(allow, Answer.AllowApproval)

      const deny = yield* roundTrip(Answer.Answer, F.deny)
      assert.instanceOf(deny, Answer.DenyApproval)
      if (deny._tag !== "DenyApproval") return assert.fail("expected a DenyApproval")
      assert.isUndefined(deny.reason)

      const denyWithReason = yield* roundTrip(Answer.Answer, F.denyWithReason)
      if (denyWithReason._tag !== "DenyApproval") return assert.fail("expected a DenyApproval")
      assert.strictEqual(denyWithReason.reason, "not today")

      const success = yield* roundTrip(Answer.Answer, F.toolSuccess)
      if (success._tag !== "ClientToolResult") return assert.fail("expected a ClientToolResult")
      assert.isFalse(success.isFailure)
      assert.deepStrictEqual(success.result, { city: "Lyon", country: "France" })

      const failure = yield* roundTrip(Answer.Answer, F.toolFailure)
      if (failure._tag !== "ClientToolResult") return assert.fail("expected a ClientToolResult")
      assert.isTrue(failure.isFailure)
      assert.deepStrictEqual(failure.result, { message: "no GPS fix" })

      const signIn = yield* roundTrip(Answer.Answer, F.signInAnswer)
      assert.instanceOf(signIn, Answer.SignInAnswer)
      if (signIn._tag !== "SignInAnswer") return assert.fail("expected a SignInAnswer")
      assert.deepStrictEqual(signIn.connected, ["req_gmail"])
      assert.deepStrictEqual(signIn.denied, ["req_drive"])
    }))

  it.effect("SignInAnswer fills missing lists with []", () =>
    Effect.gen(function*() {
      const decoded = yield* Schema.decodeUnknownEffect(Answer.Answer)({ _tag: "SignInAnswer", denied: ["req_gmail"] })
      assert.instanceOf(decoded, Answer.SignInAnswer)
      assert.deepStrictEqual(decoded, new Answer.SignInAnswer({ connected: [], denied: ["req_gmail"] }))
    }))

  it.effect("rejects a wrong tag and KeepCallbackOpen (never sent)", () =>
    Effect.gen(function*() {
      const decode = Schema.decodeUnknownEffect(Answer.Answer)
      yield* decode({ _tag: "Allow" }).pipe(Effect.flip)
      yield* decode({ _tag: "KeepCallbackOpen" }).pipe(Effect.flip)
      yield* decode({ _tag: "ClientToolResult", result: 1 }).pipe(Effect.flip)
      yield* decode({ _tag: "DenyApproval", reason: 42 }).pipe(Effect.flip)
      const ok = yield* decode({ _tag: "AllowApproval" })
      assert.instanceOf(ok, Answer.AllowApproval)
    }))
})

const common = { sessionId: F.sessionId, turnId: F.turnId, at: F.t0 }

const events: ReadonlyArray<TurnEvent.TurnEvent> = [
  new TurnEvent.TurnStarted({ ...common, seq: 0, input: "Where am I?" }),
  new TurnEvent.MessageDelta({ ...common, seq: 1, messageId: "msg_1", delta: "Lyo" }),
  new TurnEvent.MessageCompleted({ ...common, seq: 2, messageId: "msg_1", text: "Lyon" }),
  new TurnEvent.ToolCallStarted({
    ...common,
    seq: 3,
    toolCallId: "call_3",
    toolId: Ids.ToolId.make("client.get_location"),
    name: "get_location",
    arguments: { precise: false }
  }),
  new TurnEvent.ToolCallCompleted({
    ...common,
    seq: 4,
    toolCallId: "call_3",
    toolId: Ids.ToolId.make("client.get_location"),
    name: "get_location",
    isFailure: false,
    result: { city: "Lyon" }
  }),
  ...F.callbacks.map((callback, i) => new TurnEvent.CallbackOpened({ ...common, seq: 5 + i, callback })),
  new TurnEvent.CallbackResolved({
    ...common,
    seq: 9,
    callbackId: F.approvalId,
    resolution: "answered",
    answer: F.denyWithReason
  }),
  new TurnEvent.CallbackResolved({
    ...common,
    seq: 10,
    callbackId: F.signInId,
    resolution: "answered",
    answer: F.signInAnswer
  }),
  new TurnEvent.CallbackResolved({ ...common, seq: 11, callbackId: F.clientToolId, resolution: "expired" }),
  new TurnEvent.CallbackResolved({ ...common, seq: 12, callbackId: F.clientToolId, resolution: "turn_ended" }),
  new TurnEvent.CallbackResolved({ ...common, seq: 13, callbackId: F.clientToolId, resolution: "cancelled" }),
  new TurnEvent.SubagentStarted({
    ...common,
    seq: 14,
    childSessionId: F.childSessionId,
    childTurnId: F.childTurnId,
    agent: "researcher",
    task: "find the weather"
  }),
  ...F.finals.map((state, i) =>
    new TurnEvent.SubagentEnded({
      ...common,
      seq: 15 + i,
      childSessionId: F.childSessionId,
      childTurnId: F.childTurnId,
      state
    })
  ),
  new TurnEvent.TurnBlocked({ ...common, seq: 18, callbackIds: [F.approvalId, F.signInId] }),
  ...F.finals.map((state, i) => new TurnEvent.TurnEnded({ ...common, seq: 19 + i, state })),
  new TurnEvent.TurnQueued({
    ...common,
    seq: 22,
    input: "find the weather",
    cause: new TurnEvent.TurnCause({ sessionId: F.sessionId, turnId: F.turnId, toolCallId: "call_7" })
  }),
  new TurnEvent.ModelStepStarted({ ...common, seq: 23, messageId: "msg_23", step: 0 }),
  new TurnEvent.MessageAborted({ ...common, seq: 24, messageId: "msg_23" }),
  new TurnEvent.ToolExecutionStarted({
    ...common,
    seq: 25,
    toolCallId: "call_3",
    toolId: Ids.ToolId.make("connector.gmail.latest_email")
  }),
  new TurnEvent.CancelRequested({ ...common, seq: 26 }),
  new TurnEvent.TurnStarted({ ...common, seq: 27, input: "again", inherited: [F.approvalId] }),
  new TurnEvent.CallbackResolved({
    ...common,
    seq: 28,
    callbackId: F.approvalId,
    resolution: "answered",
    answer: new Answer.AllowApproval({ arguments: { precision: "street" }, remember: "tree" }),
    answeredBy: new Principal.ApiKey({
      tenant: "acme",
      keyId: "key_1",
      onBehalfOf: new Principal.Handler({ name: "approveReads" })
    }),
    requestId: "answer-7"
  }),
  new TurnEvent.ApprovalGranted({
    ...common,
    seq: 29,
    grantId: "grant_29",
    toolPattern: "client.get_location",
    decision: "allow",
    scope: "tree",
    grantedBy: new Principal.Client({ label: "alice" }),
    callbackId: F.approvalId
  }),
  new TurnEvent.GrantRevoked({ ...common, seq: 30, grantId: "grant_29", revokedBy: new Principal.Grant({ id: "x" }) })
]

describe("TurnEvent", () => {
  it.effect("a version-2 ToolCallStarted (no decidedBy) upcasts unchanged and decodes; a version-3 one keeps it", () =>
    Effect.gen(function*() {
      const started = new TurnEvent.ToolCallStarted({
        ...common,
        seq: 3,
        toolCallId: "call_1",
        toolId: "client.delete_all" as never,
        name: "delete_all",
        arguments: {}
      })
      const v2 = JSON.parse(JSON.stringify(yield* Schema.encodeEffect(TurnEvent.TurnEvent)(started)))
      assert.strictEqual(TurnEvent.schemaVersion, 5)
      const upcast = TurnEvent.upcast(2, v2)
      assert.deepStrictEqual(upcast, Result.succeed(v2))
      const decoded = yield* Schema.decodeUnknownEffect(TurnEvent.TurnEvent)(Result.getOrThrow(upcast))
      assert.isTrue(decoded._tag === "ToolCallStarted" && decoded.decidedBy === undefined)
      const decided = new TurnEvent.ToolCallStarted({
        ...started,
        decidedBy: new Principal.Policy({ rule: "rules[1] client.delete_all: deny" })
      })
      const again = yield* roundTrip(TurnEvent.TurnEvent, decided)
      assert.deepStrictEqual(again, decided)
    }))

  it.effect("round-trips every member through JSON with the union schema", () =>
    Effect.gen(function*() {
      const tags = new Set(events.map((event) => event._tag))
      assert.strictEqual(tags.size, 18)
      assert.strictEqual(TurnEvent.TurnEvent.members.length, 18)
      for (const event of events) {
        const decoded = yield* roundTrip(TurnEvent.TurnEvent, event)
        assertSame(decoded, event)
        assert.strictEqual(decoded.seq, event.seq)
      }
    }))

  it.effect("keeps the nested callback, answer and final state classes", () =>
    Effect.gen(function*() {
      for (const callback of F.callbacks) {
        const opened = yield* roundTrip(
          TurnEvent.TurnEvent,
          new TurnEvent.CallbackOpened({ ...common, seq: 1, callback })
        )
        if (opened._tag !== "CallbackOpened") return assert.fail("expected CallbackOpened")
        assert.strictEqual(Object.getPrototypeOf(opened.callback), Object.getPrototypeOf(callback))
        assert.strictEqual(opened.callback.id, callback.id)
      }

      const answered = yield* roundTrip(TurnEvent.TurnEvent, events[9]!)
      if (answered._tag !== "CallbackResolved") return assert.fail("expected CallbackResolved")
      assert.strictEqual(answered.resolution, "answered")
      assert.instanceOf(answered.answer, Answer.DenyApproval)

      const expired = yield* roundTrip(TurnEvent.TurnEvent, events[11]!)
      if (expired._tag !== "CallbackResolved") return assert.fail("expected CallbackResolved")
      assert.strictEqual(expired.resolution, "expired")
      assert.isUndefined(expired.answer)

      for (const state of F.finals) {
        const ended = yield* roundTrip(TurnEvent.TurnEvent, new TurnEvent.TurnEnded({ ...common, seq: 1, state }))
        if (ended._tag !== "TurnEnded") return assert.fail("expected TurnEnded")
        assert.strictEqual(Object.getPrototypeOf(ended.state), Object.getPrototypeOf(state))
        assert.deepStrictEqual(ended.state, state)
        const child = yield* roundTrip(
          TurnEvent.TurnEvent,
          new TurnEvent.SubagentEnded({
            ...common,
            seq: 1,
            childSessionId: F.childSessionId,
            childTurnId: F.childTurnId,
            state
          })
        )
        if (child._tag !== "SubagentEnded") return assert.fail("expected SubagentEnded")
        assert.strictEqual(Object.getPrototypeOf(child.state), Object.getPrototypeOf(state))
        assert.deepStrictEqual(child.state, state)
      }
      const failed = yield* roundTrip(
        TurnEvent.TurnEvent,
        new TurnEvent.TurnEnded({ ...common, seq: 1, state: F.failed })
      )
      if (failed._tag !== "TurnEnded" || failed.state._tag !== "Failed") return assert.fail("expected a Failed end")
      assert.instanceOf(failed.state.error, ParleyError.ModelFailure)
      assert.isTrue(ParleyError.isParleyError(failed.state.error))
    }))

  it.effect("rejects a wrong tag, a bad id, a Blocked end state and an unknown resolution", () =>
    Effect.gen(function*() {
      const decode = Schema.decodeUnknownEffect(TurnEvent.TurnEvent)
      const started = yield* Schema.encodeEffect(TurnEvent.TurnEvent)(events[0]!)
      yield* decode({ ...started, _tag: "TurnBegan" }).pipe(Effect.flip)
      yield* decode({ ...started, sessionId: "session-1" }).pipe(Effect.flip)
      yield* decode({ ...started, seq: 1.5 }).pipe(Effect.flip)

      const ended = yield* Schema.encodeEffect(TurnEvent.TurnEvent)(
        [...events].reverse().find((event) => event._tag === "TurnEnded")!
      )
      const blocked = yield* Schema.encodeEffect(TurnState.TurnState)(F.blocked)
      yield* decode({ ...ended, state: blocked }).pipe(Effect.flip)

      const resolved = yield* Schema.encodeEffect(TurnEvent.TurnEvent)(events[11]!)
      yield* decode({ ...resolved, resolution: "forgotten" }).pipe(Effect.flip)

      assert.strictEqual((yield* decode(started))._tag, "TurnStarted")
      assert.strictEqual((yield* decode(ended))._tag, "TurnEnded")
      assert.strictEqual((yield* decode(resolved))._tag, "CallbackResolved")
    }))
})

describe("TurnState", () => {
  it.effect("round-trips every member through JSON with the union schema", () =>
    Effect.gen(function*() {
      const states: ReadonlyArray<TurnState.TurnState> = [F.completed, F.blocked, F.failed, F.cancelled]
      for (const state of states) {
        const decoded = yield* roundTrip(TurnState.TurnState, state)
        assertSame(decoded, state)
      }
      const blocked = yield* roundTrip(TurnState.TurnState, F.blocked)
      if (blocked._tag !== "Blocked") return assert.fail("expected Blocked")
      assert.strictEqual(blocked.cursor, 7)
      assert.deepStrictEqual(blocked.callbacks.map((cb) => cb._tag), [
        "OpenApproval",
        "OpenClientToolCall",
        "OpenSignIn"
      ])
      assert.instanceOf(blocked.callbacks[2], Callback.OpenSignIn)

      for (const error of F.errors) {
        const failed = new TurnState.Failed({ sessionId: F.sessionId, turnId: F.turnId, error })
        const decoded = yield* roundTrip(TurnState.TurnState, failed)
        if (decoded._tag !== "Failed") return assert.fail("expected Failed")
        assert.strictEqual(Object.getPrototypeOf(decoded.error), Object.getPrototypeOf(error))
        assert.deepStrictEqual(decoded, failed)
      }
    }))

  it.effect("rejects an unknown state and a Failed without a ParleyError", () =>
    Effect.gen(function*() {
      const decode = Schema.decodeUnknownEffect(TurnState.TurnState)
      yield* decode({ _tag: "Running", sessionId: "ses_1", turnId: "turn_1" }).pipe(Effect.flip)
      yield* decode({ _tag: "Failed", sessionId: "ses_1", turnId: "turn_1", error: { _tag: "AiError" } }).pipe(
        Effect.flip
      )
      yield* decode({ _tag: "Completed", sessionId: "ses_1", turnId: "turn-1", text: "" }).pipe(Effect.flip)
      const ok = yield* decode({ _tag: "Cancelled", sessionId: "ses_1", turnId: "turn_1" })
      assert.instanceOf(ok, TurnState.Cancelled)
    }))
})

describe("ParleyError", () => {
  it.effect("round-trips every member through JSON with the union schema", () =>
    Effect.gen(function*() {
      assert.strictEqual(F.errors.length, ParleyError.ParleyError.members.length)
      assert.strictEqual(new Set(F.errors.map((error) => error._tag)).size, ParleyError.ParleyError.members.length)
      for (const error of F.errors) {
        const decoded = yield* roundTrip(ParleyError.ParleyError, error)
        assertSame(decoded, error)
        assert.instanceOf(decoded, Error)
        assert.isTrue(ParleyError.isParleyError(decoded))
        assert.strictEqual(decoded.message, error.message)
      }
    }))

  it.effect("carries a cause as a defect", () =>
    Effect.gen(function*() {
      const error = new ParleyError.TransportFailure({
        module: "HttpTransport",
        method: "events",
        cause: new Error("ECONNREFUSED")
      })
      const decoded = yield* roundTrip(ParleyError.ParleyError, error)
      assert.instanceOf(decoded, ParleyError.TransportFailure)
      assert.instanceOf(decoded.cause, Error)
      assert.strictEqual((decoded.cause as Error).message, "ECONNREFUSED")
    }))

  it.effect("rejects an unknown tag and a wrong field", () =>
    Effect.gen(function*() {
      const decode = Schema.decodeUnknownEffect(ParleyError.ParleyError)
      yield* decode({ _tag: "Boom", module: "X", method: "y" }).pipe(Effect.flip)
      yield* decode({ _tag: "InvalidId", module: "Ids", method: "x", kind: "userId", value: "u" }).pipe(Effect.flip)
      yield* decode({ _tag: "PolicyInvalid", module: "P", method: "v", issues: "one" }).pipe(Effect.flip)
      const ok = yield* decode({ _tag: "TransportFailure", module: "X", method: "y" })
      assert.instanceOf(ok, ParleyError.TransportFailure)
    }))
})

const lookup = new ToolSpec.ToolSpec({
  id: Ids.ToolId.make("client.get_location"),
  name: "get_location",
  description: "The user's current location.",
  parameters: { type: "object", properties: { precise: { type: "boolean" } } },
  success: { type: "object", properties: { city: { type: "string" } } },
  annotations: new ToolSpec.ToolAnnotations({ readOnlyHint: true, title: "Location" })
})

const send = new ToolSpec.ToolSpec({
  id: Ids.ToolId.make("connector.gmail.send_email"),
  name: "send_email",
  description: "Sends an email.",
  parameters: { type: "object" },
  failure: { type: "string" }
})

describe("AgentSpec", () => {
  const researcher = AgentSpec.make({
    name: "researcher",
    description: "Finds things out.",
    instructions: "Search, then summarise.",
    tools: [lookup],
    connectors: ["drive"],
    timeouts: new AgentSpec.CallbackTimeouts({ approval: Duration.seconds(90), clientTool: Duration.millis(250) })
  })
  const writer = AgentSpec.make({
    name: "writer",
    model: "mistral-small-latest",
    instructions: "Write.",
    subagents: [AgentSpec.make({ name: "proofreader", instructions: "Check spelling." })],
    permissions: new Permissions.PermissionPolicy({ default: "deny" })
  })
  const root = AgentSpec.make({
    name: "assistant",
    model: "mistral-large-latest",
    instructions: "Use your tools. Answer in one short sentence.",
    tools: [lookup, send],
    connectors: ["gmail"],
    subagents: [researcher, writer],
    permissions: new Permissions.PermissionPolicy({
      default: "allow",
      rules: [
        new Permissions.PermissionRule({ tools: ["connector.gmail.*"], decision: "ask" }),
        new Permissions.PermissionRule({ tools: ["agents.spawn"], decision: "deny" })
      ]
    }),
    builtins: new AgentSpec.Builtins({ subagents: true }),
    timeouts: new AgentSpec.CallbackTimeouts({ approval: Duration.minutes(5) })
  })

  it.effect("round-trips a tree with tools, permissions and timeouts through JSON", () =>
    Effect.gen(function*() {
      const encoded = yield* Schema.encodeEffect(AgentSpec.AgentSpec)(root)
      const json = JSON.parse(JSON.stringify(encoded)) as AgentSpec.AgentSpecEncoded
      assert.deepStrictEqual(json.timeouts, { approval: 300_000, clientTool: 3_600_000 })
      assert.deepStrictEqual(json.subagents?.[0]?.timeouts, { approval: 90_000, clientTool: 250 })
      assert.strictEqual(json.subagents?.[1]?.subagents?.[0]?.name, "proofreader")

      const decoded = yield* Schema.decodeUnknownEffect(AgentSpec.AgentSpec)(json)
      // `make` writes absent optionals as `undefined`; the decoded value leaves them out: compare field by field
      assert.strictEqual(decoded.name, "assistant")
      assert.strictEqual(decoded.model, "mistral-large-latest")
      assert.strictEqual(decoded.instructions, root.instructions)
      assert.deepStrictEqual(decoded.connectors, ["gmail"])
      assert.deepStrictEqual(decoded.tools, root.tools)
      assert.instanceOf(decoded.tools[0], ToolSpec.ToolSpec)
      assert.instanceOf(decoded.tools[0]!.annotations, ToolSpec.ToolAnnotations)
      assert.isTrue(decoded.tools[0]!.annotations.readOnlyHint)
      assert.isFalse(decoded.tools[1]!.annotations.readOnlyHint)
      assert.instanceOf(decoded.permissions, Permissions.PermissionPolicy)
      assert.deepStrictEqual(decoded.permissions, root.permissions)
      assert.instanceOf(decoded.permissions!.rules[0], Permissions.PermissionRule)
      assert.deepStrictEqual(decoded.builtins, root.builtins)
      assert.instanceOf(decoded.timeouts, AgentSpec.CallbackTimeouts)
      assert.isTrue(Duration.equals(decoded.timeouts.approval, Duration.minutes(5)))
      assert.isTrue(Duration.equals(decoded.timeouts.clientTool, Duration.hours(1)))

      const [decodedResearcher, decodedWriter] = decoded.subagents
      assert.strictEqual(decodedResearcher!.name, "researcher")
      assert.strictEqual(decodedResearcher!.description, "Finds things out.")
      assert.isUndefined(decodedResearcher!.model)
      assert.isUndefined(decodedResearcher!.permissions)
      assert.isTrue(Duration.equals(decodedResearcher!.timeouts.approval, Duration.seconds(90)))
      assert.isTrue(Duration.equals(decodedResearcher!.timeouts.clientTool, Duration.millis(250)))
      assert.strictEqual(decodedWriter!.model, "mistral-small-latest")
      assert.strictEqual(decodedWriter!.permissions!.default, "deny")
      assert.deepStrictEqual(decodedWriter!.permissions!.rules, [])
      assert.strictEqual(decodedWriter!.subagents[0]!.name, "proofreader")
      assert.deepStrictEqual(decodedWriter!.subagents[0]!.subagents, [])

      // the decoded value encodes to the same JSON: nothing is lost
      const again = yield* Schema.encodeEffect(AgentSpec.AgentSpec)(decoded)
      assert.deepStrictEqual(JSON.parse(JSON.stringify(again)), json)
    }))

  it.effect("decodes a minimal spec with the defaults", () =>
    Effect.gen(function*() {
      const decoded = yield* Schema.decodeUnknownEffect(AgentSpec.AgentSpec)({ name: "bare" })
      assert.strictEqual(decoded.instructions, "")
      assert.deepStrictEqual(decoded.tools, [])
      assert.deepStrictEqual(decoded.connectors, [])
      assert.deepStrictEqual(decoded.subagents, [])
      assert.isUndefined(decoded.permissions)
      assert.isUndefined(decoded.builtins.subagents)
      assert.isTrue(Duration.equals(decoded.timeouts.approval, Duration.hours(1)))
      assert.isTrue(Duration.equals(decoded.timeouts.clientTool, Duration.hours(1)))
      assert.isFalse(AgentSpec.hasSubagentTools(decoded))
    }))

  it.effect("hasSubagentTools follows subagents unless builtins say otherwise", () =>
    Effect.sync(() => {
      assert.isTrue(AgentSpec.hasSubagentTools(root))
      assert.isTrue(AgentSpec.hasSubagentTools(AgentSpec.make({ name: "a", subagents: [researcher] })))
      assert.isFalse(
        AgentSpec.hasSubagentTools(
          AgentSpec.make({ name: "a", subagents: [researcher], builtins: new AgentSpec.Builtins({ subagents: false }) })
        )
      )
      assert.isFalse(AgentSpec.hasSubagentTools(researcher))
    }))

  it.effect("rejects a bad name, a bad tool id, a bad decision and a nested bad subagent", () =>
    Effect.gen(function*() {
      const decode = Schema.decodeUnknownEffect(AgentSpec.AgentSpec)
      const json = yield* Schema.encodeEffect(AgentSpec.AgentSpec)(root)
      yield* decode({ ...json, name: "my agent" }).pipe(Effect.flip)
      yield* decode({ ...json, tools: [{ ...json.tools![0]!, id: "get_location" }] }).pipe(Effect.flip)
      yield* decode({ ...json, permissions: { default: "maybe" } }).pipe(Effect.flip)
      yield* decode({ ...json, subagents: [{ name: "" }] }).pipe(Effect.flip)
      yield* decode({ ...json, timeouts: { approval: "1 hour" } }).pipe(Effect.flip)
      const ok = yield* decode(json)
      assert.strictEqual(ok.name, "assistant")
    }))
})

describe("ToolSpec", () => {
  it.effect("runsIn defaults to client and round-trips both values through JSON", () =>
    Effect.gen(function*() {
      assert.strictEqual(lookup.runsIn, "client")
      const runtime = new ToolSpec.ToolSpec({ ...lookup, runsIn: "runtime" })
      const decoded = yield* roundTrip(ToolSpec.ToolSpec, runtime)
      assert.instanceOf(decoded, ToolSpec.ToolSpec)
      assert.strictEqual(decoded.runsIn, "runtime")
      assert.deepStrictEqual(decoded, runtime)
      assert.strictEqual((yield* roundTrip(ToolSpec.ToolSpec, lookup)).runsIn, "client")
      const encoded = yield* Schema.encodeEffect(ToolSpec.ToolSpec)(runtime)
      assert.strictEqual(encoded.runsIn, "runtime")
    }))

  it.effect("decodes a spec stored before runsIn existed as a client tool, in an agent's tree too", () =>
    Effect.gen(function*() {
      // the encoded form of a ToolSpec as logs and tree headers held it before the field was added
      const old = {
        id: "client.lookup_price",
        name: "lookup_price",
        description: "Price of one product.",
        parameters: { type: "object", properties: { product: { type: "string" } }, required: ["product"] },
        annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
      }
      const decoded = yield* Schema.decodeUnknownEffect(ToolSpec.ToolSpec)(old)
      assert.strictEqual(decoded.runsIn, "client")
      assert.isTrue(decoded.annotations.idempotentHint)
      const agent = yield* Schema.decodeUnknownEffect(AgentSpec.AgentSpec)({
        name: "shop",
        tools: [old],
        subagents: [{ name: "researcher", tools: [old] }]
      })
      assert.strictEqual(agent.tools[0]!.runsIn, "client")
      assert.strictEqual(agent.subagents[0]!.tools[0]!.runsIn, "client")
    }))

  it.effect("rejects an unknown runsIn", () =>
    Effect.gen(function*() {
      const json = yield* Schema.encodeEffect(ToolSpec.ToolSpec)(lookup)
      yield* Schema.decodeUnknownEffect(ToolSpec.ToolSpec)({ ...json, runsIn: "server" }).pipe(Effect.flip)
    }))
})

describe("Transport schemas", () => {
  it.effect("SessionInfo and TurnRef round-trip through JSON", () =>
    Effect.gen(function*() {
      const info = new Transport.SessionInfo({
        sessionId: F.childSessionId,
        agent: "researcher",
        parentSessionId: F.sessionId,
        createdAt: F.t1
      })
      const decodedInfo = yield* roundTrip(Transport.SessionInfo, info)
      assert.instanceOf(decodedInfo, Transport.SessionInfo)
      assert.deepStrictEqual(decodedInfo, info)

      const ref = new Transport.TurnRef({ sessionId: F.sessionId, turnId: F.turnId, cursor: 3 })
      const decodedRef = yield* roundTrip(Transport.TurnRef, ref)
      assert.instanceOf(decodedRef, Transport.TurnRef)
      assert.deepStrictEqual(decodedRef, ref)

      yield* Schema.decodeUnknownEffect(Transport.TurnRef)({ sessionId: "ses_1", turnId: "turn_1", cursor: -0.5 }).pipe(
        Effect.flip
      )
    }))
})
