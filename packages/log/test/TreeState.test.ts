import { assert, describe, it } from "@effect/vitest"
import {
  AgentSpec,
  Answer,
  Callback,
  Ids,
  ParleyError,
  Permissions,
  ToolSpec,
  TurnEvent,
  TurnState
} from "@parley/core"
import { SnapshotCodec, TreeState } from "@parley/log"
import { Arbitrary, DateTime, HashMap, Result, Schema } from "effect"

// Snapshots of the projection: a state encoded to JSON and decoded back is the same state, and folding the rest of a
// log from a decoded snapshot gives the state of the whole log.

const root = Ids.SessionId.make("ses_root")
const child = Ids.SessionId.make("ses_child")
const turn1 = Ids.TurnId.make("turn_1")
const turn2 = Ids.TurnId.make("turn_2")
const turn3 = Ids.TurnId.make("turn_3")
const childTurn = Ids.TurnId.make("turn_child")
const getLocation = Ids.ToolId.make("client.get_location")
const sendEmail = Ids.ToolId.make("client.send_email")
const spawn = Ids.ToolId.make("agents.spawn")
const latestEmail = Ids.ToolId.make("connector.gmail.latest_email")
const t0 = DateTime.makeUnsafe(1_700_000_000_000)
const t1 = DateTime.makeUnsafe(1_700_003_600_000)

const header: TreeState.Header = {
  treeId: root,
  agent: AgentSpec.make({
    name: "assistant",
    model: "scripted",
    instructions: "Be brief.",
    tools: [
      new ToolSpec.ToolSpec({
        id: getLocation,
        name: "get_location",
        description: "Where the user is",
        parameters: { type: "object", properties: {} },
        success: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
      })
    ],
    connectors: ["gmail"],
    subagents: [AgentSpec.make({ name: "researcher", instructions: "Look things up.", connectors: ["gmail"] })],
    permissions: new Permissions.PermissionPolicy({
      default: "allow",
      rules: [new Permissions.PermissionRule({ tools: ["client.send_email"], decision: "ask" })]
    })
  }),
  createdAt: t0
}

const clientCall = (id: string, sessionId: Ids.SessionId, turnId: Ids.TurnId, toolCallId: string) =>
  new Callback.OpenClientToolCall({
    id: Ids.CallbackId.make(id),
    sessionId,
    turnId,
    rootTurnId: turnId,
    openedAt: t0,
    expiresAt: t1,
    request: new Callback.ClientToolRequest({
      tool: new Callback.ToolRef({ id: getLocation, name: "get_location" }),
      toolCallId,
      arguments: { precision: "city" }
    })
  })

type Draft = (common: { readonly seq: number; readonly at: DateTime.Utc }) => TurnEvent.TurnEvent

const inRoot = (turnId: Ids.TurnId) => ({ sessionId: root, turnId })
const inChild = { sessionId: child, turnId: childTurn }

/** A log with every kind of stored event: a subagent, a sign-in, a client tool call, an approval, every final state. */
const drafts: ReadonlyArray<Draft> = [
  (c) => new TurnEvent.TurnQueued({ ...c, ...inRoot(turn1), input: "Where am I? ünïcödé ✓" }),
  (c) => new TurnEvent.TurnStarted({ ...c, ...inRoot(turn1), input: "Where am I? ünïcödé ✓" }),
  (c) => new TurnEvent.ModelStepStarted({ ...c, ...inRoot(turn1), messageId: "msg_1", step: 0 }),
  (c) => new TurnEvent.MessageAborted({ ...c, ...inRoot(turn1), messageId: "msg_1" }),
  (c) => new TurnEvent.ModelStepStarted({ ...c, ...inRoot(turn1), messageId: "msg_2", step: 0 }),
  (c) =>
    new TurnEvent.MessageCompleted({
      ...c,
      ...inRoot(turn1),
      messageId: "msg_2",
      text: "Let me check.",
      reasoning: [new TurnEvent.Reasoning({ text: "thinking", metadata: { signature: "abc", n: [1, 2] } })]
    }),
  (c) =>
    new TurnEvent.ToolCallStarted({
      ...c,
      ...inRoot(turn1),
      toolCallId: "call_1",
      toolId: getLocation,
      name: "get_location",
      arguments: { precision: "city", nested: { list: [1, 2.5, null, true] } }
    }),
  (c) =>
    new TurnEvent.ToolCallStarted({
      ...c,
      ...inRoot(turn1),
      toolCallId: "call_2",
      toolId: spawn,
      name: "agents_spawn",
      arguments: { agent: "researcher", task: "Find the mail" }
    }),
  (c) =>
    new TurnEvent.CallbackOpened({ ...c, ...inRoot(turn1), callback: clientCall("cb_client", root, turn1, "call_1") }),
  (c) =>
    new TurnEvent.SubagentStarted({
      ...c,
      ...inRoot(turn1),
      childSessionId: child,
      childTurnId: childTurn,
      agent: "researcher",
      task: "Find the mail",
      toolCallId: "call_2"
    }),
  (c) =>
    new TurnEvent.TurnQueued({
      ...c,
      ...inChild,
      input: "Find the mail",
      cause: new TurnEvent.TurnCause({ sessionId: root, turnId: turn1, toolCallId: "call_2" })
    }),
  (c) => new TurnEvent.TurnStarted({ ...c, ...inChild, input: "Find the mail" }),
  (c) => new TurnEvent.ModelStepStarted({ ...c, ...inChild, messageId: "msg_c1", step: 0 }),
  (c) =>
    new TurnEvent.ToolCallStarted({
      ...c,
      ...inChild,
      toolCallId: "call_c1",
      toolId: latestEmail,
      name: "gmail_latest_email",
      arguments: {}
    }),
  (c) =>
    new TurnEvent.CallbackOpened({
      ...c,
      ...inChild,
      callback: new Callback.OpenSignIn({
        id: Ids.CallbackId.make("cb_signin"),
        ...inChild,
        rootTurnId: turn1,
        openedAt: t0,
        requests: [new Callback.SignInRequest({ id: "req_gmail", source: "gmail", toolCallId: "call_c1" })]
      })
    }),
  (c) =>
    new TurnEvent.TurnBlocked({
      ...c,
      ...inRoot(turn1),
      callbackIds: [Ids.CallbackId.make("cb_client"), Ids.CallbackId.make("cb_signin")]
    }),
  (c) =>
    new TurnEvent.CallbackResolved({
      ...c,
      ...inChild,
      callbackId: Ids.CallbackId.make("cb_signin"),
      resolution: "answered",
      answer: new Answer.SignInAnswer({ connected: ["req_gmail"] })
    }),
  (c) => new TurnEvent.ToolExecutionStarted({ ...c, ...inChild, toolCallId: "call_c1", toolId: latestEmail }),
  (c) =>
    new TurnEvent.ToolCallCompleted({
      ...c,
      ...inChild,
      toolCallId: "call_c1",
      toolId: latestEmail,
      name: "gmail_latest_email",
      isFailure: false,
      result: { subject: "Hello", from: "ada@example.com" }
    }),
  (c) => new TurnEvent.ModelStepStarted({ ...c, ...inChild, messageId: "msg_c2", step: 1 }),
  (c) => new TurnEvent.MessageCompleted({ ...c, ...inChild, messageId: "msg_c2", text: "Ada wrote." }),
  (c) =>
    new TurnEvent.TurnEnded({
      ...c,
      ...inChild,
      state: new TurnState.Completed({ ...inChild, text: "Ada wrote." })
    }),
  (c) =>
    new TurnEvent.SubagentEnded({
      ...c,
      ...inRoot(turn1),
      childSessionId: child,
      childTurnId: childTurn,
      state: new TurnState.Completed({ ...inChild, text: "Ada wrote." })
    }),
  (c) =>
    new TurnEvent.ToolCallCompleted({
      ...c,
      ...inRoot(turn1),
      toolCallId: "call_2",
      toolId: spawn,
      name: "agents_spawn",
      isFailure: false,
      result: { sessionId: child }
    }),
  (c) =>
    new TurnEvent.CallbackResolved({
      ...c,
      ...inRoot(turn1),
      callbackId: Ids.CallbackId.make("cb_client"),
      resolution: "answered",
      answer: Answer.ClientToolResult.success({ city: "Lyon" })
    }),
  (c) =>
    new TurnEvent.ToolCallCompleted({
      ...c,
      ...inRoot(turn1),
      toolCallId: "call_1",
      toolId: getLocation,
      name: "get_location",
      isFailure: false,
      result: { city: "Lyon" }
    }),
  (c) => new TurnEvent.ModelStepStarted({ ...c, ...inRoot(turn1), messageId: "msg_3", step: 1 }),
  (c) =>
    new TurnEvent.ToolCallStarted({
      ...c,
      ...inRoot(turn1),
      toolCallId: "call_3",
      toolId: sendEmail,
      name: "send_email",
      arguments: { to: "ada@example.com" }
    }),
  (c) =>
    new TurnEvent.CallbackOpened({
      ...c,
      ...inRoot(turn1),
      callback: new Callback.OpenApproval({
        id: Ids.CallbackId.make("cb_approval"),
        ...inRoot(turn1),
        openedAt: t0,
        expiresAt: t1,
        request: new Callback.ApprovalRequest({
          tool: new Callback.ToolRef({ id: sendEmail, name: "send_email" }),
          toolCallId: "call_3",
          arguments: { to: "ada@example.com" },
          decidedBy: new Permissions.RuleMatched({
            index: 0,
            pattern: "client.send_email",
            rule: new Permissions.PermissionRule({ tools: ["client.send_email"], decision: "ask" })
          })
        })
      })
    }),
  (c) => new TurnEvent.TurnBlocked({ ...c, ...inRoot(turn1), callbackIds: [Ids.CallbackId.make("cb_approval")] }),
  (c) => new TurnEvent.TurnQueued({ ...c, ...inRoot(turn2), input: "And then?", requestId: "req-and-then" }),
  (c) =>
    new TurnEvent.CallbackResolved({
      ...c,
      ...inRoot(turn1),
      callbackId: Ids.CallbackId.make("cb_approval"),
      resolution: "expired"
    }),
  (c) =>
    new TurnEvent.ToolCallCompleted({
      ...c,
      ...inRoot(turn1),
      toolCallId: "call_3",
      toolId: sendEmail,
      name: "send_email",
      isFailure: true,
      result: "the approval expired"
    }),
  (c) =>
    new TurnEvent.TurnEnded({
      ...c,
      ...inRoot(turn1),
      state: new TurnState.Failed({
        ...inRoot(turn1),
        error: new ParleyError.ModelFailure({ module: "Model", method: "generate", model: "m", description: "503" })
      })
    }),
  (c) => new TurnEvent.TurnStarted({ ...c, ...inRoot(turn2), input: "And then?" }),
  (c) => new TurnEvent.ModelStepStarted({ ...c, ...inRoot(turn2), messageId: "msg_4", step: 0 }),
  (c) => new TurnEvent.CancelRequested({ ...c, ...inRoot(turn2) }),
  (c) => new TurnEvent.TurnEnded({ ...c, ...inRoot(turn2), state: new TurnState.Cancelled({ ...inRoot(turn2) }) }),
  (c) => new TurnEvent.TurnQueued({ ...c, ...inRoot(turn3), input: "Where am I now?" }),
  (c) => new TurnEvent.TurnStarted({ ...c, ...inRoot(turn3), input: "Where am I now?" }),
  (c) => new TurnEvent.ModelStepStarted({ ...c, ...inRoot(turn3), messageId: "msg_5", step: 0 }),
  (c) =>
    new TurnEvent.ToolCallStarted({
      ...c,
      ...inRoot(turn3),
      toolCallId: "call_5",
      toolId: getLocation,
      name: "get_location",
      arguments: {}
    }),
  (c) =>
    new TurnEvent.CallbackOpened({
      ...c,
      ...inRoot(turn3),
      callback: clientCall("cb_client_2", root, turn3, "call_5")
    }),
  (c) => new TurnEvent.TurnBlocked({ ...c, ...inRoot(turn3), callbackIds: [Ids.CallbackId.make("cb_client_2")] })
]

const log: ReadonlyArray<TurnEvent.TurnEvent> = drafts.map((draft, seq) => draft({ seq, at: t0 }))

/** A state with its `HashMap`s as entry arrays sorted by key, to compare with `deepStrictEqual`. */
const plain = (state: TreeState.TreeState) => {
  const entries = <K extends string, V>(map: HashMap.HashMap<K, V>) =>
    Array.from(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return {
    ...state,
    sessions: entries(state.sessions).map(([id, session]) => [id, { ...session, requests: entries(session.requests) }]),
    turns: entries(state.turns),
    callbacks: entries(state.callbacks)
  }
}

/** What the engine and readers ask of a state. */
const queries = (state: TreeState.TreeState) => ({
  isBlocked: TreeState.isBlocked(state),
  running: TreeState.runningTurns(state).map((turn) => turn.turnId).sort(),
  turns: Array.from(HashMap.values(state.turns)).map((turn) => ({
    turnId: turn.turnId,
    state: TreeState.turnState(state, turn.turnId),
    open: TreeState.openCallbacks(state, turn.turnId).map((callback) => callback.id),
    active: TreeState.isActive(state, turn)
  })).sort((a, b) => (a.turnId < b.turnId ? -1 : 1)),
  answerSchemas: state.open.map((id) => {
    const record = TreeState.callback(state, id)
    return record === undefined ? undefined : TreeState.answerSchema(state, record.callback)
  })
})

const roundTrip = (state: TreeState.TreeState): TreeState.TreeState => {
  const json = SnapshotCodec.encode(state)
  if (Result.isFailure(json)) return assert.fail(`the state does not encode: ${json.failure.message}`)
  const decoded = SnapshotCodec.decode(json.success)
  if (Result.isFailure(decoded)) return assert.fail(`the snapshot does not decode: ${decoded.failure.message}`)
  return decoded.success
}

const assertSameState = (actual: TreeState.TreeState, expected: TreeState.TreeState, where: string) => {
  assert.deepStrictEqual(plain(actual), plain(expected), where)
  assert.deepStrictEqual(queries(actual), queries(expected), where)
}

/** A root agent with neither a model nor a policy: its subagents have none either. */
const bareHeader: TreeState.Header = {
  treeId: root,
  agent: AgentSpec.make({ name: "bare", subagents: [AgentSpec.make({ name: "researcher" })] }),
  createdAt: t0
}

/** The two properties, at every split point of `events`. */
const checkLog = (events: ReadonlyArray<TurnEvent.TurnEvent>, header: TreeState.Header) => {
  const whole = TreeState.fold(header, events)
  assertSameState(roundTrip(whole), whole, "decode(encode(fold(log)))")
  for (let split = 0; split <= events.length; split++) {
    const resumed = TreeState.foldFrom(roundTrip(TreeState.fold(header, events.slice(0, split))), events.slice(split))
    assertSameState(resumed, whole, `split at ${split}`)
  }
}

// ----- random logs: events of every kind over small pools of ids, in any order -----

const sessions = [root, child, Ids.SessionId.make("ses_other")]
const turns = [turn1, turn2, childTurn]
const callbackIds = ["cb_a", "cb_b", "cb_c"].map((id) => Ids.CallbackId.make(id))
const toolCallIds = ["call_a", "call_b"]
/** The generators the random logs are built of, on `effect`'s `Arbitrary` (derived from schemas). */
const gen = {
  string: (maxLength?: number) =>
    Arbitrary.schema(maxLength === undefined ? Schema.String : Schema.String.check(Schema.isMaxLength(maxLength))),
  integer: (range?: { readonly min: number; readonly max: number }) =>
    Arbitrary.schema(
      range === undefined ? Schema.Int : Schema.Int.check(Schema.isBetween({ minimum: range.min, maximum: range.max }))
    ),
  boolean: Arbitrary.schema(Schema.Boolean),
  constantFrom: <const A>(...values: ReadonlyArray<A>): Arbitrary.Arbitrary<A> =>
    Arbitrary.map(gen.integer({ min: 0, max: values.length - 1 }), (index) => values[index]),
  oneof: <A>(...arbitraries: ReadonlyArray<Arbitrary.Arbitrary<A>>): Arbitrary.Arbitrary<A> =>
    Arbitrary.flatMap(gen.integer({ min: 0, max: arbitraries.length - 1 }), (index) => arbitraries[index])
}

const json: Arbitrary.Arbitrary<unknown> = gen.oneof<unknown>(
  gen.string(),
  gen.integer(),
  gen.boolean,
  Arbitrary.Constant(null),
  Arbitrary.all({ city: gen.string(), n: gen.integer(), list: Arbitrary.array(gen.integer(), { maxLength: 3 }) })
)
const final = (sessionId: Ids.SessionId, turnId: Ids.TurnId) =>
  gen.oneof<TurnState.Completed | TurnState.Cancelled | TurnState.Failed>(
    Arbitrary.map(gen.string(), (text) => new TurnState.Completed({ sessionId, turnId, text })),
    Arbitrary.Constant(new TurnState.Cancelled({ sessionId, turnId })),
    Arbitrary.Constant(
      new TurnState.Failed({
        sessionId,
        turnId,
        error: new ParleyError.StepLimitReached({ module: "Engine", method: "step", limit: 3 })
      })
    )
  )

const randomDraft: Arbitrary.Arbitrary<Draft> = Arbitrary.flatMap(
  Arbitrary.all({
    sessionId: gen.constantFrom(...sessions),
    turnId: gen.constantFrom(...turns),
    callbackId: gen.constantFrom(...callbackIds),
    toolCallId: gen.constantFrom(...toolCallIds),
    text: gen.string(8),
    value: json,
    flag: gen.boolean,
    kind: gen.integer({ min: 0, max: 17 })
  }),
  (r) =>
    Arbitrary.map(final(r.sessionId, r.turnId), (state): Draft => (c) => {
      const common = { ...c, sessionId: r.sessionId, turnId: r.turnId }
      switch (r.kind) {
        case 0:
          return new TurnEvent.TurnQueued({
            ...common,
            input: r.text,
            ...(r.flag
              ? { cause: new TurnEvent.TurnCause({ sessionId: root, turnId: turn1, toolCallId: "call_a" }) }
              : { requestId: "req-a" })
          })
        case 1:
          return new TurnEvent.TurnStarted({ ...common, input: r.text })
        case 2:
          return new TurnEvent.ModelStepStarted({ ...common, messageId: `msg_${r.text}`, step: 0 })
        case 3:
          return new TurnEvent.MessageAborted({ ...common, messageId: `msg_${r.text}` })
        case 4:
          return new TurnEvent.MessageCompleted({
            ...common,
            messageId: `msg_${r.text}`,
            text: r.text,
            reasoning: r.flag ? [new TurnEvent.Reasoning({ text: r.text, metadata: { v: r.value } })] : []
          })
        case 5:
          return new TurnEvent.ToolCallStarted({
            ...common,
            toolCallId: r.toolCallId,
            toolId: r.flag ? getLocation : Ids.ToolId.make("agents.wait"),
            name: "tool",
            arguments: r.value
          })
        case 6:
          return new TurnEvent.ToolExecutionStarted({ ...common, toolCallId: r.toolCallId, toolId: getLocation })
        case 7:
          return new TurnEvent.ToolCallCompleted({
            ...common,
            toolCallId: r.toolCallId,
            toolId: getLocation,
            name: "tool",
            isFailure: r.flag,
            result: r.value
          })
        case 8:
          return new TurnEvent.CallbackOpened({
            ...common,
            callback: clientCall(r.callbackId, r.sessionId, r.turnId, r.toolCallId)
          })
        case 9:
          return new TurnEvent.CallbackOpened({
            ...common,
            callback: new Callback.OpenSignIn({
              id: r.callbackId,
              sessionId: r.sessionId,
              turnId: r.turnId,
              openedAt: t0,
              requests: [new Callback.SignInRequest({ id: "req_gmail", source: "gmail", toolCallId: r.toolCallId })]
            })
          })
        case 10:
          return new TurnEvent.CallbackResolved({
            ...common,
            callbackId: r.callbackId,
            resolution: r.flag ? "answered" : "expired",
            ...(r.flag ? { answer: new Answer.SignInAnswer({ connected: ["req_gmail"] }) } : {})
          })
        case 11:
          return new TurnEvent.CallbackResolved({
            ...common,
            callbackId: r.callbackId,
            resolution: "answered",
            answer: r.flag ? Answer.ClientToolResult.success(r.value) : new Answer.DenyApproval({ reason: r.text })
          })
        case 12:
          return new TurnEvent.SubagentStarted({
            ...common,
            childSessionId: r.flag ? child : sessions[2],
            childTurnId: childTurn,
            agent: r.flag ? "researcher" : "nobody",
            task: r.text,
            toolCallId: r.toolCallId
          })
        case 13:
          return new TurnEvent.SubagentEnded({ ...common, childSessionId: child, childTurnId: childTurn, state })
        case 14:
          return new TurnEvent.TurnBlocked({ ...common, callbackIds: [r.callbackId] })
        case 15:
          return new TurnEvent.CancelRequested(common)
        default:
          return new TurnEvent.TurnEnded({ ...common, state })
      }
    })
)

const randomLog = Arbitrary.map(
  Arbitrary.array(randomDraft, { maxLength: 40 }),
  (list) => list.map((draft, seq) => draft({ seq, at: t0 }))
)

describe("TreeState snapshots", () => {
  it("a state of every kind of event survives encode and decode, and folding on from any point of its log", () => {
    checkLog(log, header)
    checkLog(log, bareHeader)
    const state = TreeState.fold(header, log)
    assert.isTrue(TreeState.isBlocked(state), "the log ends blocked on a client tool call")
    assert.strictEqual(HashMap.size(state.sessions), 2)
    assert.strictEqual(HashMap.size(state.turns), 4)
    assert.strictEqual(HashMap.size(state.callbacks), 4)
  })

  it("a decoded state holds the same values: class instances, times, HashMaps, subagent definitions", () => {
    const state = roundTrip(TreeState.fold(header, log))
    const childSession = TreeState.session(state, child)
    assert.instanceOf(TreeState.turn(state, childTurn)?.cause, TurnEvent.TurnCause)
    assert.instanceOf(TreeState.turn(state, turn1)?.final, TurnState.Failed)
    assert.instanceOf(TreeState.callback(state, Ids.CallbackId.make("cb_signin"))?.answer, Answer.SignInAnswer)
    assert.isTrue(DateTime.isDateTime(childSession?.createdAt))
    assert.strictEqual(childSession?.agent.model, "scripted", "a subagent without a model uses its parent's")
    assert.deepStrictEqual(childSession?.connected, ["gmail"])
    const assistant = TreeState.session(state, root)?.conversation[1]
    assert.strictEqual(assistant?.role, "assistant")
    if (assistant?.role === "assistant") assert.instanceOf(assistant.reasoning[0], TurnEvent.Reasoning)
  })

  it("the encoded form: HashMaps as [key, value] entries, fields left undefined left out", () => {
    const json = SnapshotCodec.encode(TreeState.fold(header, log.slice(0, 1)))
    if (Result.isFailure(json)) return assert.fail(json.failure.message)
    const encoded = JSON.parse(json.success) as SnapshotCodec.TreeStateEncoded
    assert.strictEqual(encoded.nextSeq, 1)
    assert.deepStrictEqual(encoded.sessions.map(([id]) => id), [root])
    assert.deepStrictEqual(encoded.turns.map(([id]) => id), [turn1])
    const [, turn] = encoded.turns[0]
    assert.deepStrictEqual(Object.keys(turn).filter((key) => key === "startedSeq" || key === "final"), [])
    assert.strictEqual(turn.status, "queued")
    assert.notProperty(encoded, "blockedAt")
    assert.strictEqual(encoded.sessions[0][1].createdAt, "2023-11-14T22:13:20.000Z")
  })

  it("a tool started without an executor (a log written before leases) keeps no executor key through a snapshot", () => {
    const events = [
      new TurnEvent.TurnQueued({ seq: 0, at: t0, ...inRoot(turn1), input: "" }),
      new TurnEvent.ToolCallStarted({
        seq: 1,
        at: t0,
        ...inRoot(turn1),
        toolCallId: "call_b",
        toolId: getLocation,
        name: "get_location",
        arguments: {}
      }),
      new TurnEvent.ToolExecutionStarted({
        seq: 2,
        at: t0,
        ...inRoot(turn1),
        toolCallId: "call_b",
        toolId: getLocation
      })
    ]
    checkLog(events, bareHeader)
    const stage = TreeState.turn(TreeState.fold(bareHeader, events), turn1)?.calls[0]?.stage
    assert.deepStrictEqual(stage, { _tag: "Executing" })
  })

  it("a snapshot that is not a state does not decode", () => {
    assert.isTrue(Result.isFailure(SnapshotCodec.decode("not json")))
    assert.isTrue(Result.isFailure(SnapshotCodec.decode(JSON.stringify({ treeId: root, nextSeq: 3 }))))
    const json = SnapshotCodec.encode(TreeState.fold(header, log))
    if (Result.isFailure(json)) return assert.fail(json.failure.message)
    const broken = json.success.replace(/"status":"running"/, "\"status\":\"paused\"")
    assert.notStrictEqual(broken, json.success)
    assert.isTrue(Result.isFailure(SnapshotCodec.decode(broken)))
  })

  it.prop(
    "any log: the snapshot of its fold is its fold, and of any prefix, folded on, the whole fold",
    [randomLog, gen.constantFrom(header, bareHeader)],
    ([events, header]) => {
      checkLog(events, header)
    },
    { arbitrary: { runs: 150 } }
  )
})
