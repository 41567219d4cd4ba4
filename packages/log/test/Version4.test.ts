import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Ids, Permissions, Principal, ToolSpec, TurnEvent } from "@parley/core"
import { TreeState } from "@parley/log"
import { ArgumentCondition } from "@parley/policy"
import { DateTime, Effect, Result, Schema } from "effect"

// A log written at schema version 4 — before conditions on arguments: its rules carry no `when`, its answers no
// `rememberWhen`, its grants no `when` — still folds, and its grant decides every call of its tool, as it did.

const root = Ids.SessionId.make("ses_root")
const at = "2023-11-14T22:13:20.000Z"
const where = { sessionId: "ses_root", turnId: "turn_1", at }
const sendEmail = { id: "client.send_email", name: "send_email" }
const annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }

/** The events as a version-4 store holds them (encoded JSON). */
const version4: ReadonlyArray<unknown> = [
  { _tag: "TurnQueued", ...where, seq: 0, input: "Mail the team." },
  { _tag: "TurnStarted", ...where, seq: 1, input: "Mail the team.", inherited: [] },
  {
    _tag: "ToolCallStarted",
    ...where,
    seq: 2,
    toolCallId: "call_1",
    toolId: sendEmail.id,
    name: sendEmail.name,
    arguments: { to: "team@corp.com" }
  },
  {
    _tag: "CallbackOpened",
    ...where,
    seq: 3,
    callback: {
      _tag: "OpenApproval",
      id: "cb_1",
      sessionId: "ses_root",
      turnId: "turn_1",
      rootTurnId: "turn_1",
      openedAt: at,
      kind: "approval",
      request: {
        tool: { ...sendEmail, annotations },
        toolCallId: "call_1",
        arguments: { to: "team@corp.com" },
        decidedBy: {
          _tag: "RuleMatched",
          index: 0,
          pattern: "client.send_email",
          rule: { tools: ["client.send_email"], decision: "ask" }
        }
      }
    }
  },
  {
    _tag: "CallbackResolved",
    ...where,
    seq: 4,
    callbackId: "cb_1",
    resolution: "answered",
    answer: { _tag: "AllowApproval", remember: "session" },
    answeredBy: { _tag: "Client", label: "alice" }
  },
  {
    _tag: "ApprovalGranted",
    ...where,
    seq: 5,
    grantId: "grant_1",
    toolPattern: "client.send_email",
    decision: "allow",
    scope: "session",
    grantedBy: { _tag: "Client", label: "alice" },
    callbackId: "cb_1"
  }
]

const header: TreeState.Header = {
  treeId: root,
  agent: AgentSpec.make({
    name: "mailer",
    model: "scripted",
    instructions: "Send what you are asked to send.",
    tools: [
      new ToolSpec.ToolSpec({
        id: Ids.ToolId.make(sendEmail.id),
        name: sendEmail.name,
        description: "Sends an email.",
        parameters: { type: "object", properties: { to: { type: "string" } }, required: ["to"] }
      })
    ],
    permissions: new Permissions.PermissionPolicy({
      default: "allow",
      rules: [new Permissions.PermissionRule({ tools: ["client.send_email"], decision: "ask" })]
    })
  }),
  createdAt: DateTime.makeUnsafe(at)
}

const decodeAt = (version: number, encoded: ReadonlyArray<unknown>) =>
  Effect.forEach(encoded, (event) =>
    Effect.flatMap(
      Effect.fromResult(Result.mapError(TurnEvent.upcast(version, event), (reason) => new Error(reason))),
      Schema.decodeUnknownEffect(TurnEvent.TurnEvent)
    ))

describe("a log written at schema version 4", () => {
  it.effect("upcasts unchanged, decodes and folds; its grant has no conditions and decides every call of its tool", () =>
    Effect.gen(function*() {
      assert.strictEqual(TurnEvent.schemaVersion, 5)
      for (const event of version4) assert.deepStrictEqual(TurnEvent.upcast(4, event), Result.succeed(event))
      const events = yield* decodeAt(4, version4)
      const state = TreeState.fold(header, events)
      assert.strictEqual(state.nextSeq, 6)
      assert.strictEqual(state.grants.length, 1)
      const [grant] = state.grants
      assert.isUndefined(grant.when)
      assert.deepStrictEqual(grant.grantedBy, new Principal.Client({ label: "alice" }))
      assert.strictEqual(TreeState.grantFor(state, root, "client.send_email", { to: "team@corp.com" }), grant)
      assert.strictEqual(TreeState.grantFor(state, root, "client.send_email", { to: "someone@gmail.com" }), grant)
      assert.isUndefined(TreeState.grantFor(state, root, "client.other", {}))
      // The approval's `decidedBy` reads without conditions, as it was written.
      const opened = events[3]
      assert.isTrue(
        opened._tag === "CallbackOpened" && opened.callback._tag === "OpenApproval" &&
          opened.callback.request.decidedBy._tag === "RuleMatched" &&
          opened.callback.request.decidedBy.when === undefined &&
          opened.callback.request.decidedBy.rule.when === undefined
      )
    }))

  it.effect("folded on with a version-5 grant scoped to arguments: each grant decides the calls it covers", () =>
    Effect.gen(function*() {
      const older = yield* decodeAt(4, version4)
      const scoped = yield* decodeAt(5, [{
        _tag: "ApprovalGranted",
        ...where,
        seq: 6,
        grantId: "grant_2",
        toolPattern: "client.send_email",
        decision: "deny",
        scope: "tree",
        when: [{ _tag: "Glob", pointer: "/to", pattern: "*@gmail.com" }],
        grantedBy: { _tag: "Client", label: "bob" },
        callbackId: "cb_1"
      }])
      const state = TreeState.fold(header, [...older, ...scoped])
      assert.deepStrictEqual(state.grants.map((grant) => grant.grantId), ["grant_1", "grant_2"])
      assert.deepStrictEqual(state.grants[1].when, [ArgumentCondition.glob("/to", "*@gmail.com")])
      assert.strictEqual(
        TreeState.grantFor(state, root, "client.send_email", { to: "x@gmail.com" })?.grantId,
        "grant_2"
      )
      assert.strictEqual(TreeState.grantFor(state, root, "client.send_email", { to: "x@corp.com" })?.grantId, "grant_1")
    }))
})
