/**
 * The engine's failures listed in issue 8 ("Why"), as a user of the client API sees them: a defect in a model ends
 * the turn `Failed` (never a hang), a turn is found as soon as `sendMessage` returns (a queued one too), `Turn.result`
 * hands handlers only the callbacks still open (once, concurrently, never held by a handler whose callback closed),
 * malformed answers from another process are typed errors that change nothing, a turn of an earlier turn cannot
 * answer a later turn's own callback, `fromWaitingTurn` follows who started a subagent, and a tree's log shows its
 * children end before the root's turn does and the answers given while the root is idle.
 *
 * Every wait is bounded in real time (`within`): a hang fails the scenario within seconds, whatever the `TestClock`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import { Builtins } from "@parley/core/AgentSpec"
import * as Answer from "@parley/core/Answer"
import type { Callback, OpenSignIn } from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as ParleyError from "@parley/core/ParleyError"
import * as Session from "@parley/core/Session"
import * as Transport from "@parley/core/Transport"
import * as Turn from "@parley/core/Turn"
import type { CallbackOpened, CallbackResolved, TurnEvent } from "@parley/core/TurnEvent"
import * as Tool from "@parley/tools/Tool"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as ScriptedModel from "../../ScriptedModel.js"
import { assertOneResolution, kinds, logOf, ofTag, stateAs, turnOf, within } from "./assertions.js"
import {
  allow,
  answerFor,
  assistant,
  brain,
  EMAIL,
  EMAIL_ABOUT,
  IN_LYON,
  LOCATION,
  lyon,
  NO_LOCATION,
  policy,
  signInAnswer
} from "./fixtures.js"
import type { WithModel } from "./harness.js"
import {
  DEPLOY,
  deployer,
  deployerBrain,
  found,
  ops,
  opsBrain,
  researcher,
  researcherBrain,
  shop,
  SHOP_QUESTION,
  shopBrain,
  treeModel,
  turnResults
} from "./treeAgents.js"
import type { Brain } from "./treeAgents.js"

// =============================================================================
// Bounded waits and typed outcomes
// =============================================================================

/** How an effect ended, in one word: `succeeded`, the tag of a typed Parley error, or what else happened. */
const outcomeOf = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<string, never, R> =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) return "succeeded"
    const died = Cause.dieOption(exit.cause)
    if (Option.isSome(died)) return `died: ${String(died.value)}`
    const failure = Cause.failureOption(exit.cause)
    if (Option.isNone(failure)) return `interrupted: ${Cause.pretty(exit.cause)}`
    return ParleyError.isParleyError(failure.value)
      ? failure.value._tag
      : `untyped failure: ${String(failure.value)}`
  })

/** `effect` fails with the typed Parley error `tag` in its error channel (not a defect), within seconds. */
const assertFailsWith = <A, E, R>(what: string, tag: ParleyError.ParleyError["_tag"], effect: Effect.Effect<A, E, R>) =>
  Effect.map(within(what, outcomeOf(effect)), (outcome) => assert.strictEqual(outcome, tag, what))

/** A readable name for a hand-written garbage value. */
const show = (value: unknown): string => {
  if (typeof value === "function") return "a function"
  if (value === undefined) return "undefined"
  if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === null) return "Object.create(null)"
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** The events of a session from `seq` 0 (for a root: its tree's log), up to the first one `until` accepts. */
const logUntil = (sessionId: Session.Session["id"], until: (event: TurnEvent) => boolean) =>
  Effect.flatMap(Transport.Transport, (transport) =>
    transport.events(sessionId, 0).pipe(
      Stream.takeUntil(until),
      Stream.runCollect,
      Effect.map(Chunk.toReadonlyArray)
    ))

const resolvedIn = (events: ReadonlyArray<TurnEvent>, callbackId: string): ReadonlyArray<CallbackResolved> =>
  ofTag(events, "CallbackResolved").filter((event) => event.callbackId === callbackId)

// =============================================================================
// Fixtures of these scenarios
// =============================================================================

const HELLO = "Hello."
const GREETING = "Hello! How can I help?"
const WHERE = "Where am I?"

/** Greets on `HELLO`; otherwise calls `get_location` and describes the result of this turn's call. */
const greeterOrLocator = () =>
  ScriptedModel.fromFunction((call) => {
    if (ScriptedModel.lastUserText(call) === HELLO) return ScriptedModel.text(GREETING)
    const located = found(turnResults(call), LOCATION.name)
    if (located === undefined) return ScriptedModel.reply({ toolCalls: [LOCATION] })
    if (located.isFailure) return ScriptedModel.text(NO_LOCATION)
    const where = located.result as { readonly city: string; readonly country: string }
    return ScriptedModel.text(`You're in ${where.city}, ${where.country}.`)
  })

const PRICES: Record<string, string> = { atlas: "1,200 EUR", nova: "850 EUR" }
const ATLAS = "What does the Atlas cost?"
const BOTH = "What do the Atlas and the Nova cost?"

/** A `lookup_price` tool with a handler: `onRun` runs first (count the runs, hold them), then the price comes back. */
const priceTool = (onRun: (product: string) => Effect.Effect<void>) =>
  Tool.make("lookup_price", {
    description: "Price of one product.",
    parameters: { product: Schema.String },
    success: Schema.Struct({ price: Schema.String })
  }, ({ product }) => Effect.as(onRun(product), { price: PRICES[product.toLowerCase()] ?? "unknown" }))

/** An agent whose `lookup_price` calls need no approval: only the tool's handler answers them. */
const pricer = (tool: ReturnType<typeof priceTool>) =>
  Agent.make({
    name: "pricer",
    model: "scripted",
    instructions: "Look up the price of each product asked about, then answer in one sentence.",
    tools: [tool],
    permissionMode: "allow"
  })

/** Calls `lookup_price` once per product named in the question (at once), then lists the prices found, sorted. */
const pricerBrain = () =>
  ScriptedModel.fromFunction((call) => {
    const prices = turnResults(call).filter((result) => result.name === "lookup_price")
    if (prices.length === 0) {
      const question = ScriptedModel.lastUserText(call) ?? ""
      const products = ["Atlas", "Nova"].filter((product) => question.includes(product))
      return ScriptedModel.reply({
        toolCalls: products.map((product) => ({ name: "lookup_price", params: { product } }))
      })
    }
    const found = prices.map((result) => (result.result as { readonly price: string }).price).sort()
    return ScriptedModel.text(`Prices: ${found.join(", ")}.`)
  })

const ATLAS_ANSWER = "Prices: 1,200 EUR."
const BOTH_ANSWER = "Prices: 1,200 EUR, 850 EUR."

interface Waited {
  readonly sessionId: string
  readonly state: string
  readonly text?: string
  readonly error?: string
}

// ----- A subagent whose model dies -----

const worker = Agent.make({
  name: "worker",
  description: "Does one piece of work.",
  instructions: "Do the work you are given and report on it.",
  builtins: new Builtins({ subagents: false })
})

const boss = Agent.make({
  name: "boss",
  model: "scripted",
  permissionMode: "allow",
  instructions: "Start a worker, wait for it, then report how it went.",
  subagents: [worker]
})

/** Spawns a worker, waits for it, then reports `<state>: <error or text>` from the wait's result. */
const bossBrain: Brain = (call) => {
  const results = turnResults(call)
  if (found(results, "agents_spawn") === undefined) {
    return ScriptedModel.toolCall("agents_spawn", { agent: "worker", task: "Tidy the inbox." })
  }
  const waited = found(results, "agents_wait")
  if (waited === undefined) return ScriptedModel.toolCall("agents_wait", {})
  const [first] = waited.result as ReadonlyArray<Waited>
  return ScriptedModel.text(`worker ${first.state}: ${first.error ?? first.text ?? ""}`)
}

// ----- fromWaitingTurn: a coordinator of turn 1 starts a researcher during turn 2 -----

/** A tool whose handler answers at once: only its approval holds the coordinator. */
const proceed = Tool.make("proceed", {
  description: "Ask whether to go on.",
  success: Schema.Struct({ go: Schema.Boolean })
}, () => ({ go: true }))

const coordinator = Agent.make({
  name: "coordinator",
  description: "Waits for the go, then prices the Nova with a researcher.",
  instructions: "Call proceed, then start a researcher on the Nova, wait for it and repeat its answer.",
  tools: [proceed],
  subagents: [researcher],
  builtins: new Builtins({ subagents: true })
})

const START = "Start the coordinator."
const PRICE_ATLAS = "Price the Atlas, then wait for every subagent."

const lab = Agent.make({
  name: "lab",
  model: "scripted",
  permissionMode: "ask",
  instructions: "Start a coordinator when asked; otherwise price the Atlas with a researcher and wait for all.",
  subagents: [coordinator, researcher]
})

/** `START`: spawns a coordinator and answers without waiting. Otherwise: spawns a researcher, waits for all. */
const labBrain: Brain = (call) => {
  const results = turnResults(call)
  if (ScriptedModel.lastUserText(call) === START) {
    return found(results, "agents_spawn") === undefined
      ? ScriptedModel.toolCall("agents_spawn", { agent: "coordinator", task: "Go." })
      : ScriptedModel.text("The coordinator is on it.")
  }
  if (found(results, "agents_spawn") === undefined) {
    return ScriptedModel.toolCall("agents_spawn", { agent: "researcher", task: "Atlas" })
  }
  const waited = found(results, "agents_wait")
  if (waited === undefined) return ScriptedModel.toolCall("agents_wait", {})
  return ScriptedModel.text((waited.result as ReadonlyArray<Waited>).map((result) => result.text ?? "").join(" "))
}

/** Calls `proceed`; once it answered, spawns a researcher on the Nova, waits for it and repeats its answer. */
const coordinatorBrain: Brain = (call) => {
  const results = ScriptedModel.toolResults(call)
  if (found(results, "proceed") === undefined) return ScriptedModel.toolCall("proceed", {})
  const spawned = found(results, "agents_spawn")
  if (spawned === undefined) return ScriptedModel.toolCall("agents_spawn", { agent: "researcher", task: "Nova" })
  const waited = found(results, "agents_wait")
  if (waited === undefined) {
    return ScriptedModel.toolCall("agents_wait", {
      sessionIds: [(spawned.result as { readonly sessionId: string }).sessionId]
    })
  }
  return ScriptedModel.text((waited.result as ReadonlyArray<Waited>)[0].text ?? "")
}

// =============================================================================
// Scenarios
// =============================================================================

export const hardening = (withModel: WithModel) =>
  describe("hardening (issue 8)", () => {
    describe("a defect ends the turn Failed, never a hang", () => {
      const scripts: ReadonlyArray<readonly [string, () => Effect.Effect<ScriptedModel.Service>, string]> = [
        [
          "a first model step that dies",
          () => ScriptedModel.make([() => Effect.die(new Error("boom: the model died"))]),
          "boom: the model died"
        ],
        [
          "a brain that throws",
          () =>
            ScriptedModel.fromFunction(() => {
              throw new Error("boom: the brain threw")
            }),
          "boom: the brain threw"
        ],
        [
          "a model step that dies after a tool call",
          () =>
            ScriptedModel.make([
              ScriptedModel.reply({ toolCalls: [LOCATION] }),
              () => Effect.die(new Error("boom: the second step died"))
            ]),
          "boom: the second step died"
        ]
      ]
      for (const [name, script, message] of scripts) {
        it.effect(`${name}: Turn.result returns Failed with the defect's message`, () =>
          withModel(script(), () =>
            Effect.gen(function*() {
              const agent = assistant({ permissions: policy("allow") })
              const state = yield* within(
                "Agent.run",
                Agent.run(agent, WHERE).pipe(Effect.provide(CallbackHandler.layer({ clientTool: () => lyon })))
              )
              const failed = stateAs(state, "Failed")
              assert.include(failed.error.message, message)
              const events = yield* within("the turn's log", logOf(yield* turnOf(agent, failed)))
              const last = events[events.length - 1]
              assert.strictEqual(last._tag, "TurnEnded")
              if (last._tag === "TurnEnded") assert.strictEqual(last.state._tag, "Failed")
            })))
      }

      it.effect("a subagent whose model dies: agents_wait returns it Failed and the root turn completes", () =>
        withModel(
          treeModel([[boss, bossBrain], [worker, () => {
            throw new Error("boom: the worker's model died")
          }]]),
          () =>
            Effect.gen(function*() {
              const session = yield* Agent.startSession(boss)
              const state = yield* within("Session.run", Session.run(session, "Tidy my inbox."))
              const completed = stateAs(state, "Completed")
              // The parent's model saw the child Failed, with the defect's message.
              assert.match(completed.text, /^worker Failed: .*boom: the worker's model died/)
              const events = yield* within("the root turn's log", logOf(yield* Session.turn(session, state.turnId)))
              const ended = ofTag(events, "SubagentEnded")
              assert.strictEqual(ended.length, 1)
              const child = stateAs(ended[0].state, "Failed")
              assert.include(child.error.message, "boom: the worker's model died")
            })
        ))
    })

    describe("a turn exists as soon as sendMessage returns", () => {
      it.effect("Session.turn finds the first turn right after sendMessage", () =>
        withModel(greeterOrLocator(), () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(assistant())
            const sent = yield* Session.sendMessage(session, HELLO)
            // At once: no wait (not even a bounded one, which would fork and let the engine run first).
            const outcome = yield* outcomeOf(Session.turn(session, sent.turnId))
            assert.strictEqual(outcome, "succeeded")
            const turn = yield* Session.turn(session, sent.turnId)
            assert.strictEqual(turn.turnId, sent.turnId)
            assert.strictEqual(stateAs(yield* within("Turn.result", Turn.result(turn)), "Completed").text, GREETING)
          })))

      it.effect("a turn queued behind a blocked one is found at once, starts after it ends and completes", () =>
        withModel(greeterOrLocator(), () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(assistant())
            const blocked = stateAs(yield* within("the first turn", Session.run(session, WHERE)), "Blocked")
            assert.deepStrictEqual(kinds(blocked.callbacks), ["approval"])
            const first = yield* Session.turn(session, blocked.turnId)
            const sent = yield* Session.sendMessage(session, HELLO)
            // The first turn still waits on its approval: the second is queued, and already a turn of the session.
            const outcome = yield* outcomeOf(Session.turn(session, sent.turnId))
            assert.strictEqual(outcome, "succeeded")
            const queued = yield* Session.turn(session, sent.turnId)
            assert.strictEqual(queued.turnId, sent.turnId)
            yield* Turn.answer(first, blocked.callbacks[0].id, new Answer.DenyApproval({ reason: "not now" }))
            const firstState = yield* within("the first turn's result", Turn.result(first, { after: blocked }))
            assert.strictEqual(stateAs(firstState, "Completed").text, NO_LOCATION)
            const secondState = yield* within("the queued turn's result", Turn.result(queued))
            assert.strictEqual(stateAs(secondState, "Completed").text, GREETING)
            // The queued turn started after the first one ended.
            const firstLog = yield* within("the first turn's log", logOf(first))
            const secondLog = yield* within("the queued turn's log", logOf(queued))
            const firstEnded = ofTag(firstLog, "TurnEnded")[0]
            const secondStarted = ofTag(secondLog, "TurnStarted")
            assert.strictEqual(secondStarted.length, 1)
            assert.strictEqual(secondStarted[0].input, HELLO)
            assert.isTrue(secondStarted[0].seq > firstEnded.seq, "the queued turn started after the first ended")
          })))
    })

    describe("Turn.result and client-tool handlers", () => {
      it.effect("Turn.result on a finished turn does not run the client tool's handler again", () =>
        withModel(pricerBrain(), () =>
          Effect.gen(function*() {
            let runs = 0
            const agent = pricer(priceTool(() => Effect.sync(() => void runs++)))
            const state = yield* within("Agent.run", Agent.run(agent, ATLAS))
            const completed = stateAs(state, "Completed")
            assert.strictEqual(completed.text, ATLAS_ANSWER)
            assert.strictEqual(runs, 1)
            const turn = yield* turnOf(agent, completed)
            for (let again = 0; again < 2; again++) {
              const replayed = yield* within("Turn.result on the finished turn", Turn.result(turn))
              assert.strictEqual(stateAs(replayed, "Completed").text, ATLAS_ANSWER)
            }
            assert.strictEqual(runs, 1, "the handler ran once, for the one call")
          })))

      it.effect("two concurrent Turn.results on one turn run the tool's handler once per call", () =>
        withModel(pricerBrain(), () =>
          Effect.gen(function*() {
            let runs = 0
            const agent = pricer(priceTool(() => Effect.sync(() => void runs++)))
            const session = yield* Agent.startSession(agent)
            const turn = yield* Session.sendMessage(session, ATLAS)
            const [a, b] = yield* within(
              "two Turn.results",
              Effect.all([Turn.result(turn), Turn.result(turn)], { concurrency: "unbounded" })
            )
            assert.strictEqual(stateAs(a, "Completed").text, ATLAS_ANSWER)
            assert.strictEqual(stateAs(b, "Completed").text, ATLAS_ANSWER)
            assert.strictEqual(runs, 1, "one call, one handler run")
          })))

      it.effect("a slow handler does not delay the answer to another callback open at the same time", () =>
        withModel(pricerBrain(), () =>
          Effect.gen(function*() {
            const gate = yield* Deferred.make<void>()
            const held = yield* Deferred.make<string>()
            let started = 0
            let heldFinished = false
            // The first call to reach the handler is held until the gate opens; the other answers at once.
            const agent = pricer(priceTool((product) =>
              started++ === 0
                ? Deferred.succeed(held, product).pipe(
                  Effect.zipRight(Deferred.await(gate)),
                  Effect.zipRight(Effect.sync(() => void (heldFinished = true)))
                )
                : Effect.void
            ))
            const session = yield* Agent.startSession(agent)
            const turn = yield* Session.sendMessage(session, BOTH)
            const waiter = yield* Effect.fork(Turn.result(turn))
            yield* within("the first handler starts", Deferred.await(held))
            const opened = yield* within(
              "both client tool calls open",
              Turn.events(turn).pipe(
                Stream.filter((event) => event._tag === "CallbackOpened"),
                Stream.take(2),
                Stream.runCollect,
                Effect.map(Chunk.toReadonlyArray)
              )
            )
            assert.strictEqual(opened.length, 2)
            const resolvedFirst = yield* within(
              "a CallbackResolved while the slow handler still runs",
              Turn.events(turn).pipe(
                Stream.filter((event): event is CallbackResolved => event._tag === "CallbackResolved"),
                Stream.runHead
              )
            )
            assert.isTrue(Option.isSome(resolvedFirst))
            assert.isFalse(heldFinished, "the slow handler has not finished")
            if (Option.isSome(resolvedFirst)) assert.strictEqual(resolvedFirst.value.resolution, "answered")
            yield* Deferred.succeed(gate, undefined)
            const state = yield* within("Turn.result", Fiber.join(waiter))
            assert.strictEqual(stateAs(state, "Completed").text, BOTH_ANSWER)
            assert.strictEqual(started, 2)
            assert.isTrue(heldFinished)
          })))

      it.effect("a handler that never returns does not keep Turn.result once its callback expired", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const asked = yield* Deferred.make<Callback>()
            const stuck = CallbackHandler.layer({
              approval: (context) => Effect.zipRight(Deferred.succeed(asked, context.callback), Effect.never)
            })
            const session = yield* Agent.startSession(assistant())
            const turn = yield* Session.sendMessage(session, WHERE)
            const waiter = yield* Effect.fork(Turn.result(turn).pipe(Effect.provide(stuck)))
            const callback = yield* within("the handler is asked", Deferred.await(asked))
            yield* within(
              "the turn reports Blocked",
              Turn.events(turn).pipe(Stream.filter((event) => event._tag === "TurnBlocked"), Stream.runHead)
            )
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
            yield* TestClock.adjust("1 hour")
            const state = yield* within("Turn.result after the approval expired", Fiber.join(waiter))
            // The expiry is a denial: the model answers without the location.
            assert.strictEqual(stateAs(state, "Completed").text, NO_LOCATION)
            assertOneResolution(yield* within("the turn's log", logOf(turn)), callback.id, "expired")
          })))

      it.effect("Turn.result hands the handlers only the callbacks still open", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const agent = assistant()
            const blocked = stateAs(yield* within("Agent.run", Agent.run(agent, WHERE)), "Blocked")
            assert.deepStrictEqual(kinds(blocked.callbacks), ["approval"])
            const approval = blocked.callbacks[0]
            const turn = yield* turnOf(agent, blocked)
            yield* Turn.answer(turn, approval.id, allow)
            const seen: Array<string> = []
            const record = CallbackHandler.layer({
              approval: (context) => {
                seen.push(`${context.callback.kind} ${context.callback.id}`)
                return allow
              },
              clientTool: (callback) => {
                seen.push(`${callback.kind} ${callback.id}`)
                return lyon
              }
            })
            // From the turn's start: the approval answered by id is in the log, but no longer open.
            const state = yield* within("Turn.result", Turn.result(turn).pipe(Effect.provide(record)))
            assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
            assert.isFalse(seen.includes(`approval ${approval.id}`), "the answered approval reached a handler")
            assert.deepStrictEqual(seen.map((entry) => entry.split(" ")[0]), ["client_tool"])
          })))
    })

    describe("malformed answers from another process", () => {
      /** A turn blocked on one client tool call (the policy allows get_location). */
      const blockedOnClientTool = Effect.gen(function*() {
        const agent = assistant({ permissions: policy("allow") })
        const blocked = stateAs(yield* within("Agent.run", Agent.run(agent, WHERE)), "Blocked")
        assert.deepStrictEqual(kinds(blocked.callbacks), ["client_tool"])
        return { blocked, turn: yield* turnOf(agent, blocked), callback: blocked.callbacks[0] }
      })

      /** Sends `answer` for `callback` through the Transport service, as another process would (no checks). */
      const sendRaw = (blocked: { readonly sessionId: string; readonly turnId: string }, fields: {
        readonly sessionId?: unknown
        readonly turnId?: unknown
        readonly callbackId: unknown
        readonly answer: unknown
      }) =>
        Effect.flatMap(Transport.Transport, (transport) =>
          transport.answer({
            sessionId: ("sessionId" in fields ? fields.sessionId : blocked.sessionId) as Transport.AnswerRequest[
              "sessionId"
            ],
            turnId: ("turnId" in fields ? fields.turnId : blocked.turnId) as Transport.AnswerRequest["turnId"],
            callbackId: fields.callbackId as Transport.AnswerRequest["callbackId"],
            answer: fields.answer as Answer.Answer
          }))

      /** Nothing changed: the callback is still open, then a valid answer completes the turn as usual. */
      const assertStillOpen = (turn: Turn.Turn, callbackId: string) =>
        Effect.map(
          within("Turn.openCallbacks", Turn.openCallbacks(turn)),
          (open) => assert.deepStrictEqual(open.map((callback) => callback.id), [callbackId], "the callback is open")
        )

      it.effect("a DenyApproval whose reason is a number fails AnswerMismatch and changes nothing", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const agent = assistant()
            const blocked = stateAs(yield* within("Agent.run", Agent.run(agent, WHERE)), "Blocked")
            const callback = blocked.callbacks[0]
            assert.strictEqual(callback.kind, "approval")
            const turn = yield* turnOf(agent, blocked)
            for (
              const answer of [{ _tag: "DenyApproval", reason: 5 }, { _tag: "DenyApproval", reason: { why: "no" } }]
            ) {
              yield* assertFailsWith(
                `answer ${show(answer)}`,
                "AnswerMismatch",
                sendRaw(blocked, { callbackId: callback.id, answer })
              )
              yield* assertStillOpen(turn, callback.id)
            }
            const deny = new Answer.DenyApproval({ reason: "not now" })
            yield* Turn.answer(turn, callback.id, deny)
            const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
            assert.strictEqual(stateAs(state, "Completed").text, NO_LOCATION)
            const resolved = assertOneResolution(yield* within("the log", logOf(turn)), callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, deny)
          })))

      it.effect("a ClientToolResult whose isFailure is not a boolean fails AnswerMismatch and changes nothing", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const { blocked, callback, turn } = yield* blockedOnClientTool
            for (
              const answer of [
                { _tag: "ClientToolResult", isFailure: "yes", result: {} },
                { _tag: "ClientToolResult", isFailure: "no", result: { city: "Lyon", country: "France" } },
                { _tag: "ClientToolResult", isFailure: 0, result: { city: "Lyon", country: "France" } }
              ]
            ) {
              yield* assertFailsWith(
                `answer ${show(answer)}`,
                "AnswerMismatch",
                sendRaw(blocked, { callbackId: callback.id, answer })
              )
              yield* assertStillOpen(turn, callback.id)
            }
            yield* Turn.answer(turn, callback.id, lyon)
            const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
            assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
            const resolved = assertOneResolution(yield* within("the log", logOf(turn)), callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, lyon)
          })))

      it.effect("a SignInAnswer with missing or garbage lists fails AnswerMismatch and changes nothing", () =>
        withModel(brain([EMAIL]), () =>
          Effect.gen(function*() {
            const agent = assistant()
            const blocked = stateAs(
              yield* within("Agent.run", Agent.run(agent, "What is my latest email about?")),
              "Blocked"
            )
            const callback = blocked.callbacks[0]
            assert.strictEqual(callback._tag, "OpenSignIn")
            const requestId = (callback as OpenSignIn).requests[0].id
            const turn = yield* turnOf(agent, blocked)
            const garbage: ReadonlyArray<unknown> = [
              { _tag: "SignInAnswer" },
              { _tag: "SignInAnswer", connected: null, denied: null },
              { _tag: "SignInAnswer", connected: requestId },
              { _tag: "SignInAnswer", denied: { [requestId]: true } },
              { _tag: "SignInAnswer", connected: [42] },
              { _tag: "SignInAnswer", connected: [requestId, null] },
              { _tag: "SignInAnswer", connected: [], denied: [[requestId]] }
            ]
            const outcomes: Array<string> = []
            for (const answer of garbage) {
              outcomes.push(
                `${show(answer)} → ${yield* within(
                  `answer ${show(answer)}`,
                  outcomeOf(sendRaw(blocked, { callbackId: callback.id, answer }))
                )}`
              )
            }
            assert.deepStrictEqual(outcomes, garbage.map((answer) => `${show(answer)} → AnswerMismatch`))
            yield* assertStillOpen(turn, callback.id)
            const connected = signInAnswer(callback as OpenSignIn, "connected")
            yield* Turn.answer(turn, callback.id, connected)
            const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
            assert.strictEqual(stateAs(state, "Completed").text, EMAIL_ABOUT)
            const resolved = assertOneResolution(yield* within("the log", logOf(turn)), callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, connected)
          })))

      it.effect("malformed ids fail with typed errors (CallbackNotOpen, SessionNotFound, TurnNotFound)", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const { blocked, callback, turn } = yield* blockedOnClientTool
            const cases: ReadonlyArray<
              readonly [string, ParleyError.ParleyError["_tag"], Parameters<typeof sendRaw>[1]]
            > = [
              ...[42, null, undefined, {}, "", "not a callback id", "cb_unknown", [callback.id]].map((callbackId) =>
                [`callbackId ${show(callbackId)}`, "CallbackNotOpen", { callbackId, answer: lyon }] as const
              ),
              ...[42, null, undefined, {}, "", "garbage", "ses_unknown", [blocked.sessionId]].map((sessionId) =>
                [`sessionId ${show(sessionId)}`, "SessionNotFound", {
                  sessionId,
                  callbackId: callback.id,
                  answer: lyon
                }] as const
              ),
              ...[42, null, undefined, {}, "", "garbage", "turn_unknown", [blocked.turnId]].map((turnId) =>
                [`turnId ${show(turnId)}`, "TurnNotFound", { turnId, callbackId: callback.id, answer: lyon }] as const
              )
            ]
            const outcomes: Array<string> = []
            for (const [name, , fields] of cases) {
              outcomes.push(`${name} → ${yield* within(name, outcomeOf(sendRaw(blocked, fields)))}`)
            }
            assert.deepStrictEqual(outcomes, cases.map(([name, tag]) => `${name} → ${tag}`))
            yield* assertStillOpen(turn, callback.id)
            yield* Turn.answer(turn, callback.id, lyon)
            const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
            assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
            const resolved = assertOneResolution(yield* within("the log", logOf(turn)), callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, lyon)
          })))

      it.effect("twenty garbage answers to a client tool call: each a typed AnswerMismatch, none changes anything", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const { blocked, callback, turn } = yield* blockedOnClientTool
            const LYON = { city: "Lyon", country: "France" }
            const garbage: ReadonlyArray<unknown> = [
              null,
              undefined,
              0,
              42,
              true,
              "ClientToolResult",
              [],
              [{ _tag: "ClientToolResult", isFailure: false, result: LYON }],
              {},
              Object.create(null),
              () => lyon,
              { isFailure: false, result: LYON },
              { _tag: "ClientToolResult" },
              { _tag: "ClientToolResult", isFailure: "yes", result: {} },
              { _tag: "ClientToolResult", isFailure: 1, result: LYON },
              { _tag: "ClientToolResult", isFailure: null, result: LYON },
              { _tag: "ClientToolResult", isFailure: false, result: { city: 1, country: "France" } },
              { _tag: "ClientToolResult", isFailure: false, result: "Lyon, France" },
              { _tag: "clienttoolresult", isFailure: false, result: LYON },
              { _tag: 7, isFailure: false, result: LYON },
              { _tag: "AllowApproval" },
              { _tag: "DenyApproval", reason: 5 },
              { _tag: "SignInAnswer", connected: "gmail" }
            ]
            const outcomes: Array<string> = []
            for (const answer of garbage) {
              outcomes.push(
                `${show(answer)} → ${yield* within(
                  `answer ${show(answer)}`,
                  outcomeOf(sendRaw(blocked, { callbackId: callback.id, answer }))
                )}`
              )
            }
            assert.deepStrictEqual(outcomes, garbage.map((answer) => `${show(answer)} → AnswerMismatch`))
            yield* assertStillOpen(turn, callback.id)
            yield* Turn.answer(turn, callback.id, lyon)
            const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
            assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
            const events = yield* within("the log", logOf(turn))
            const resolved = assertOneResolution(events, callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, lyon)
          })))
    })

    describe("who may answer, and who asked", () => {
      it.effect("a Turn of an earlier turn cannot answer a later turn's own callback", () =>
        withModel(greeterOrLocator(), () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(assistant())
            const first = yield* within("turn 1", Session.run(session, HELLO))
            assert.strictEqual(stateAs(first, "Completed").text, GREETING)
            const turn1 = yield* Session.turn(session, first.turnId)
            let state = yield* within("turn 2", Session.run(session, WHERE))
            const blocked = stateAs(state, "Blocked")
            const callback = blocked.callbacks[0]
            assert.strictEqual(callback.kind, "approval")
            assert.strictEqual(callback.turnId, blocked.turnId)
            yield* assertFailsWith(
              "Turn.answer through turn 1",
              "CallbackNotOpen",
              Turn.answer(turn1, callback.id, allow)
            )
            const turn2 = yield* Session.turn(session, blocked.turnId)
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn2)).map((open) => open.id), [callback.id])
            while (state._tag === "Blocked") {
              for (const open of state.callbacks) yield* Turn.answer(turn2, open.id, answerFor(open))
              state = yield* within("Turn.result", Turn.result(turn2, { after: state }))
            }
            assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
            const resolved = assertOneResolution(yield* within("turn 2's log", logOf(turn2)), callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, allow)
          })))

      it.effect("fromWaitingTurn: a subagent a turn-1 subagent starts during turn 2 is not from the waiting turn", () =>
        withModel(
          treeModel([[lab, labBrain], [coordinator, coordinatorBrain], [researcher, researcherBrain]]),
          () =>
            Effect.gen(function*() {
              const session = yield* Agent.startSession(lab)
              // Turn 1 starts a coordinator and ends; the coordinator waits on its `proceed` approval.
              const first = yield* within(
                "turn 1",
                Session.run(session, START).pipe(
                  Effect.provide(CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"])))
                )
              )
              assert.strictEqual(stateAs(first, "Completed").text, "The coordinator is on it.")
              // Turn 2: an allow-all handler that records what it is told about each approval.
              const seen: Array<string> = []
              const recordAll = CallbackHandler.layer({
                approval: (context, request) => {
                  const args = request.arguments as { readonly product?: string; readonly task?: string }
                  assert.strictEqual(context.waiting.sessionId, session.id)
                  seen.push(`${context.fromWaitingTurn} ${request.tool.id} ${args.product ?? args.task ?? ""}`)
                  return allow
                }
              })
              const second = yield* within(
                "turn 2",
                Session.run(session, PRICE_ATLAS).pipe(Effect.provide(recordAll))
              )
              const completed = stateAs(second, "Completed")
              assert.include(completed.text, "The Atlas costs 1,200 EUR.")
              assert.include(completed.text, "The Nova costs 850 EUR.")
              assert.deepStrictEqual([...seen].sort(), [
                // The coordinator (turn 1), its own spawn and the researcher it started during turn 2.
                "false agents.spawn Nova",
                "false client.lookup_price Nova",
                "false client.proceed ",
                // The root's own spawn during turn 2 and that researcher's lookup.
                "true agents.spawn Atlas",
                "true client.lookup_price Atlas"
              ])
            })
        ))
    })

    describe("the tree's log", () => {
      it.effect("a cancel files the children's SubagentEnded and TurnEnded before the root's TurnEnded", () =>
        withModel(treeModel([[shop, shopBrain], [researcher, researcherBrain]]), () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(shop)
            let state = yield* within("Session.run", Session.run(session, SHOP_QUESTION))
            const spawns = stateAs(state, "Blocked")
            const turn = yield* Session.turn(session, spawns.turnId)
            for (const callback of spawns.callbacks) yield* Turn.answer(turn, callback.id, allow)
            state = yield* within("Turn.result", Turn.result(turn, { after: spawns }))
            // Both researchers run, each waiting on its lookup_price approval; the root waits for them.
            const lookups = stateAs(state, "Blocked")
            assert.strictEqual(lookups.callbacks.length, 2)
            assert.isTrue(lookups.callbacks.every((callback) => callback.sessionId !== session.id))
            yield* within("Session.cancel", Session.cancel(session))
            const treeLog = yield* within(
              "the root's log up to its TurnEnded",
              logUntil(
                session.id,
                (event) => event._tag === "TurnEnded" && event.sessionId === session.id && event.turnId === turn.turnId
              )
            )
            const rootEnd = treeLog[treeLog.length - 1]
            assert.strictEqual(rootEnd._tag, "TurnEnded")
            const children = [...new Set(ofTag(treeLog, "SubagentStarted").map((event) => event.childSessionId))]
            assert.strictEqual(children.length, 2)
            for (const child of children) {
              const ended = ofTag(treeLog, "SubagentEnded").filter((event) => event.childSessionId === child)
              assert.strictEqual(ended.length, 1, `SubagentEnded of ${child} before the root's TurnEnded`)
              assert.strictEqual(ended[0].state._tag, "Cancelled")
              const childEnded = ofTag(treeLog, "TurnEnded").filter((event) => event.sessionId === child)
              assert.strictEqual(childEnded.length, 1, `the TurnEnded of ${child} before the root's TurnEnded`)
              assert.strictEqual(childEnded[0].state._tag, "Cancelled")
            }
            // `Turn.events` of the root turn shows the children end.
            const rootEvents = yield* within("Turn.events of the root turn", logOf(turn))
            assert.deepStrictEqual(
              ofTag(rootEvents, "SubagentEnded").map((event) => event.childSessionId).sort(),
              [...children].sort()
            )
            stateAs(yield* within("Turn.result", Turn.result(turn, { after: lookups })), "Cancelled")
          })))

      it.effect("a subagent's callback answered while the root is idle is resolved in the tree's log", () =>
        withModel(treeModel([[ops, opsBrain], [deployer, deployerBrain]]), () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(ops)
            const first = yield* within(
              "turn 1",
              Session.run(session, DEPLOY).pipe(
                Effect.provide(CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"])))
              )
            )
            const completed = stateAs(first, "Completed")
            const turn1 = yield* Session.turn(session, completed.turnId)
            const started = ofTag(yield* within("turn 1's log", logOf(turn1)), "SubagentStarted")
            assert.strictEqual(started.length, 1)
            const child = yield* Agent.session(ops, started[0].childSessionId)
            const childTurn = yield* Session.turn(child, started[0].childTurnId)
            /** The deployer's `n`th callback (1-based), read from its own turn. */
            const nthCallback = (n: number) =>
              within(
                `the deployer's callback #${n}`,
                Turn.events(childTurn).pipe(
                  Stream.filter((event): event is CallbackOpened => event._tag === "CallbackOpened"),
                  Stream.take(n),
                  Stream.runLast,
                  Effect.map(Option.map((event) => event.callback))
                )
              ).pipe(Effect.flatMap(Option.match({
                onNone: () => Effect.sync(() => assert.fail(`the deployer's turn ended before callback #${n}`)),
                onSome: Effect.succeed
              })))
            // The root is idle: its turn 1 ended. A person approves the deploy, then the deploy call answers, both
            // by id through the root's turn.
            const approval = yield* nthCallback(1)
            assert.strictEqual(approval.kind, "approval")
            yield* Turn.answer(turn1, approval.id, allow)
            const deployCall = yield* nthCallback(2)
            assert.strictEqual(deployCall.kind, "client_tool")
            const deployed = Answer.ClientToolResult.success({ deployed: true })
            yield* Turn.answer(turn1, deployCall.id, deployed)
            const treeLog = yield* within(
              "the root's log up to the deployer's end",
              logUntil(
                session.id,
                (event) => event._tag === "SubagentEnded" && event.childSessionId === started[0].childSessionId
              )
            )
            const ended = treeLog[treeLog.length - 1]
            if (ended._tag === "SubagentEnded") assert.strictEqual(stateAs(ended.state, "Completed").text, "Deployed.")
            for (const [callback, answer] of [[approval, allow], [deployCall, deployed]] as const) {
              const resolved = resolvedIn(treeLog, callback.id)
              assert.strictEqual(resolved.length, 1, `the answer to the ${callback.kind} is in the tree's log, once`)
              assert.strictEqual(resolved[0].resolution, "answered")
              assert.deepStrictEqual(resolved[0].answer, answer)
              assert.isTrue(resolved[0].seq < ended.seq)
            }
          })))
    })
  })
