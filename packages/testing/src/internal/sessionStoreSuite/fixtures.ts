/**
 * What the store scenarios share: the services (`@parley/log`'s `SessionStore.Services`), ids, events of every kind, a
 * tree per scenario, and readers of `tail` / `changes` that tell when they are in place.
 */
import * as AgentSpec from "@parley/core/AgentSpec"
import * as Answer from "@parley/core/Answer"
import * as Callback from "@parley/core/Callback"
import type { CallbackId, SessionId } from "@parley/core/Ids"
import * as Ids from "@parley/core/Ids"
import * as ParleyError from "@parley/core/ParleyError"
import * as Permissions from "@parley/core/Permissions"
import * as ToolSpec from "@parley/core/ToolSpec"
import * as TurnEvent from "@parley/core/TurnEvent"
import * as TurnState from "@parley/core/TurnState"
import * as SessionStore from "@parley/log/SessionStore"
import type { StoreError } from "@parley/log/StoreError"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

// -----------------------------------------------------------------------------
// The port under test: `@parley/log`'s own
// -----------------------------------------------------------------------------

/** The port under test. */
export type Store = SessionStore.Services

/** A store's `changes` as a `Stream`. */
export const changesOf: (store: Store) => Stream.Stream<SessionStore.Change, StoreError> = SessionStore.changes

/** A store's `subscribe` as a `Stream` (what the suite reads with `take`). */
export const tail: (
  store: Store,
  treeId: SessionId,
  from: number,
  sessionId?: SessionId | undefined
) => Stream.Stream<TurnEvent.TurnEvent, StoreError> = SessionStore.tail

export interface Database {
  readonly open: Effect.Effect<Store, unknown, Scope.Scope>
  readonly corrupt?: ((treeId: string, seq: number) => Effect.Effect<void, unknown>) | undefined
}

export type MakeDatabase = Effect.Effect<Database, unknown, Scope.Scope>

// -----------------------------------------------------------------------------
// Ids and events
// -----------------------------------------------------------------------------

export const treeId = Ids.SessionId.make("ses_store")
export const otherTreeId = Ids.SessionId.make("ses_store_other")
export const childId = Ids.SessionId.make("ses_store_child")
export const grandchildId = Ids.SessionId.make("ses_store_grandchild")
export const turnId = Ids.TurnId.make("turn_store")
export const childTurnId = Ids.TurnId.make("turn_store_child")
export const at = DateTime.makeUnsafe(1_700_000_000_000)
export const later = DateTime.makeUnsafe(1_700_003_600_000)
export const callbackId = (name: string): CallbackId => Ids.CallbackId.make(`cb_${name}`)
export const tree = (id: SessionId = treeId, name = "assistant"): SessionStore.StoredTree => ({
  treeId: id,
  agent: AgentSpec.make({
    name,
    description: "answers questions",
    model: "scripted",
    instructions: "Be brief.",
    tools: [
      new ToolSpec.ToolSpec({
        id: Ids.ToolId.make("client.get_location"),
        name: "get_location",
        description: "Where the user is",
        parameters: { type: "object", properties: { precision: { type: "string", enum: ["city"] } } },
        annotations: new ToolSpec.ToolAnnotations({ readOnlyHint: true })
      })
    ],
    connectors: ["gmail"],
    subagents: [AgentSpec.make({ name: "researcher", instructions: "Look things up." })],
    permissions: new Permissions.PermissionPolicy({
      default: "allow",
      rules: [new Permissions.PermissionRule({ tools: ["client.*"], decision: "ask" })]
    })
  }),
  createdAt: at
})

export const queued = (seq: number, sessionId: SessionId = treeId, id = turnId) =>
  new TurnEvent.TurnQueued({ sessionId, turnId: id, seq, at, input: `message ${seq}` })

export const resolved = (seq: number, callback: CallbackId, sessionId: SessionId = treeId) =>
  new TurnEvent.CallbackResolved({ sessionId, turnId, seq, at, callbackId: callback, resolution: "expired" })

export const ended = (seq: number, sessionId: SessionId = treeId, id = turnId) =>
  new TurnEvent.TurnEnded({
    sessionId,
    turnId: id,
    seq,
    at,
    state: new TurnState.Completed({ sessionId, turnId: id, text: "done" })
  })

/** An approval opened at `seq`, due `later` (or at `expiresAt`; none when `undefined` is given). */
export const opened = (
  seq: number,
  callback: CallbackId,
  sessionId: SessionId = treeId,
  ...deadline: [expiresAt?: DateTime.Utc | undefined]
) =>
  new TurnEvent.CallbackOpened({
    sessionId,
    turnId,
    seq,
    at,
    callback: new Callback.OpenApproval({
      id: callback,
      sessionId,
      turnId,
      openedAt: at,
      expiresAt: deadline.length === 0 ? later : deadline[0],
      request: new Callback.ApprovalRequest({
        tool: new Callback.ToolRef({ id: Ids.ToolId.make("client.send_email"), name: "send_email" }),
        toolCallId: "call_1",
        arguments: { to: "ada@example.com" },
        decidedBy: new Permissions.DefaultDecision()
      })
    })
  })

export const blocked = (seq: number, ...callbacks: ReadonlyArray<CallbackId>) =>
  new TurnEvent.TurnBlocked({ sessionId: treeId, turnId, seq, at, callbackIds: callbacks })

/** One stored event of every kind (no `MessageDelta`: those are live-only), with `seq`s from `from`. */
export const everyKind = (from: number): ReadonlyArray<TurnEvent.TurnEvent> => {
  const common = { sessionId: treeId, turnId, at }
  const getLocation = Ids.ToolId.make("client.get_location")
  const drafts: ReadonlyArray<(seq: number) => TurnEvent.TurnEvent> = [
    (seq) =>
      new TurnEvent.TurnQueued({
        ...common,
        seq,
        input: "Where am I? ünïcödé ✓ 'quotes' \"double\" \\ back",
        cause: new TurnEvent.TurnCause({ sessionId: treeId, turnId, toolCallId: "call_0" })
      }),
    (seq) => new TurnEvent.TurnStarted({ ...common, seq, input: "Where am I?", inherited: [callbackId("old")] }),
    (seq) => new TurnEvent.ModelStepStarted({ ...common, seq, messageId: "msg_1", step: 0 }),
    (seq) => new TurnEvent.MessageAborted({ ...common, seq, messageId: "msg_0" }),
    (seq) => new TurnEvent.MessageCompleted({ ...common, seq, messageId: "msg_1", text: "Let me check." }),
    (seq) =>
      new TurnEvent.ToolCallStarted({
        ...common,
        seq,
        toolCallId: "call_1",
        toolId: getLocation,
        name: "get_location",
        arguments: { precision: "city", nested: { list: [1, 2.5, null, true] } }
      }),
    (seq) => new TurnEvent.ToolExecutionStarted({ ...common, seq, toolCallId: "call_1", toolId: getLocation }),
    (seq) => opened(seq, callbackId("every")),
    (seq) =>
      new TurnEvent.CallbackOpened({
        ...common,
        seq,
        callback: new Callback.OpenSignIn({
          id: callbackId("signin"),
          sessionId: treeId,
          turnId,
          openedAt: at,
          requests: [new Callback.SignInRequest({ id: "req_gmail", source: "gmail" })]
        })
      }),
    (seq) =>
      new TurnEvent.CallbackResolved({
        ...common,
        seq,
        callbackId: callbackId("every"),
        resolution: "answered",
        answer: Answer.ClientToolResult.success({ city: "Lyon", country: "France" })
      }),
    (seq) =>
      new TurnEvent.ToolCallCompleted({
        ...common,
        seq,
        toolCallId: "call_1",
        toolId: getLocation,
        name: "get_location",
        isFailure: false,
        result: { city: "Lyon" }
      }),
    (seq) =>
      new TurnEvent.SubagentStarted({
        ...common,
        seq,
        childSessionId: childId,
        childTurnId,
        agent: "researcher",
        task: "Find it",
        toolCallId: "call_2"
      }),
    (seq) =>
      new TurnEvent.SubagentEnded({
        ...common,
        seq,
        childSessionId: childId,
        childTurnId,
        state: new TurnState.Failed({
          sessionId: childId,
          turnId: childTurnId,
          error: new ParleyError.ModelFailure({ module: "Model", method: "generate", model: "m", description: "503" })
        })
      }),
    (seq) => new TurnEvent.TurnBlocked({ ...common, seq, callbackIds: [callbackId("signin")] }),
    (seq) => new TurnEvent.CancelRequested({ ...common, seq }),
    (seq) =>
      new TurnEvent.TurnEnded({ ...common, seq, state: new TurnState.Completed({ ...common, text: "In Lyon." }) })
  ]
  return drafts.map((draft, i) => draft(from + i))
}

// -----------------------------------------------------------------------------
// Scenario helpers
// -----------------------------------------------------------------------------

/** Runs a scenario on a fresh database with one store open on it and the tree `treeId` created. */
export const withStore = <A, E>(
  makeDatabase: MakeDatabase,
  body: (store: Store, database: Database) => Effect.Effect<A, E, Scope.Scope>
): Effect.Effect<A, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const database = yield* makeDatabase
    const store = yield* database.open
    yield* store.eventLog.createTree(tree())
    return yield* body(store, database)
  })

export const seqs = (events: ReadonlyArray<{ readonly seq: number }>) => events.map((event) => event.seq)

export const tags = (events: ReadonlyArray<TurnEvent.TurnEvent>) => events.map((event) => `${event._tag} ${event.seq}`)

/** Appends events one by one at the log's end, retrying lost races, until `count` are stored. */
export const appendUntil = (store: Store, id: SessionId, count: number, make: (seq: number) => TurnEvent.TurnEvent) =>
  Effect.gen(function*() {
    while (true) {
      const next = (yield* store.eventLog.read(id, 0)).length
      if (next >= count) return
      yield* store.eventLog.append(id, next, [make(next)]).pipe(Effect.catchTag("SeqConflict", () => Effect.void))
    }
  })

export interface Reader<A> {
  /** The next `n` elements (waits for them). */
  readonly take: (n: number) => Effect.Effect<ReadonlyArray<A>>
  /** What arrived and was not taken yet. */
  readonly pending: Effect.Effect<ReadonlyArray<A>>
}

/** Runs a stream in the background of the scope, keeping what it gives. */
export const reader = <A, E>(stream: Stream.Stream<A, E>): Effect.Effect<Reader<A>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const seen = yield* Queue.unbounded<A>()
    yield* stream.pipe(Stream.runForEach((a) => Queue.offer(seen, a)), Effect.orDie, Effect.forkScoped)
    return {
      take: (n) => Queue.takeN(seen, n),
      pending: Queue.clear(seen)
    }
  })

/** Lets forked readers run up to where they wait. */
export const settled = Effect.repeat(Effect.yieldNow, { times: 50 })

/** Waits for a cross-process effect: fails the scenario after 10 s instead of hanging. */
export const within = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.timeoutOrElse(effect, {
    duration: "10 seconds",
    orElse: () => Effect.fail(new Error("nothing came within 10 s"))
  })
