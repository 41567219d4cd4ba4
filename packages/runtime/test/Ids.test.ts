import { assert, describe, it } from "@effect/vitest"
import type { TurnEvent, TurnState } from "@parley/core"
import { Agent, Answer, Permissions, Session, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Effect, Layer, Schema } from "effect"

// Unguessable ids (issue 35, point 6): every id the engine mints — sessions, turns, callbacks, subagents' sessions and
// turns, grants — is its prefix and 20 random hex digits. Nothing about one id tells another: not the tree's id, not
// the seq of the event that made it, not the id made before it. Ids are minted once and recorded: an engine that
// resumes a tree from its log (another process over the same store) sees the very same ids.

/** `effect`, failed when it has not finished after `seconds` of real time (a `TestClock` never moves by itself). */
const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 5): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    Effect.callback<void>((resume) => {
      const timer = setTimeout(() => resume(Effect.void), seconds * 1000)
      return Effect.sync(() => clearTimeout(timer))
    }).pipe(Effect.andThen(Effect.sync(() => assert.fail(`${what}: still waiting after ${seconds} s (real time)`))))
  )

const stateAs = <Tag extends TurnState.TurnState["_tag"]>(
  state: TurnState.TurnState,
  tag: Tag
): Extract<TurnState.TurnState, { _tag: Tag }> => {
  assert.strictEqual(
    state._tag,
    tag,
    `the turn is ${state._tag}${state._tag === "Failed" ? ` (${state.error.message})` : ""}`
  )
  return state as Extract<TurnState.TurnState, { _tag: Tag }>
}

// ----- the agent: a runtime tool the policy asks for, and a subagent it spawns and waits for -----

/** The callback ids the handler of `send_email` was given, one per run (the runtime runs it: no callback opens). */
const seenByHandler: Array<string> = []

const sendEmail = Tool.make("send_email", {
  description: "Sends an email.",
  parameters: { to: Schema.String },
  success: Schema.Struct({ sent: Schema.Boolean })
}, (_params, callback) => {
  seenByHandler.push(callback.id)
  return { sent: true }
})

const researcher = Agent.make({ name: "researcher", model: "scripted", instructions: "Look it up." })

const lead = Agent.make({
  name: "lead",
  model: "scripted",
  instructions: "Send emails, or have the researcher look things up.",
  tools: [sendEmail.spec],
  subagents: [researcher],
  permissions: new Permissions.PermissionPolicy({
    default: "allow",
    rules: [new Permissions.PermissionRule({ tools: ["client.send_email"], decision: "ask" })]
  })
})

const EMAIL = "Email the team."
const RESEARCH = "Have it looked up."

/** The tool result this model step follows, or `undefined` for a turn's first step (it follows the user's message). */
const lastResult = (call: ScriptedModel.Call) => {
  const content = call.prompt.content
  return content[content.length - 1]?.role === "user" ? undefined : ScriptedModel.toolResults(call).at(-1)
}

const brains: Record<string, (call: ScriptedModel.Call) => ScriptedModel.Reply> = {
  lead: (call) => {
    const result = lastResult(call)
    if (ScriptedModel.lastUserText(call) !== RESEARCH) {
      return result === undefined
        ? ScriptedModel.toolCall("send_email", { to: "team@example.com" })
        : ScriptedModel.text("Sent.")
    }
    if (result === undefined) {
      return ScriptedModel.toolCall("agents_spawn", { agent: "researcher", task: "Look it up." })
    }
    if (result.name === "agents_spawn") {
      return ScriptedModel.toolCall("agents_wait", {
        sessionIds: [(result.result as { readonly sessionId: string }).sessionId]
      })
    }
    return ScriptedModel.text("Looked up.")
  },
  researcher: () => ScriptedModel.text("Found it.")
}

/** An engine over `store` (a process of its own: its layer released, it is gone). */
const engine = (store: SessionStore.Services) =>
  Effect.gen(function*() {
    const models: Record<string, Parameters<typeof Models.single>[0]> = {}
    for (const [name, brain] of Object.entries(brains)) {
      models[name] = (yield* ScriptedModel.fromFunction(brain)).languageModel
    }
    return LocalTransport.layer.pipe(
      Layer.provide([
        SessionStore.layer(store),
        Connectors.layerEmpty,
        RuntimeTools.layer(sendEmail),
        Models.layer(Models.byAgent(models))
      ])
    )
  })

// ----- ids, wherever they are in a log -----

const idPattern = /^(ses|turn|cb|grant)_/

/** Every id in `value` (an event, a state), wherever it sits. */
const idsIn = (value: unknown, into: Set<string> = new Set()): Set<string> => {
  if (typeof value === "string") {
    if (idPattern.test(value)) into.add(value)
  } else if (Array.isArray(value)) {
    for (const item of value) idsIn(item, into)
  } else if (typeof value === "object" && value !== null) {
    for (const item of Object.values(value)) idsIn(item, into)
  }
  return into
}

const randomPart = (id: string) => id.slice(id.indexOf("_") + 1)

const commonPrefix = (a: string, b: string) => {
  let n = 0
  while (n < a.length && n < b.length && a[n] === b[n]) n++
  return n
}
const commonSuffix = (a: string, b: string) => commonPrefix([...a].reverse().join(""), [...b].reverse().join(""))

/**
 * Each id is its prefix and 20 hex digits, and no two share more than chance would: the same random part, a run of 8
 * digits at either end (one pair in 4 billion by chance), or one's random part inside another (a tree's id in its
 * turns' ids, as `turn_<tree>_<seq>` had).
 */
const assertUnrelated = (ids: ReadonlyArray<string>) => {
  for (const id of ids) assert.match(id, /^(ses|turn|cb|grant)_[0-9a-f]{20}$/, `${id} is a prefix and 20 hex digits`)
  for (let i = 0; i < ids.length; i++) {
    for (let j = i + 1; j < ids.length; j++) {
      const a = randomPart(ids[i])
      const b = randomPart(ids[j])
      assert.notStrictEqual(a, b, `${ids[i]} and ${ids[j]} share their random part`)
      assert.isBelow(commonPrefix(a, b), 8, `${ids[i]} and ${ids[j]} begin alike`)
      assert.isBelow(commonSuffix(a, b), 8, `${ids[i]} and ${ids[j]} end alike`)
      assert.notInclude(a, b, `${ids[i]} holds ${ids[j]}`)
      assert.notInclude(b, a, `${ids[j]} holds ${ids[i]}`)
    }
  }
}

const ofTag = <Tag extends TurnEvent.TurnEvent["_tag"]>(events: ReadonlyArray<TurnEvent.TurnEvent>, tag: Tag) =>
  events.filter((event): event is Extract<TurnEvent.TurnEvent, { _tag: Tag }> => event._tag === tag)

const logOf = (store: SessionStore.Services, treeId: Session.Session["id"]) => store.eventLog.read(treeId, 0)

describe("Ids: what the engine mints", () => {
  it.effect("no id tells another, and an engine resuming the trees from their logs sees the same ids", () =>
    Effect.gen(function*() {
      seenByHandler.length = 0
      const store = yield* SessionStore.makeMemory

      // Engine A: a session whose first approval is remembered as a grant, which decides the next call; a subagent
      // spawned and waited for; and a second session left waiting on an approval.
      const a = yield* Effect.gen(function*() {
        const first = yield* Agent.startSession(lead)
        const asked = stateAs(yield* within("the first turn", Session.run(first, EMAIL)), "Blocked")
        const turn = yield* Session.turn(first, asked.turnId)
        yield* Turn.answer(turn, asked.callbacks[0].id, new Answer.AllowApproval({ remember: "session" }))
        stateAs(yield* within("the first turn, answered", Turn.result(turn, { after: asked })), "Completed")
        stateAs(yield* within("the turn the grant decides", Session.run(first, EMAIL)), "Completed")
        stateAs(yield* within("the turn with a subagent", Session.run(first, RESEARCH)), "Completed")
        const grants = yield* Session.grants(first)

        const second = yield* Agent.startSession(lead)
        const waiting = stateAs(yield* within("the second session's turn", Session.run(second, EMAIL)), "Blocked")
        return { first: first.id, second: second.id, grants, waiting }
      }).pipe(Effect.provide(yield* engine(store)))

      const firstLog = yield* logOf(store, a.first)
      const secondLog = yield* logOf(store, a.second)
      const ids = [...idsIn([firstLog, secondLog, seenByHandler])]
      const kinds = (prefix: string) => ids.filter((id) => id.startsWith(`${prefix}_`))
      // Two sessions and a subagent's; four turns of the first session, the subagent's, the second's; the approval,
      // the one the grant answered, the second session's; the two runs' callbacks; the grant.
      assert.strictEqual(kinds("ses").length, 3, "sessions")
      assert.strictEqual(kinds("turn").length, 5, "turns")
      assert.strictEqual(kinds("cb").length, 5, "callbacks")
      assert.strictEqual(kinds("grant").length, 1, "grants")
      assertUnrelated(ids)
      const [spawned] = ofTag(firstLog, "SubagentStarted")
      assert.deepStrictEqual(
        a.grants.map((grant) => grant.grantId),
        ofTag(firstLog, "ApprovalGranted").map((g) => g.grantId)
      )
      assert.strictEqual(seenByHandler.length, 2, "send_email ran twice")

      // Engine B, over the same store: it reads the trees from their logs, and finds everything by the ids A made.
      const b = yield* Effect.gen(function*() {
        const first = yield* Agent.session(lead, a.first)
        const grants = yield* Session.grants(first)
        const child = yield* Session.turn(yield* Agent.session(researcher, spawned.childSessionId), spawned.childTurnId)
        const childState = yield* within("the subagent's turn", Turn.result(child))
        const second = yield* Agent.session(lead, a.second)
        const turn = yield* Session.turn(second, a.waiting.turnId)
        const open = yield* Turn.openCallbacks(turn)
        yield* Turn.answer(turn, a.waiting.callbacks[0].id, new Answer.AllowApproval())
        const done = yield* within("the second session's turn, answered on B", Turn.result(turn, { after: a.waiting }))
        return { grants, childState, open, done }
      }).pipe(Effect.provide(yield* engine(store)))

      assert.deepStrictEqual(b.grants.map((grant) => grant.grantId), a.grants.map((grant) => grant.grantId))
      assert.strictEqual(stateAs(b.childState, "Completed").turnId, spawned.childTurnId)
      assert.deepStrictEqual(b.open.map((callback) => callback.id), a.waiting.callbacks.map((callback) => callback.id))
      assert.strictEqual(stateAs(b.done, "Completed").turnId, a.waiting.turnId)
      // What A recorded is what B's log starts with, id for id; what B added has ids of its own, related to none.
      const resumed = yield* logOf(store, a.second)
      assert.deepStrictEqual(resumed.slice(0, secondLog.length), secondLog)
      assert.deepStrictEqual(yield* logOf(store, a.first), firstLog, "reading a finished tree appends nothing")
      assertUnrelated([...idsIn([firstLog, resumed, seenByHandler])])
      assert.strictEqual(seenByHandler.length, 3, "send_email ran on B once its approval was answered")
    }))

  it.effect("consecutive turns and callbacks of one session share nothing but their prefix", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const session = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(lead)
        for (let i = 0; i < 4; i++) {
          const asked = stateAs(yield* within(`turn ${i}`, Session.run(session, EMAIL)), "Blocked")
          const turn = yield* Session.turn(session, asked.turnId)
          yield* Turn.answer(turn, asked.callbacks[0].id, new Answer.DenyApproval({ reason: "not now" }))
          stateAs(yield* within(`turn ${i}, answered`, Turn.result(turn, { after: asked })), "Completed")
        }
        return session
      }).pipe(Effect.provide(yield* engine(store)))
      const log = yield* logOf(store, session.id)
      const turns = ofTag(log, "TurnQueued").map((event) => event.turnId)
      const callbacks = ofTag(log, "CallbackOpened").map((event) => event.callback.id)
      assert.strictEqual(turns.length, 4)
      assert.strictEqual(callbacks.length, 4)
      assertUnrelated([session.id, ...turns, ...callbacks])
    }))
})
