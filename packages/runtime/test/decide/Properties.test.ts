import { assert, describe, it } from "@effect/vitest"
import type { AgentSpec, Ids, TurnEvent } from "@parley/core"
import { Answer, ParleyError } from "@parley/core"
import { SnapshotCodec, TreeState } from "@parley/log"
import { Ajv } from "ajv"
import { Arbitrary, DateTime, Duration, HashMap, Result, Schema } from "effect"
import type { Command, Decision } from "../../src/internal/decide.js"
import { decide } from "../../src/internal/decide.js"
import { assistant, env, lead, oneStep, seed, t0, treeId } from "./fixtures.js"
import type { Executor, Tree } from "./spec.js"
import { emptyTree, plain } from "./spec.js"

// Whatever commands arrive, in whatever order, from the owner or from anyone: random sequences of commands (messages,
// model results calling random tools of the agent, answers of every kind to random callbacks, cancels, expiries, tool
// results, failures, recoveries by new owners), each decided on the state the previous ones left. A rejection appends
// nothing (but the expiry of a callback whose deadline passed); the log stays the projection's: `fold(log)` is the
// decided state, and the invariants of a tree hold after every sequence.

// =============================================================================
// Intents: what happens next, interpreted against the state it happens in
// =============================================================================

/** Indexes pick among what the state has (modulo its size), so every intent means something in any state. */
type Intent =
  | { readonly _tag: "Send"; readonly session: number; readonly requestId: string | undefined }
  | {
    readonly _tag: "ModelStep"
    readonly turn: number
    readonly text: boolean
    readonly calls: ReadonlyArray<{ readonly tool: number; readonly arg: number }>
    readonly stale: boolean
  }
  | { readonly _tag: "ModelStepFailed"; readonly turn: number }
  | { readonly _tag: "Answer"; readonly callback: number; readonly kind: number; readonly route: number }
  | { readonly _tag: "Cancel"; readonly session: number }
  | { readonly _tag: "Expire"; readonly callback: number }
  | { readonly _tag: "ToolFinished"; readonly turn: number; readonly call: number; readonly isFailure: boolean }
  | { readonly _tag: "WorkFailed"; readonly turn: number }
  | { readonly _tag: "Resume"; readonly takeOver: boolean }
  | { readonly _tag: "Settle" }

interface Move {
  readonly intent: Intent
  /** Whether the tree's owner decides it (with its lease), or a process without executor. */
  readonly byOwner: boolean
  /** Minutes since the previous move (callbacks expire after 60). */
  readonly minutes: number
}

// The generators, with Effect's `Arbitrary`: a natural number up to `max`, a boolean, one of some values (a value
// given twice comes twice as often), one of some generators by weight, and a value or `undefined`.
const nat = (max: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: max })))
const boolean = Arbitrary.schema(Schema.Boolean)
const constantFrom = <const A>(...values: ReadonlyArray<A>): Arbitrary.Arbitrary<A> =>
  Arbitrary.map(nat(values.length - 1), (i) => values[i])
const oneof = <A>(
  ...weighted: ReadonlyArray<{ readonly arbitrary: Arbitrary.Arbitrary<A>; readonly weight: number }>
): Arbitrary.Arbitrary<A> =>
  Arbitrary.flatMap(nat(weighted.reduce((sum, { weight }) => sum + weight, 0) - 1), (n) => {
    for (const { arbitrary, weight } of weighted) {
      if (n < weight) return arbitrary
      n -= weight
    }
    return weighted[weighted.length - 1].arbitrary
  })
const option = <A>(arbitrary: Arbitrary.Arbitrary<A>): Arbitrary.Arbitrary<A | undefined> =>
  oneof<A | undefined>({ arbitrary: Arbitrary.Constant(undefined), weight: 1 }, { arbitrary, weight: 5 })

const index = nat(20)

const intent: Arbitrary.Arbitrary<Intent> = oneof<Intent>(
  {
    arbitrary: Arbitrary.all({
      _tag: Arbitrary.Constant("Send"),
      session: index,
      // A few ids, often repeated (a retry), or none.
      requestId: option(constantFrom("req-a", "req-b", "req-c"))
    }),
    weight: 1
  },
  {
    arbitrary: Arbitrary.all({
      _tag: Arbitrary.Constant("ModelStep"),
      turn: index,
      text: boolean,
      calls: oneof<ReadonlyArray<{ readonly tool: number; readonly arg: number }>>(
        { arbitrary: Arbitrary.Constant([]), weight: 1 },
        {
          arbitrary: Arbitrary.array(Arbitrary.all({ tool: index, arg: index }), { minLength: 1, maxLength: 3 }),
          weight: 4
        }
      ),
      stale: Arbitrary.map(nat(9), (n) => n === 0)
    }),
    weight: 6
  },
  { arbitrary: Arbitrary.all({ _tag: Arbitrary.Constant("ModelStepFailed"), turn: index }), weight: 1 },
  {
    arbitrary: Arbitrary.all({ _tag: Arbitrary.Constant("Answer"), callback: index, kind: index, route: index }),
    weight: 8
  },
  { arbitrary: Arbitrary.all({ _tag: Arbitrary.Constant("Cancel"), session: index }), weight: 1 },
  { arbitrary: Arbitrary.all({ _tag: Arbitrary.Constant("Expire"), callback: index }), weight: 1 },
  {
    arbitrary: Arbitrary.all({
      _tag: Arbitrary.Constant("ToolFinished"),
      turn: index,
      call: index,
      isFailure: boolean
    }),
    weight: 4
  },
  { arbitrary: Arbitrary.all({ _tag: Arbitrary.Constant("WorkFailed"), turn: index }), weight: 1 },
  { arbitrary: Arbitrary.all({ _tag: Arbitrary.Constant("Resume"), takeOver: boolean }), weight: 2 },
  { arbitrary: Arbitrary.Constant({ _tag: "Settle" }), weight: 1 }
)

const move: Arbitrary.Arbitrary<Move> = Arbitrary.all({
  intent,
  byOwner: Arbitrary.map(nat(3), (n) => n !== 0),
  minutes: constantFrom(0, 0, 0, 0, 0, 1, 10, 30, 61)
})

/** The root agent, by name (so a counterexample reads). */
const agents = { assistant, lead, oneStep }
const agent = oneof<keyof typeof agents>(
  { arbitrary: Arbitrary.Constant("assistant"), weight: 2 },
  { arbitrary: Arbitrary.Constant("lead"), weight: 2 },
  { arbitrary: Arbitrary.Constant("oneStep"), weight: 1 }
)

const at = <A>(items: ReadonlyArray<A>, i: number): A | undefined =>
  items.length === 0 ? undefined : items[i % items.length]

const byId = <A>(items: Iterable<A>, id: (a: A) => string) =>
  Array.from(items).sort((a, b) => (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0))

const sessionsOf = (state: TreeState.TreeState) => byId(HashMap.values(state.sessions), (s) => s.sessionId)
const runningOf = (state: TreeState.TreeState) => byId(TreeState.runningTurns(state), (t) => t.turnId)
const callbacksOf = (state: TreeState.TreeState) =>
  Array.from(HashMap.values(state.callbacks)).sort((a, b) => a.seq - b.seq)

/** Mostly an open callback; else any callback the tree had. */
const pickCallback = (state: TreeState.TreeState, i: number) => {
  const open = state.open.flatMap((id) => TreeState.callback(state, id) ?? [])
  return at(i % 4 === 0 || open.length === 0 ? callbacksOf(state) : open, i)
}

const answers: ReadonlyArray<Answer.Answer> = [
  new Answer.AllowApproval(),
  new Answer.DenyApproval({ reason: "no" }),
  Answer.ClientToolResult.success({ city: "Lyon" }),
  Answer.ClientToolResult.success({ town: "Lyon" }),
  Answer.ClientToolResult.failure("failed"),
  new Answer.SignInAnswer({ connected: ["gmail"] }),
  new Answer.SignInAnswer({ denied: ["gmail"] }),
  new Answer.SignInAnswer({})
]

const toolArguments = (state: TreeState.TreeState, agent: AgentSpec.AgentSpec, name: string, arg: number): unknown => {
  const sessionIds = [...sessionsOf(state).map((s) => s.sessionId), "ses_unknown"]
  switch (name) {
    case "agents_spawn":
      // Mostly a subagent the agent declares.
      return { agent: arg % 5 === 0 ? "poet" : at(agent.subagents.map((s) => s.name), arg), task: "Go." }
    case "agents_message":
      return { sessionId: at(sessionIds, arg), message: "More." }
    case "agents_interrupt":
      return { sessionId: at(sessionIds, arg) }
    case "agents_wait":
      return arg % 2 === 0 ? {} : { sessionIds: [at(sessionIds, arg)] }
    default:
      return {}
  }
}

const modelFailure = new ParleyError.ModelFailure({ module: "Engine", method: "modelStep", model: "scripted" })
const toolFailure = new ParleyError.ToolFailure({ module: "Engine", method: "runTool", toolId: "client.charge" })

/** The command an intent means in this state. */
const commandOf = (state: TreeState.TreeState, intent: Intent): Command => {
  switch (intent._tag) {
    case "Send":
      return {
        _tag: "SendMessage",
        sessionId: at(sessionsOf(state), intent.session)?.sessionId ?? treeId,
        input: "Hi.",
        requestId: intent.requestId
      }
    case "ModelStep": {
      const turn = at(runningOf(state).filter((t) => t.modelPending), intent.turn)
      const agent = turn === undefined ? undefined : TreeState.session(state, turn.sessionId)?.agent
      const names = agent === undefined ? [] : [...Array.from(env.toolsOf(agent).keys()).sort(), "nope"]
      const builtins = names.filter((name) => name.startsWith("agents_"))
      return {
        _tag: "ModelStepDone",
        turnId: turn?.turnId ?? ("turn_none" as Ids.TurnId),
        messageId: intent.stale ? "msg_old" : (turn?.step?.messageId ?? "msg_none"),
        text: intent.text ? "Text." : "",
        reasoning: [],
        toolCalls: intent.calls.flatMap((call, i) => {
          // A third of the calls are of the `agents_*` builtins, when the agent has them.
          const name = at(call.tool % 3 === 0 && builtins.length > 0 ? builtins : names, call.tool)
          return name === undefined || agent === undefined
            ? []
            : [{ id: `call_${state.nextSeq}_${i}`, name, params: toolArguments(state, agent, name, call.arg) }]
        })
      }
    }
    case "ModelStepFailed": {
      const turn = at(runningOf(state), intent.turn)
      return {
        _tag: "ModelStepFailed",
        turnId: turn?.turnId ?? ("turn_none" as Ids.TurnId),
        messageId: turn?.step?.messageId ?? "msg_none",
        error: modelFailure
      }
    }
    case "Answer": {
      const record = pickCallback(state, intent.callback)
      const callback = record?.callback
      const turns = byId(HashMap.values(state.turns), (t) => t.turnId)
      const other = at(turns, intent.route)
      // Mostly the callback's own session and turn; else the root's running turn, any turn of the tree, or a session
      // the tree does not have.
      const route = intent.route % 8
      const none = "turn_none" as Ids.TurnId
      const [sessionId, turnId] = route === 5
        ? [treeId, TreeState.rootTurn(state)?.turnId ?? none]
        : route === 6
        ? [other?.sessionId ?? treeId, other?.turnId ?? none]
        : route === 7
        ? ["ses_unknown" as Ids.SessionId, callback?.turnId ?? none]
        : [callback?.sessionId ?? treeId, callback?.turnId ?? TreeState.rootTurn(state)?.turnId ?? none]
      // Mostly an answer of the kind the callback takes (fitting or not); else any answer.
      const fitting = callback === undefined || intent.kind % 3 === 0
        ? answers
        : answers.filter((answer) => Answer.expectedFor(callback).includes(answer._tag))
      return {
        _tag: "Answer",
        sessionId,
        turnId,
        callbackId: callback?.id ?? ("cb_none" as Ids.CallbackId),
        answer: at(fitting, intent.kind) ?? new Answer.AllowApproval(),
        // None, or one of two ids: some answers repeat the id of the one that won (a retry), some do not.
        requestId: [undefined, "req-a", "req-b"][Math.floor(intent.route / 8) % 3]
      }
    }
    case "Cancel":
      return { _tag: "Cancel", sessionId: at(sessionsOf(state), intent.session)?.sessionId ?? treeId }
    case "Expire":
      return {
        _tag: "Expire",
        callbackId: pickCallback(state, intent.callback)?.callback.id ?? ("cb_none" as Ids.CallbackId)
      }
    case "ToolFinished": {
      // Mostly a call that runs; else any call of a running turn.
      const executing = runningOf(state).flatMap((turn) =>
        turn.calls.filter((call) => call.stage._tag === "Executing").map((call) => ({ turn, call }))
      )
      const anyCall = runningOf(state).flatMap((turn) => turn.calls.map((call) => ({ turn, call })))
      const target = at(intent.call % 4 === 0 || executing.length === 0 ? anyCall : executing, intent.turn)
      return {
        _tag: "ToolFinished",
        turnId: target?.turn.turnId ?? ("turn_none" as Ids.TurnId),
        toolCallId: target?.call.toolCallId ?? "call_none",
        isFailure: intent.isFailure,
        result: intent.isFailure ? "failed" : { ok: true }
      }
    }
    case "WorkFailed":
      return {
        _tag: "WorkFailed",
        turnId: at(runningOf(state), intent.turn)?.turnId ?? ("turn_none" as Ids.TurnId),
        error: toolFailure
      }
    case "Resume":
      return { _tag: "Resume" }
    case "Settle":
      return { _tag: "Settle" }
  }
}

// =============================================================================
// Running a sequence, checking each decision
// =============================================================================

interface Decided {
  readonly command: Command
  readonly now: DateTime.Utc
  readonly executor: Executor | undefined
  readonly before: TreeState.TreeState
  readonly decision: Decision
}

/** What one decision must satisfy, whatever it was. */
const checkDecision = ({ before, command, decision, executor, now }: Decided) => {
  const { events, reply } = decision
  if (Result.isFailure(reply)) {
    // A rejection appends nothing — but the expiry of the callback an answer came too late for.
    if (events.length > 0) {
      const first = events[0]
      assert.strictEqual(command._tag, "Answer", "only a late answer appends while refused")
      assert.strictEqual(reply.failure._tag, "CallbackNotOpen")
      assert.isTrue(
        first._tag === "CallbackResolved" && first.resolution === "expired" &&
          command._tag === "Answer" && first.callbackId === command.callbackId,
        "a refused answer appends the expiry of its callback first"
      )
    } else {
      assert.strictEqual(decision.state, before, "a rejection leaves the state as it was")
    }
  }
  assert.deepStrictEqual(
    events.map((event) => event.seq),
    events.map((_, i) => before.nextSeq + i),
    "the seqs continue the log"
  )
  // A send repeated with a request id the session has queues nothing and answers that turn.
  const repeated = command._tag === "SendMessage" && command.requestId !== undefined
    ? TreeState.requested(before, command.sessionId, command.requestId)
    : undefined
  if (repeated !== undefined) {
    // (The owner's decision may settle what was pending first: a subagent started then queues the child's turn.)
    assert.isFalse(
      events.some((event) => event._tag === "TurnQueued" && event.sessionId === repeated.sessionId),
      "a repeated request id queues no turn in its session"
    )
    assert.strictEqual(Result.getOrUndefined(reply)?.turnId, repeated.turnId, "a repeated request id answers its turn")
  }
  // Only the owner, under its lease, records starts.
  for (const event of events) {
    if (event._tag === "ToolExecutionStarted") {
      assert.isDefined(executor, "a ToolExecutionStarted from a decision without executor")
      assert.deepStrictEqual(event.executor, executor, "a ToolExecutionStarted names the decision's executor")
    }
    if (event._tag === "SubagentStarted") assert.isDefined(executor, "a SubagentStarted without executor")
  }
  // A TurnBlocked is appended when the tree cannot progress, and a tree that cannot progress says so.
  let state = before
  for (const event of events) {
    if (event._tag === "TurnBlocked") {
      assert.isTrue(TreeState.isBlocked(state), "TurnBlocked while not blocked")
      // It names the callbacks the root turn lists, and is the root turn's.
      const root = TreeState.rootTurn(state)
      assert.strictEqual(event.turnId, root?.turnId)
      assert.deepStrictEqual(
        event.callbackIds.map(String),
        root === undefined ? [] : TreeState.openCallbacks(state, root.turnId).map((callback) => callback.id),
        "TurnBlocked names the callbacks its turn lists"
      )
    }
    state = TreeState.evolve(state, event)
  }
  // A spawn names the turn it queues: the next event.
  events.forEach((event, i) => {
    if (event._tag !== "SubagentStarted") return
    const next = events[i + 1]
    assert.isTrue(
      next?._tag === "TurnQueued" && next.turnId === event.childTurnId && next.sessionId === event.childSessionId,
      "a SubagentStarted is followed by the TurnQueued of the child turn it names"
    )
  })
  if (TreeState.isBlocked(decision.state)) {
    assert.isDefined(decision.state.blockedAt, "a blocked tree has its TurnBlocked")
  }
  // An accepted answer is recorded first, as it was given.
  if (command._tag === "Answer" && Result.isSuccess(reply)) {
    const first = events[0]
    const repeated = TreeState.callback(before, command.callbackId)
    if (repeated?.resolution === "answered") {
      // A retry of the answer that won: accepted again, and resolves nothing. (The owner's decision may record the
      // start of a call an earlier answer allowed, as with any command.)
      assert.isTrue(command.requestId !== undefined && repeated.requestId === command.requestId, "only a retry")
      assert.isFalse(events.some((event) => event._tag === "CallbackResolved"), "a retry resolves nothing")
    } else {
      assert.isTrue(
        first?._tag === "CallbackResolved" && first.resolution === "answered" && first.answer === command.answer &&
          first.requestId === command.requestId,
        "an accepted answer appends its CallbackResolved first, with its request id"
      )
    }
  }
  // An answer that does not fit the schema the callback publishes (`TreeState.answerSchema`) is refused as a mismatch;
  // one that fits is accepted, for approvals and client tools (a sign-in must also name each request once).
  if (command._tag === "Answer") {
    const record = TreeState.callback(before, command.callbackId)
    const routed = Result.isSuccess(reply) || reply.failure._tag === "AnswerMismatch"
    if (record !== undefined && record.resolution === undefined && routed) {
      const fits = fitsAnswerSchema(before, record.callback, command.answer)
      if (!fits) assert.isTrue(Result.isFailure(reply), "an answer outside the callback's answer schema is refused")
      if (fits && record.callback._tag !== "OpenSignIn") {
        assert.isTrue(Result.isSuccess(reply), "an answer that fits the callback's answer schema is accepted")
      }
    }
  }
  // A subagent's turn that ends is reported to its parent by the next event.
  events.forEach((event, i) => {
    if (event._tag !== "TurnEnded" || event.sessionId === treeId) return
    const next = events[i + 1]
    assert.isTrue(
      next?._tag === "SubagentEnded" && next.childTurnId === event.turnId,
      "a subagent's TurnEnded is followed by its SubagentEnded"
    )
  })
  // A cancel leaves no turn running or queued in the session's subtree.
  if (command._tag === "Cancel" && Result.isSuccess(reply)) {
    for (const member of TreeState.subtree(decision.state, command.sessionId)) {
      assert.isUndefined(member.running, "a cancelled subtree runs nothing")
      assert.deepStrictEqual(member.queue, [], "a cancelled subtree has nothing queued")
    }
  }
  // A free session starts its next queued turn.
  for (const session of HashMap.values(decision.state.sessions)) {
    if (session.running === undefined) assert.deepStrictEqual(session.queue, [], "a free session has nothing queued")
  }
  // No running turn took more model steps than its agent allows.
  for (const turn of TreeState.runningTurns(decision.state)) {
    const limit = TreeState.session(decision.state, turn.sessionId)?.agent.maxSteps ?? 25
    assert.isAtMost(turn.steps, limit, "a turn takes at most maxSteps steps")
  }
  // A rejection that appends nothing decides nothing (it does not settle); the rest below is about decisions.
  if (events.length === 0 && Result.isFailure(reply)) return
  // The decision settled everything: settling again, as the same engine, appends nothing.
  assert.deepStrictEqual(
    decide(decision.state, { _tag: "Settle" }, now, seed, env, executor).events.map((event) => event._tag),
    [],
    "settling a settled tree appends nothing"
  )
  // What the owner decided, it started: no call is left that only the owner may move on.
  if (executor !== undefined) {
    for (const turn of TreeState.runningTurns(decision.state)) {
      for (const call of turn.calls) {
        const stage = call.stage
        const left = (stage._tag === "Started" && call.toolId !== "agents.wait") ||
          (stage._tag === "Callback" &&
            TreeState.callback(decision.state, stage.callbackId)?.resolution !== undefined)
        assert.isFalse(left, `the owner left ${call.name} (${stage._tag}) unstarted`)
      }
      const allDone = turn.calls.length > 0 && turn.calls.every((call) => call.stage._tag === "Completed")
      assert.isTrue(turn.modelPending || !allDone, "a running turn whose calls all have results has its next step")
    }
  }
}

const ajv = new Ajv({ allErrors: true, strict: false })
const encodeAnswer = Schema.encodeSync(Answer.Answer)

/** Whether an answer fits the JSON Schema a callback publishes for its answers. */
export const fitsAnswerSchema = (
  state: TreeState.TreeState,
  callback: TreeState.CallbackRecord["callback"],
  value: Answer.Answer
): boolean => ajv.validate(TreeState.answerSchema(state, callback), encodeAnswer(value))

const roundTrip = (state: TreeState.TreeState): TreeState.TreeState => {
  const json = SnapshotCodec.encode(state)
  if (Result.isFailure(json)) return assert.fail(`the state does not encode: ${json.failure.message}`)
  const decoded = SnapshotCodec.decode(json.success)
  if (Result.isFailure(decoded)) return assert.fail(`the snapshot does not decode: ${decoded.failure.message}`)
  return decoded.success
}

/** What the log and the state of a tree must satisfy after any accepted sequence. */
const checkTree = ({ header, log, state }: Tree) => {
  assert.deepStrictEqual(log.map((event) => event.seq), log.map((_, i) => i), "seqs are 0..n-1")
  assert.deepStrictEqual(plain(TreeState.fold(header, log)), plain(state), "fold(log) is the decided state")
  assert.deepStrictEqual(plain(roundTrip(state)), plain(state), "decodeSnapshot(encodeSnapshot(state)) is the state")

  // A request id queues at most one turn per session.
  const requests = log.flatMap((event) =>
    event._tag === "TurnQueued" && event.requestId !== undefined ? [`${event.sessionId} ${event.requestId}`] : []
  )
  assert.strictEqual(new Set(requests).size, requests.length, "a request id queues one turn per session")

  // Callbacks: opened once, resolved at most once and after they opened; `open` is opened minus resolved.
  const opened: Array<string> = []
  const resolved = new Set<string>()
  const byTurn = new Map<string, { calls: Set<string>; callbacks: Set<string> }>()
  const of = (turnId: string) => {
    const known = byTurn.get(turnId) ?? { calls: new Set<string>(), callbacks: new Set<string>() }
    byTurn.set(turnId, known)
    return known
  }
  const running = new Map<string, string>()
  const ended = new Set<string>()
  for (const event of log) {
    switch (event._tag) {
      case "CallbackOpened":
        assert.notInclude(opened, event.callback.id, "a callback opens once")
        opened.push(event.callback.id)
        of(event.callback.turnId).callbacks.add(event.callback.id)
        break
      case "CallbackResolved":
        assert.include(opened, event.callbackId, "a callback resolves after it opened")
        assert.isFalse(resolved.has(event.callbackId), `callback ${event.callbackId} resolved twice`)
        resolved.add(event.callbackId)
        of(callbackTurn(log, event.callbackId)).callbacks.delete(event.callbackId)
        break
      case "ToolCallStarted":
        of(event.turnId).calls.add(event.toolCallId)
        break
      case "ToolCallCompleted":
        assert.isTrue(of(event.turnId).calls.delete(event.toolCallId), "a call completes once, after it started")
        break
      case "TurnStarted":
        assert.isUndefined(running.get(event.sessionId), "at most one running turn per session")
        running.set(event.sessionId, event.turnId)
        break
      case "TurnEnded": {
        assert.isFalse(ended.has(event.turnId), "a turn ends once")
        ended.add(event.turnId)
        if (running.get(event.sessionId) === event.turnId) running.delete(event.sessionId)
        const left = of(event.turnId)
        assert.deepStrictEqual([...left.callbacks], [], "an ended turn has no open callbacks")
        assert.deepStrictEqual([...left.calls], [], "every tool call of an ended turn completed")
        break
      }
    }
  }
  assert.deepStrictEqual(state.open.map(String), opened.filter((id) => !resolved.has(id)), "open = opened - resolved")

  // Sessions: the running turn runs, the queue holds queued turns, and every running turn is its session's.
  for (const session of HashMap.values(state.sessions)) {
    const turn = session.running === undefined ? undefined : TreeState.turn(state, session.running)
    if (session.running !== undefined) assert.strictEqual(turn?.status, "running")
    assert.strictEqual(session.running, running.get(session.sessionId))
    for (const queued of session.queue) assert.strictEqual(TreeState.turn(state, queued)?.status, "queued")
  }
  for (const turn of HashMap.values(state.turns)) {
    if (turn.status === "running") assert.strictEqual(TreeState.session(state, turn.sessionId)?.running, turn.turnId)
  }
  for (const id of state.open) {
    const turnId = TreeState.callback(state, id)?.callback.turnId
    const status = turnId === undefined ? undefined : TreeState.turn(state, turnId)?.status
    assert.strictEqual(status, "running", `the open callback ${id} belongs to a running turn`)
  }
}

const callbackTurn = (log: ReadonlyArray<TurnEvent.TurnEvent>, callbackId: string): string => {
  for (const event of log) {
    if (event._tag === "CallbackOpened" && event.callback.id === callbackId) return event.callback.turnId
  }
  return ""
}

/** Decides the moves one after another, checking each decision; returns the tree of the accepted ones. */
const play = (agent: AgentSpec.AgentSpec, moves: ReadonlyArray<Move>, checkEachTree = false): Tree => {
  let tree = emptyTree(agent)
  let lease: Executor = { owner: "engine-a", epoch: 1 }
  let now = t0
  const first: Move = { intent: { _tag: "Send", session: 0, requestId: undefined }, byOwner: true, minutes: 0 }
  for (const { byOwner, intent, minutes } of [first, ...moves]) {
    now = DateTime.addDuration(now, Duration.minutes(minutes))
    if (intent._tag === "Resume" && intent.takeOver) {
      // Another engine claims the tree: a new lease, a higher epoch. Its first decision is its Resume.
      lease = { owner: lease.owner === "engine-a" ? "engine-b" : "engine-a", epoch: lease.epoch + 1 }
    }
    // A Resume is always the owner's.
    const executor = byOwner || intent._tag === "Resume" ? lease : undefined
    const command = commandOf(tree.state, intent)
    const decision = decide(tree.state, command, now, seed, env, executor)
    checkDecision({ before: tree.state, command, decision, executor, now })
    tree = { header: tree.header, state: decision.state, log: [...tree.log, ...decision.events] }
    if (checkEachTree) checkTree(tree)
  }
  return tree
}

describe("decide: properties", () => {
  it.prop(
    "any sequence of commands: each decision appends what it may, and the tree's invariants hold",
    [agent, Arbitrary.array(move, { minLength: 5, maxLength: 60 })],
    ([name, moves]) => {
      checkTree(play(agents[name], moves))
    },
    { arbitrary: { runs: 200, size: 60 } }
  )

  it.prop(
    "after every command of a sequence, the tree's invariants hold",
    [Arbitrary.array(move, { minLength: 1, maxLength: 25 })],
    ([moves]) => {
      play(lead, moves, true)
    },
    { arbitrary: { runs: 40, size: 25 } }
  )

  it.prop(
    "a decision is a function of the state, the command, the time and the executor: the same moves, the same log",
    [agent, Arbitrary.array(move, { minLength: 5, maxLength: 40 })],
    ([name, moves]) => {
      assert.deepStrictEqual(play(agents[name], moves).log, play(agents[name], moves).log)
    },
    { arbitrary: { runs: 50, size: 40 } }
  )
})
