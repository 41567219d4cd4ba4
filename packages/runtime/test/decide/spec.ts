import { assert, describe, it } from "@effect/vitest"
import type { Answer, Ids, ParleyError, TurnEvent } from "@parley/core"
import { Principal, TurnEvent as TurnEventSchemas } from "@parley/core"
import { TreeState } from "@parley/log"
import type { DateTime } from "effect"
import { HashMap, Result } from "effect"
import type { Command, Decision, Rejection } from "../../src/internal/decide.js"
import { decide } from "../../src/internal/decide.js"
import { assistant, callbackAt, env, grantAt, header, seed, t0, treeId } from "./fixtures.js"

// A small language for `decide`'s rules: given the commands decided so far (each by an engine, at a time) and the
// events other writers appended, when this command is decided, then these events are appended, or this rejection is
// returned. A rule reads as a table row:
//
//   { rule: "an approval already answered", given: [...askedToCharge, answer(allow)], when: answer(allow),
//     then: rejects("CallbackAlreadyAnswered") }
//
// and runs as a test named "an approval already answered → CallbackAlreadyAnswered, nothing appended".

// =============================================================================
// Who decides
// =============================================================================

export type Executor = TurnEvent.Executor

/** The engine that owns the tree and runs its tools: the executor of every step unless the step says otherwise. */
export const owner: Executor = { owner: "engine-a", epoch: 1 }
/** An engine that took the tree over (a later lease). */
export const newOwner: Executor = { owner: "engine-b", epoch: 2 }
/** A decision without executor: a process that does not own the tree (an answer over HTTP), or runs no work. */
export const nobody = "nobody" as const

export type Decider = Executor | typeof nobody

export const executorOf = (by: Decider): Executor | undefined => (by === nobody ? undefined : by)

// =============================================================================
// Steps: a command (built from the state it is decided in), who decides it, when
// =============================================================================

export class Step {
  constructor(
    readonly make: (state: TreeState.TreeState) => Command,
    readonly decider: Decider = owner,
    readonly time: DateTime.Utc = t0
  ) {}
  /** Decided by this engine (or `nobody`). */
  by(decider: Decider): Step {
    return new Step(this.make, decider, this.time)
  }
  /** Decided at this time. */
  at(time: DateTime.Utc): Step {
    return new Step(this.make, this.decider, time)
  }
}

/** Which session a step is about: the root's, or the root's first subagent's. */
export type Who = "root" | "child"

export const sessionOf = (state: TreeState.TreeState, who: Who): Ids.SessionId =>
  who === "root" ? treeId : (TreeState.session(state, treeId)?.children[0] ?? ("ses_none" as Ids.SessionId))

/** The session's running turn (or an id no turn has). */
export const runningTurn = (state: TreeState.TreeState, who: Who): TreeState.Turn | undefined => {
  const running = TreeState.session(state, sessionOf(state, who))?.running
  return running === undefined ? undefined : TreeState.turn(state, running)
}

const noTurn = "turn_none" as Ids.TurnId
const turnIdOf = (state: TreeState.TreeState, who: Who) => runningTurn(state, who)?.turnId ?? noTurn

/** The user sends a message to the session. */
export const send = (input: string, who: Who = "root") =>
  new Step((state) => ({ _tag: "SendMessage", sessionId: sessionOf(state, who), input }))

/** The user sends a message under a traced engine: the turn's span context comes with it. */
export const sendTraced = (input: string, trace: { readonly traceId: string; readonly spanId: string }) =>
  new Step((state) => ({
    _tag: "SendMessage",
    sessionId: sessionOf(state, "root"),
    input,
    trace: new TurnEventSchemas.TraceContext(trace)
  }))

/** The user sends a message with a request id (a retry sends the same id again). */
export const sendWithId = (input: string, requestId: string, who: Who = "root") =>
  new Step((state) => ({ _tag: "SendMessage", sessionId: sessionOf(state, who), input, requestId }))

/** A message to a session the tree does not have. */
export const sendTo = (sessionId: string, input: string) =>
  new Step(() => ({ _tag: "SendMessage", sessionId: sessionId as Ids.SessionId, input }))

export interface ToolCall {
  readonly name: string
  readonly params?: unknown
}

/** The model's step of the session's running turn is done: its text and tool calls (ids `call_<seq>_<i>`). */
export const modelStep = (
  result: { readonly text?: string; readonly calls?: ReadonlyArray<string | ToolCall> },
  options: { readonly who?: Who; readonly messageId?: string } = {}
) =>
  new Step((state) => {
    const turn = runningTurn(state, options.who ?? "root")
    return {
      _tag: "ModelStepDone",
      turnId: turn?.turnId ?? noTurn,
      messageId: options.messageId ?? turn?.step?.messageId ?? "msg_none",
      text: result.text ?? "",
      reasoning: [],
      toolCalls: (result.calls ?? []).map((call, i) => {
        const { name, params } = typeof call === "string" ? { name: call, params: {} } : call
        return { id: `call_${state.nextSeq}_${i}`, name, params: params ?? {} }
      })
    }
  })

/** The model answers with text and no tool calls. */
export const replies = (text: string, who: Who = "root") => modelStep({ text }, { who })
/** The model calls these tools. */
export const calls = (...calls: ReadonlyArray<string | ToolCall>) => modelStep({ calls })
/** The subagent's model calls these tools. */
export const childCalls = (...calls: ReadonlyArray<string | ToolCall>) => modelStep({ calls }, { who: "child" })

/** The model call of the session's running step failed. */
export const stepFails = (error: ParleyError.ParleyError, options: { readonly messageId?: string } = {}) =>
  new Step((state) => {
    const turn = runningTurn(state, "root")
    return {
      _tag: "ModelStepFailed",
      turnId: turn?.turnId ?? noTurn,
      messageId: options.messageId ?? turn?.step?.messageId ?? "msg_none",
      error
    }
  })

/** The running turn's tool call `index` (of its latest step) has its result. */
export const toolFinished = (
  index: number,
  result: unknown,
  options: { readonly isFailure?: boolean; readonly who?: Who; readonly toolCallId?: string } = {}
) =>
  new Step((state) => {
    const turn = runningTurn(state, options.who ?? "root")
    return {
      _tag: "ToolFinished",
      turnId: turn?.turnId ?? noTurn,
      toolCallId: options.toolCallId ?? turn?.calls[index]?.toolCallId ?? "call_none",
      isFailure: options.isFailure ?? false,
      result
    }
  })

/** The running turn's work failed outside the model (a defect in the engine's work). */
export const workFails = (error: ParleyError.ParleyError, who: Who = "root") =>
  new Step((state) => ({ _tag: "WorkFailed", turnId: turnIdOf(state, who), error }))

/** Which callback a step is about. */
export type Pick = (state: TreeState.TreeState) => TreeState.CallbackRecord | undefined

/** The `index`-th callback still open, oldest first. */
export const open = (index = 0): Pick => (state) => {
  const id = state.open[index]
  return id === undefined ? undefined : TreeState.callback(state, id)
}
/** The latest callback opened, open or closed. */
export const latest: Pick = (state) => {
  let found: TreeState.CallbackRecord | undefined
  for (const record of HashMap.values(state.callbacks)) {
    if (found === undefined || record.seq > found.seq) found = record
  }
  return found
}

/**
 * The answer to a callback, sent to the callback's own session and turn unless `to` says otherwise (a session or a
 * turn id, or the running turn of a session).
 */
export const answer = (
  value: Answer.Answer,
  pick: Pick = open(0),
  to: {
    readonly sessionId?: string
    readonly turnId?: string
    readonly runningTurnOf?: Who
    readonly callbackId?: string
    /** The client's id of the answer. */
    readonly requestId?: string
  } = {}
) =>
  new Step((state) => {
    const record = pick(state)
    return {
      _tag: "Answer",
      sessionId: (to.sessionId ?? record?.callback.sessionId ?? treeId) as Ids.SessionId,
      turnId: (to.runningTurnOf !== undefined
        ? turnIdOf(state, to.runningTurnOf)
        : (to.turnId ?? record?.callback.turnId ?? noTurn)) as Ids.TurnId,
      callbackId: (to.callbackId ?? record?.callback.id ?? "cb_none") as Ids.CallbackId,
      answer: value,
      requestId: to.requestId
    }
  })

/** The user cancels the session (and every subagent under it). */
export const cancel = (who: Who = "root") => new Step((state) => ({ _tag: "Cancel", sessionId: sessionOf(state, who) }))

/** A cancel of a session the tree does not have. */
export const cancelOf = (sessionId: string) =>
  new Step(() => ({ _tag: "Cancel", sessionId: sessionId as Ids.SessionId }))

/** The deadline timer of a callback fired. */
export const expire = (pick: Pick = open(0), callbackId?: string) =>
  new Step((state) => ({
    _tag: "Expire",
    callbackId: (callbackId ?? pick(state)?.callback.id ?? "cb_none") as Ids.CallbackId
  }))

/** Events another writer appended to the log, as they are (no decision of this engine, nothing settled). */
export class Written {
  constructor(
    readonly make: (
      state: TreeState.TreeState
    ) => ReadonlyArray<(meta: { readonly seq: number; readonly at: DateTime.Utc }) => TurnEvent.TurnEvent>,
    readonly time: DateTime.Utc = t0
  ) {}
}

/** Another process recorded a tree-wide grant allowing `toolPattern` (as a by-id answer with `remember` does). */
export const grantedElsewhere = (toolPattern: string) =>
  new Written((state) => [(meta) =>
    new TurnEventSchemas.ApprovalGranted({
      sessionId: state.treeId,
      turnId: runningTurn(state, "root")!.turnId,
      ...meta,
      grantId: grantAt(meta.seq),
      toolPattern,
      decision: "allow",
      scope: "tree",
      grantedBy: new Principal.Client({}),
      callbackId: callbackAt(0) as Ids.CallbackId
    })]
  )

/** Another process recorded this answer to the callback, and settled nothing. */
export const answeredElsewhere = (value: Answer.Answer, pick: Pick = open(0)) =>
  new Written((state) => {
    const record = pick(state)
    if (record === undefined) return []
    const callback = record.callback
    return [(meta) =>
      new TurnEventSchemas.CallbackResolved({
        sessionId: callback.sessionId,
        turnId: callback.turnId,
        ...meta,
        callbackId: callback.id,
        resolution: "answered",
        answer: value
      })]
  })

/** An owner recovers the tree (decided by `newOwner` unless `.by(...)` says otherwise). */
export const resume = new Step(() => ({ _tag: "Resume" }), newOwner)
/** The log moved on: settle. */
export const settle = new Step(() => ({ _tag: "Settle" }))

// =============================================================================
// Expected events
// =============================================================================

/** A value a field must match, shown by its label. */
export class Matcher {
  constructor(readonly label: string, readonly test: (u: unknown) => boolean) {}
}

/** A string (or a tool result) containing `text`. */
export const contains = (text: string) =>
  new Matcher(`…${text}…`, (u) => (typeof u === "string" ? u : JSON.stringify(u) ?? "").includes(text))

/** A turn's final state of this tag (and, for `Failed`, this error). */
export const final = (tag: "Completed" | "Cancelled" | "Failed", error?: string) =>
  new Matcher(`${tag}${error === undefined ? "" : `(${error})`}`, (u) => {
    if (typeof u !== "object" || u === null || !("_tag" in u) || u._tag !== tag) return false
    return error === undefined || ("error" in u && typeof u.error === "object" && u.error !== null &&
      "_tag" in u.error && u.error._tag === error)
  })

/** A callback of this kind. */
export const callbackOf = (kind: "approval" | "client_tool" | "sign_in") =>
  new Matcher(kind, (u) => typeof u === "object" && u !== null && "kind" in u && u.kind === kind)

/** An event's fields, or matchers of them. */
export type Fields<Tag extends TurnEvent.TurnEvent["_tag"]> = {
  readonly [K in keyof Extract<TurnEvent.TurnEvent, { readonly _tag: Tag }>]?: unknown
}

export interface Expected {
  readonly _tag: TurnEvent.TurnEvent["_tag"]
  readonly fields: Readonly<Record<string, unknown>>
}

/** An event of this tag whose named fields are these (or match these matchers). */
export const ev = <Tag extends TurnEvent.TurnEvent["_tag"]>(tag: Tag, fields: Fields<Tag>): Expected => ({
  _tag: tag,
  fields
})

export type ExpectedEvent = TurnEvent.TurnEvent["_tag"] | Expected

export type Outcome =
  | { readonly _tag: "Appends"; readonly events: ReadonlyArray<ExpectedEvent> }
  | { readonly _tag: "Rejects"; readonly rejection: Rejection["_tag"]; readonly events: ReadonlyArray<ExpectedEvent> }

/** The command is accepted and appends exactly these events. */
export const appends = (...events: ReadonlyArray<ExpectedEvent>): Outcome => ({ _tag: "Appends", events })
/** The command is accepted and appends nothing. */
export const nothing: Outcome = appends()
/** The command is rejected; it appends nothing, or (a deadline that passed) these events. */
export const rejects = (rejection: Rejection["_tag"], ...events: ReadonlyArray<ExpectedEvent>): Outcome => ({
  _tag: "Rejects",
  rejection,
  events
})

const tagOf = (expected: ExpectedEvent) => (typeof expected === "string" ? expected : expected._tag)

const show = (value: unknown): string =>
  value instanceof Matcher
    ? value.label
    : value === owner
    ? "owner"
    : value === newOwner
    ? "newOwner"
    : typeof value === "object" && value !== null && "_tag" in value && Object.keys(value).length === 1
    ? String(value._tag)
    : JSON.stringify(value)

const showEvents = (events: ReadonlyArray<ExpectedEvent>) =>
  events.map((expected) =>
    typeof expected === "string" || Object.keys(expected.fields).length === 0
      ? tagOf(expected)
      : `${expected._tag}(${Object.entries(expected.fields).map(([k, v]) => `${k}: ${show(v)}`).join(", ")})`
  ).join(", ")

export const showOutcome = (outcome: Outcome): string => {
  const events = outcome.events.length === 0 ? "nothing appended" : showEvents(outcome.events)
  return outcome._tag === "Appends" ? events : `${outcome.rejection}, ${events}`
}

// =============================================================================
// Running steps
// =============================================================================

/** A tree's log and state, from its header. */
export interface Tree {
  readonly header: TreeState.Header
  readonly state: TreeState.TreeState
  readonly log: ReadonlyArray<TurnEvent.TurnEvent>
}

export const emptyTree = (agent = assistant): Tree => {
  const h = header(agent)
  return { header: h, state: TreeState.empty(h), log: [] }
}

/** Decides one step. */
export const decideStep = (tree: Tree, step: Step) =>
  decide(tree.state, step.make(tree.state), step.time, seed, env, executorOf(step.decider))

/** Decides the steps one after another; each must be accepted. */
export const given = (steps: ReadonlyArray<Step | Written>, from: Tree = emptyTree()): Tree =>
  steps.reduce((tree, step, index) => {
    if (step instanceof Written) {
      const events = step.make(tree.state).map((make, i) => make({ seq: tree.state.nextSeq + i, at: step.time }))
      return { header: tree.header, state: TreeState.foldFrom(tree.state, events), log: [...tree.log, ...events] }
    }
    const decision = decideStep(tree, step)
    if (Result.isFailure(decision.reply)) {
      assert.fail(`given step ${index} (${step.make(tree.state)._tag}) was refused: ${decision.reply.failure.message}`)
    }
    return { header: tree.header, state: decision.state, log: [...tree.log, ...decision.events] }
  }, from)

/** A state with its `HashMap`s as entry arrays sorted by key, to compare with `deepStrictEqual`. */
export const plain = (state: TreeState.TreeState) => {
  const entries = <K extends string, V>(map: HashMap.HashMap<K, V>) =>
    Array.from(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return {
    ...state,
    sessions: entries(state.sessions).map(([id, session]) => [id, { ...session, requests: entries(session.requests) }]),
    turns: entries(state.turns),
    callbacks: entries(state.callbacks)
  }
}

const matches = (expected: unknown, actual: unknown) => {
  if (expected instanceof Matcher) return expected.test(actual)
  try {
    assert.deepStrictEqual(actual, expected)
    return true
  } catch {
    return false
  }
}

/** The events match the expected ones: the same tags in the same order, and the fields each names. */
export const assertEvents = (
  events: ReadonlyArray<TurnEvent.TurnEvent>,
  expected: ReadonlyArray<ExpectedEvent>
) => {
  assert.deepStrictEqual(events.map((event) => event._tag), expected.map(tagOf), "the events appended")
  expected.forEach((want, i) => {
    if (typeof want === "string") return
    const event = events[i] as unknown as Record<string, unknown>
    for (const [key, value] of Object.entries(want.fields)) {
      assert.isTrue(
        matches(value, event[key]),
        `event ${i} (${want._tag}).${key}: expected ${show(value)}, got ${JSON.stringify(event[key])}`
      )
    }
  })
}

// =============================================================================
// Rules
// =============================================================================

export interface Rule {
  /** The situation, as a rule states it ("an approval already answered"). */
  readonly rule: string
  readonly agent?: typeof assistant
  readonly given?: ReadonlyArray<Step | Written>
  readonly when: Step
  readonly then: Outcome
  /** Further checks of the state the decision leaves. */
  readonly and?: (
    state: TreeState.TreeState,
    events: ReadonlyArray<TurnEvent.TurnEvent>,
    reply: Decision["reply"]
  ) => void
}

export const check = (command: Command["_tag"], row: Rule) => {
  const before = given(row.given ?? [], emptyTree(row.agent))
  const made = row.when.make(before.state)
  assert.strictEqual(made._tag, command, "the rule's command")
  const decision = decide(before.state, made, row.when.time, seed, env, executorOf(row.when.decider))
  const outcome = row.then
  if (outcome._tag === "Rejects") {
    assert.isTrue(Result.isFailure(decision.reply), `expected ${outcome.rejection}, the command was accepted`)
    if (Result.isFailure(decision.reply)) assert.strictEqual(decision.reply.failure._tag, outcome.rejection)
    if (outcome.events.length === 0) assert.strictEqual(decision.state, before.state, "a rejection changes nothing")
  } else if (Result.isFailure(decision.reply)) {
    assert.fail(`expected acceptance, got ${decision.reply.failure._tag}: ${decision.reply.failure.message}`)
  }
  assertEvents(decision.events, outcome.events)
  // Whatever the rule: the events continue the log's seqs, and the state is the fold of the log.
  assert.deepStrictEqual(
    decision.events.map((event) => event.seq),
    decision.events.map((_, i) => before.state.nextSeq + i),
    "the seqs continue the log"
  )
  const log = [...before.log, ...decision.events]
  assert.deepStrictEqual(plain(TreeState.fold(before.header, log)), plain(decision.state), "fold(log) = state")
  row.and?.(decision.state, decision.events, decision.reply)
}

/** One table of rules for a command: one test per row, named by the row's situation and outcome. */
export const rules = (command: Command["_tag"], table: ReadonlyArray<Rule>) =>
  describe(command, () => {
    for (const row of table) it(`${row.rule} → ${showOutcome(row.then)}`, () => check(command, row))
  })
