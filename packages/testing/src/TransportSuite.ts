/**
 * The transport contract suite: the behaviour of the client API (`Agent`, `Session`, `Turn`) that every `Transport`
 * implementation must show, so the in-process transport and the HTTP transport are held to the same assertions.
 *
 * `suite(name, makeTransport)` registers one `describe` block. `makeTransport(model)` must return a fresh runtime
 * behind the `Transport` Tag (no sessions shared between tests) in which:
 *
 * - every agent runs on `model`, whatever model name it gives;
 * - a `gmail` connector is available whose read-only `latest_email` tool returns the latest email of the demo
 *   mailbox (`Connectors.demoMailbox()` of `@parley/runtime`: subject "Dinner on Friday?");
 * - callback deadlines follow the `Clock` of the test (`TestClock.adjust` moves them; nothing waits in real time).
 *
 * The agents are built with `Agent.make` from raw `ToolSpec`s: a read-only `get_location` client tool whose
 * `success` schema is `{ city, country }`, the `gmail` connector, and a policy that asks before each `get_location`
 * call (the callbacks guide's example agent). Their models are deterministic `ScriptedModel` brains that decide
 * from the tool results in the prompt.
 *
 * Covered: every way of driving a session (`Agent.run` with handlers, `Blocked` answered by id and
 * `Turn.result({ after })`, `Turn.result({ onEvent })`, `Turn.events` by hand), what `Blocked` lists and where
 * `after` continues, answer validation (typed errors, nothing stored), expiry (default and per-agent timeouts),
 * cancellation, several readers of one turn, model failures, and the permission policy and sign-ins.
 *
 * @example
 * ```ts
 * import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
 * import { TransportSuite } from "@parley/testing"
 * import { Layer } from "effect"
 *
 * TransportSuite.suite("LocalTransport", (model) =>
 *   LocalTransport.layer.pipe(
 *     Layer.provide([
 *       SessionStore.layerMemory,
 *       Connectors.layer([Connectors.demoMailbox()]),
 *       Models.layer(Models.single(model))
 *     ])
 *   ))
 * ```
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import { CallbackTimeouts } from "@parley/core/AgentSpec"
import * as Answer from "@parley/core/Answer"
import type { Callback, Kind, OpenSignIn } from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import { newCallbackId, ToolId } from "@parley/core/Ids"
import { PermissionPolicy, PermissionRule } from "@parley/core/Permissions"
import * as Session from "@parley/core/Session"
import { ToolAnnotations, ToolSpec } from "@parley/core/ToolSpec"
import type * as Transport from "@parley/core/Transport"
import * as Turn from "@parley/core/Turn"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type { TurnState } from "@parley/core/TurnState"
import * as Chunk from "effect/Chunk"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as ScriptedModel from "./ScriptedModel.js"

// =============================================================================
// Fixtures
// =============================================================================

const getLocation = new ToolSpec({
  id: ToolId.make("client.get_location"),
  name: "get_location",
  description: "The user's current location.",
  parameters: { type: "object", properties: { precision: { type: "string", enum: ["city", "street"] } } },
  success: {
    type: "object",
    properties: { city: { type: "string" }, country: { type: "string" } },
    required: ["city", "country"]
  },
  annotations: new ToolAnnotations({ readOnlyHint: true })
})

const policy = (decision: "allow" | "deny" | "ask") =>
  new PermissionPolicy({
    default: "allow",
    rules: [new PermissionRule({ tools: ["client.get_location"], decision })]
  })

/** The callbacks guide's agent: asks before each `get_location` call unless another policy is given. */
const assistant = (options?: {
  readonly permissions?: PermissionPolicy | undefined
  readonly timeouts?: CallbackTimeouts | undefined
}): Agent.Agent =>
  Agent.make({
    name: "assistant",
    model: "scripted",
    instructions: "Use your tools. Answer in one short sentence.",
    tools: [getLocation],
    connectors: ["gmail"],
    permissions: options?.permissions ?? policy("ask"),
    timeouts: options?.timeouts
  })

const LOCATION: ScriptedModel.ToolCall = { name: "get_location", params: { precision: "city" } }
const EMAIL: ScriptedModel.ToolCall = { name: "gmail_latest_email", params: {} }

const IN_LYON = "You're in Lyon, France."
const NO_LOCATION = "I could not find where you are."
const EMAIL_ABOUT = "Your latest email is about: Dinner on Friday?"
const NO_EMAIL = "I could not read your email."

const describeResult = (name: string, result: ScriptedModel.ToolResult | undefined): string => {
  const value = result !== undefined && !result.isFailure ? result.result as Record<string, unknown> : undefined
  if (name === LOCATION.name) {
    return value === undefined ? NO_LOCATION : `You're in ${String(value.city)}, ${String(value.country)}.`
  }
  return value === undefined ? NO_EMAIL : `Your latest email is about: ${String(value.subject)}`
}

/**
 * A brain that makes the given rounds of tool calls (each round once the previous round's results are in the
 * prompt), then answers with one sentence per tool call, from its result.
 */
const brain = (...rounds: ReadonlyArray<ReadonlyArray<ScriptedModel.ToolCall>>) =>
  ScriptedModel.fromFunction((call) => {
    const results = ScriptedModel.toolResults(call)
    let made = 0
    for (const round of rounds) {
      if (results.length === made) return ScriptedModel.reply({ toolCalls: round })
      made += round.length
    }
    return ScriptedModel.text(
      rounds.flat().map((toolCall) => describeResult(toolCall.name, results.find((r) => r.name === toolCall.name)))
        .join(" ")
    )
  })

/** `gmail_latest_email` and `get_location` at once (concurrent tool calls). */
const concurrent = () => brain([EMAIL, LOCATION])
/** `gmail_latest_email`, then `get_location`: the callbacks come one after the other. */
const sequential = () => brain([EMAIL], [LOCATION])

const lyon = Answer.ClientToolResult.success({ city: "Lyon", country: "France" })
const allow = new Answer.AllowApproval()

const signInAnswer = (callback: OpenSignIn, signIn: "connected" | "denied"): Answer.SignInAnswer => {
  const ids = callback.requests.map((request) => request.id)
  return new Answer.SignInAnswer(signIn === "connected" ? { connected: ids } : { denied: ids })
}

/** The answer a person gives: allow, Lyon, and the sign-in as told. */
const answerFor = (callback: Callback, signIn: "connected" | "denied" = "denied"): Answer.Answer => {
  switch (callback._tag) {
    case "OpenApproval":
      return allow
    case "OpenClientToolCall":
      return lyon
    case "OpenSignIn":
      return signInAnswer(callback, signIn)
  }
}

/** Handlers that answer everything like `answerFor`. */
const answerAll = (signIn: "connected" | "denied" = "denied") =>
  CallbackHandler.layer({
    approval: () => allow,
    clientTool: () => lyon,
    signIn: (callback) => signInAnswer(callback, signIn)
  })

// =============================================================================
// Helpers
// =============================================================================

const stateAs = <Tag extends TurnState["_tag"]>(state: TurnState, tag: Tag): Extract<TurnState, { _tag: Tag }> => {
  assert.strictEqual(
    state._tag,
    tag,
    `the turn is ${state._tag}${state._tag === "Failed" ? ` (${state.error.message})` : ""}`
  )
  return state as Extract<TurnState, { _tag: Tag }>
}

const ofTag = <Tag extends TurnEvent["_tag"]>(
  events: ReadonlyArray<TurnEvent>,
  tag: Tag
): ReadonlyArray<Extract<TurnEvent, { _tag: Tag }>> =>
  events.filter((event): event is Extract<TurnEvent, { _tag: Tag }> => event._tag === tag)

/** The whole log of an ended turn (`Turn.events` ends with `TurnEnded`). */
const logOf = (turn: Turn.Turn) => Effect.map(Stream.runCollect(Turn.events(turn)), Chunk.toReadonlyArray)

/** The turn a state belongs to, found by id as another process would. */
const turnOf = (agent: Agent.Agent, state: { readonly sessionId: string; readonly turnId: Turn.Turn["turnId"] }) =>
  Effect.flatMap(Agent.session(agent, state.sessionId), (session) => Session.turn(session, state.turnId))

const kinds = (callbacks: ReadonlyArray<Callback>): ReadonlyArray<Kind> => callbacks.map((callback) => callback.kind)

/** The kinds of concurrent callbacks, in a stable order. */
const sortedKinds = (callbacks: ReadonlyArray<Callback>): ReadonlyArray<Kind> => [...kinds(callbacks)].sort()

const assertOneResolution = (
  events: ReadonlyArray<TurnEvent>,
  callbackId: string,
  resolution: "answered" | "expired" | "turn_ended" | "cancelled"
) => {
  const resolved = ofTag(events, "CallbackResolved").filter((event) => event.callbackId === callbackId)
  assert.strictEqual(resolved.length, 1, `one CallbackResolved for ${callbackId}`)
  assert.strictEqual(resolved[0].resolution, resolution)
  return resolved[0]
}

const toolCompleted = (events: ReadonlyArray<TurnEvent>, name: string) => {
  const completed = ofTag(events, "ToolCallCompleted").filter((event) => event.name === name)
  assert.strictEqual(completed.length, 1, `one ToolCallCompleted for ${name}`)
  return completed[0]
}

// =============================================================================
// Suite
// =============================================================================

/**
 * Registers the transport contract suite for one `Transport` implementation. `makeTransport(model)` returns a fresh
 * runtime whose agents run on `model` and which offers the `gmail` demo mailbox connector (see the module docs).
 *
 * @since 0.1.0
 * @category Utils
 */
export const suite = (
  name: string,
  makeTransport: (model: LanguageModel.Service) => Layer.Layer<Transport.Transport>
) =>
  describe(`${name} (Transport contract)`, () => {
    const withModel = <A, E>(
      model: Effect.Effect<ScriptedModel.Service>,
      body: (model: ScriptedModel.Service) => Effect.Effect<A, E, Transport.Transport>
    ): Effect.Effect<A, E> =>
      Effect.flatMap(model, (scripted) => Effect.provide(body(scripted), makeTransport(scripted.languageModel)))

    describe("driving a session", () => {
      it.effect("Agent.run with handlers for every kind completes", () =>
        withModel(concurrent(), (model) =>
          Effect.gen(function*() {
            const state = yield* Agent.run(assistant(), "Where am I, and what is my latest email about?").pipe(
              Effect.provide(answerAll("denied"))
            )
            const completed = stateAs(state, "Completed")
            assert.strictEqual(completed.text, `${NO_EMAIL} ${IN_LYON}`)
            const calls = yield* model.calls
            assert.strictEqual(calls.length, 2)
            // The model is offered exactly the client tool and the connector's tool.
            assert.deepStrictEqual([...ScriptedModel.toolNames(calls[0])].sort(), [
              "get_location",
              "gmail_latest_email"
            ])
          })))

      it.effect("a run without handlers returns Blocked; answers by id and Turn.result({ after }) finish it", () =>
        withModel(concurrent(), () =>
          Effect.gen(function*() {
            const agent = assistant()
            let state = yield* Agent.run(agent, "Where am I, and what is my latest email about?")
            const first = stateAs(state, "Blocked")
            const turn = yield* turnOf(agent, first)
            assert.strictEqual(turn.turnId, first.turnId)
            const rounds: Array<ReadonlyArray<Kind>> = []
            while (state._tag === "Blocked") {
              assert.strictEqual(state.sessionId, first.sessionId)
              assert.strictEqual(state.turnId, first.turnId)
              rounds.push(sortedKinds(state.callbacks))
              for (const callback of state.callbacks) {
                yield* Turn.answer(turn, callback.id, answerFor(callback))
              }
              state = yield* Turn.result(turn, { after: state })
            }
            assert.deepStrictEqual(rounds, [["approval", "sign_in"], ["client_tool"]])
            assert.strictEqual(stateAs(state, "Completed").text, `${NO_EMAIL} ${IN_LYON}`)
          })))

      it.effect("Turn.result({ onEvent }) shows the events while the handlers answer", () =>
        withModel(sequential(), () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(assistant())
            const turn = yield* Session.sendMessage(session, "Where am I, and what is my latest email about?")
            const seen: Array<TurnEvent> = []
            const state = yield* Turn.result(turn, { onEvent: (event) => void seen.push(event) }).pipe(
              Effect.provide(answerAll("denied"))
            )
            assert.strictEqual(stateAs(state, "Completed").text, `${NO_EMAIL} ${IN_LYON}`)
            assert.deepStrictEqual(
              ofTag(seen, "CallbackOpened").map((event) => event.callback.kind),
              ["sign_in", "approval", "client_tool"]
            )
            assert.strictEqual(seen[0]._tag, "TurnStarted")
            const last = seen[seen.length - 1]
            assert.strictEqual(last._tag, "TurnEnded")
            if (last._tag === "TurnEnded") assert.deepStrictEqual(last.state, state)
            // Every callback the handlers saw was answered, and nothing was left open.
            assert.strictEqual(ofTag(seen, "CallbackResolved").length, 3)
            assert.isTrue(ofTag(seen, "CallbackResolved").every((event) => event.resolution === "answered"))
          })))

      it.effect("Turn.events by hand: answer each CallbackOpened by id; handlers in context never answer", () =>
        withModel(sequential(), () =>
          Effect.gen(function*() {
            const handled: Array<Kind> = []
            const session = yield* Agent.startSession(assistant())
            const turn = yield* Session.sendMessage(session, "Where am I, and what is my latest email about?")
            const answered: Array<Kind> = []
            const events = yield* Turn.events(turn).pipe(
              Stream.tap((event) => {
                if (event._tag !== "CallbackOpened") return Effect.void
                answered.push(event.callback.kind)
                return Turn.answer(turn, event.callback.id, answerFor(event.callback, "connected"))
              }),
              Stream.runCollect,
              Effect.map(Chunk.toReadonlyArray),
              // Handlers that would answer otherwise (deny, Paris, refuse): Turn.events must not use them.
              Effect.provide(CallbackHandler.layer({
                approval: (context) => {
                  handled.push(context.callback.kind)
                  return new Answer.DenyApproval({ reason: "the handler answered" })
                },
                clientTool: (callback) => {
                  handled.push(callback.kind)
                  return Answer.ClientToolResult.success({ city: "Paris", country: "France" })
                },
                signIn: (callback) => {
                  handled.push(callback.kind)
                  return signInAnswer(callback, "denied")
                }
              }))
            )
            assert.deepStrictEqual(answered, ["sign_in", "approval", "client_tool"])
            assert.deepStrictEqual(handled, [])
            const last = events[events.length - 1]
            assert.strictEqual(last._tag, "TurnEnded")
            if (last._tag === "TurnEnded") {
              assert.strictEqual(stateAs(last.state, "Completed").text, `${EMAIL_ABOUT} ${IN_LYON}`)
            }
            // The answers given by id are the ones that won.
            assert.deepStrictEqual(
              ofTag(events, "CallbackResolved").map((event) => [event.resolution, event.answer?._tag]),
              [["answered", "SignInAnswer"], ["answered", "AllowApproval"], ["answered", "ClientToolResult"]]
            )
            // The turn's events: from its cursor, gap-free, in this order (deltas and TurnBlocked aside).
            assert.strictEqual(events[0].seq, turn.cursor)
            assert.deepStrictEqual(events.map((event) => event.seq), events.map((_, i) => turn.cursor + i))
            assert.deepStrictEqual(
              events.filter((event) => event._tag !== "MessageDelta" && event._tag !== "TurnBlocked").map((e) =>
                e._tag
              ),
              [
                "TurnStarted",
                "ToolCallStarted",
                "CallbackOpened",
                "CallbackResolved",
                "ToolCallCompleted",
                "ToolCallStarted",
                "CallbackOpened",
                "CallbackResolved",
                "CallbackOpened",
                "CallbackResolved",
                "ToolCallCompleted",
                "MessageCompleted",
                "TurnEnded"
              ]
            )
            assert.strictEqual(
              ofTag(events, "MessageDelta").map((event) => event.delta).join(""),
              `${EMAIL_ABOUT} ${IN_LYON}`
            )
          })))
    })

    describe("Blocked and after", () => {
      it.effect("Blocked lists only what the handlers left open; after continues without asking them again", () =>
        withModel(concurrent(), () =>
          Effect.gen(function*() {
            const handled: Array<string> = []
            const record = <A>(callback: Callback, answer: A) => {
              handled.push(callback.id)
              return answer
            }
            const handlers = CallbackHandler.layer({
              approval: (context) => record(context.callback, allow),
              clientTool: (callback) => record(callback, new Answer.KeepCallbackOpen()),
              signIn: (callback) => record(callback, signInAnswer(callback, "denied"))
            })
            const agent = assistant()
            const state = yield* Agent.run(agent, "Where am I, and what is my latest email about?").pipe(
              Effect.provide(handlers)
            )
            const blocked = stateAs(state, "Blocked")
            assert.deepStrictEqual(kinds(blocked.callbacks), ["client_tool"])
            assert.strictEqual(handled.length, 3)
            const turn = yield* turnOf(agent, blocked)
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((callback) => callback.id), [
              blocked.callbacks[0].id
            ])
            yield* Turn.answer(turn, blocked.callbacks[0].id, lyon)
            const final = yield* Turn.result(turn, { after: blocked }).pipe(Effect.provide(handlers))
            assert.strictEqual(stateAs(final, "Completed").text, `${NO_EMAIL} ${IN_LYON}`)
            // Each callback went to the handlers once: `after` skipped the ones before the cursor.
            assert.strictEqual(handled.length, 3)
            assert.strictEqual(new Set(handled).size, 3)
            assert.isTrue(handled.includes(blocked.callbacks[0].id))
          })))

      it.effect("Turn.result({ after }) only reports events from the cursor on", () =>
        withModel(sequential(), () =>
          Effect.gen(function*() {
            const agent = assistant()
            const blocked = stateAs(
              yield* Agent.run(agent, "Where am I, and what is my latest email about?"),
              "Blocked"
            )
            assert.deepStrictEqual(kinds(blocked.callbacks), ["sign_in"])
            const turn = yield* turnOf(agent, blocked)
            yield* Turn.answer(turn, blocked.callbacks[0].id, answerFor(blocked.callbacks[0]))
            const seen: Array<TurnEvent> = []
            const next = yield* Turn.result(turn, { after: blocked, onEvent: (event) => void seen.push(event) })
            assert.deepStrictEqual(kinds(stateAs(next, "Blocked").callbacks), ["approval"])
            assert.isTrue(seen.length > 0)
            assert.isTrue(seen.every((event) => event.seq >= blocked.cursor))
            assert.strictEqual(seen[0].seq, blocked.cursor)
            assert.deepStrictEqual(
              ofTag(seen, "CallbackOpened").map((event) => event.callback.kind),
              ["approval"]
            )
          })))
    })

    describe("answer validation", () => {
      /** A turn blocked on one client tool call (the policy allows get_location). */
      const blockedOnClientTool = Effect.gen(function*() {
        const agent = assistant({ permissions: policy("allow") })
        const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
        assert.deepStrictEqual(kinds(blocked.callbacks), ["client_tool"])
        return { blocked, turn: yield* turnOf(agent, blocked), callback: blocked.callbacks[0] }
      })

      it.effect("an approval answer to a client tool call fails with AnswerMismatch and stores nothing", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const { blocked, callback, turn } = yield* blockedOnClientTool
            const error = yield* Effect.flip(Turn.answer(turn, callback.id, allow))
            assert.strictEqual(error._tag, "AnswerMismatch")
            if (error._tag === "AnswerMismatch") assert.strictEqual(error.callbackId, callback.id)
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
            yield* Turn.answer(turn, callback.id, lyon)
            assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
            const resolved = assertOneResolution(yield* logOf(turn), callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, lyon)
          })))

      it.effect("a client tool result that does not match the success schema fails with AnswerMismatch", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const { blocked, callback, turn } = yield* blockedOnClientTool
            for (const wrong of [{ city: "Lyon" }, { city: "Lyon", country: 33 }, "Lyon, France"]) {
              const error = yield* Effect.flip(Turn.answer(turn, callback.id, Answer.ClientToolResult.success(wrong)))
              assert.strictEqual(error._tag, "AnswerMismatch", JSON.stringify(wrong))
            }
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
            yield* Turn.answer(turn, callback.id, lyon)
            assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
            const resolved = assertOneResolution(yield* logOf(turn), callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, lyon)
          })))

      it.effect("a SignInAnswer that omits a requested source fails with AnswerMismatch", () =>
        withModel(brain([EMAIL]), () =>
          Effect.gen(function*() {
            const agent = assistant()
            const blocked = stateAs(yield* Agent.run(agent, "What is my latest email about?"), "Blocked")
            const callback = blocked.callbacks[0]
            assert.strictEqual(callback._tag, "OpenSignIn")
            if (callback._tag !== "OpenSignIn") return
            assert.deepStrictEqual(callback.requests.map((request) => request.source), ["gmail"])
            const turn = yield* turnOf(agent, blocked)
            const error = yield* Effect.flip(Turn.answer(turn, callback.id, new Answer.SignInAnswer({})))
            assert.strictEqual(error._tag, "AnswerMismatch")
            const wrongKind = yield* Effect.flip(Turn.answer(turn, callback.id, allow))
            assert.strictEqual(wrongKind._tag, "AnswerMismatch")
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
            yield* Turn.answer(turn, callback.id, answerFor(callback, "connected"))
            assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, EMAIL_ABOUT)
            assertOneResolution(yield* logOf(turn), callback.id, "answered")
          })))

      it.effect("an unknown callback id fails with CallbackNotOpen", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const { blocked, callback, turn } = yield* blockedOnClientTool
            const unknown = yield* newCallbackId
            const error = yield* Effect.flip(Turn.answer(turn, unknown, lyon))
            assert.strictEqual(error._tag, "CallbackNotOpen")
            if (error._tag === "CallbackNotOpen") assert.strictEqual(error.callbackId, unknown)
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
            yield* Turn.answer(turn, callback.id, lyon)
            assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
            const events = yield* logOf(turn)
            assert.isFalse(events.some((event) => event._tag === "CallbackResolved" && event.callbackId === unknown))
          })))

      it.effect("a second answer fails with CallbackAlreadyAnswered; the first one stands", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const { blocked, callback, turn } = yield* blockedOnClientTool
            yield* Turn.answer(turn, callback.id, lyon)
            const paris = Answer.ClientToolResult.success({ city: "Paris", country: "France" })
            const error = yield* Effect.flip(Turn.answer(turn, callback.id, paris))
            assert.strictEqual(error._tag, "CallbackAlreadyAnswered")
            assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
            const again = yield* Effect.flip(Turn.answer(turn, callback.id, paris))
            assert.strictEqual(again._tag, "CallbackAlreadyAnswered")
            const resolved = assertOneResolution(yield* logOf(turn), callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, lyon)
          })))
    })

    describe("expiry", () => {
      it.effect("an unanswered approval expires after one hour and the model sees a denial", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const agent = assistant()
            const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
            const callback = blocked.callbacks[0]
            assert.strictEqual(callback.kind, "approval")
            assert.isDefined(callback.expiresAt)
            if (callback.expiresAt !== undefined) {
              assert.strictEqual(DateTime.distance(callback.openedAt, callback.expiresAt), Duration.toMillis("1 hour"))
            }
            const turn = yield* turnOf(agent, blocked)
            yield* TestClock.adjust("59 minutes")
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
            yield* TestClock.adjust("1 minute")
            const final = yield* Turn.result(turn, { after: blocked })
            assert.strictEqual(stateAs(final, "Completed").text, NO_LOCATION)
            const events = yield* logOf(turn)
            assertOneResolution(events, callback.id, "expired")
            assert.isTrue(toolCompleted(events, "get_location").isFailure)
            // A denied call is never made: no client tool call was opened.
            assert.deepStrictEqual(ofTag(events, "CallbackOpened").map((event) => event.callback.kind), ["approval"])
          })))

      it.effect("an unanswered client tool call expires into a tool error", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const agent = assistant({ permissions: policy("allow") })
            const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
            const callback = blocked.callbacks[0]
            assert.strictEqual(callback.kind, "client_tool")
            const turn = yield* turnOf(agent, blocked)
            yield* TestClock.adjust("1 hour")
            assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, NO_LOCATION)
            const events = yield* logOf(turn)
            assertOneResolution(events, callback.id, "expired")
            assert.isTrue(toolCompleted(events, "get_location").isFailure)
            const error = yield* Effect.flip(Turn.answer(turn, callback.id, lyon))
            assert.strictEqual(error._tag, "CallbackNotOpen")
          })))

      it.effect("the agent's timeouts set the deadline: an approval waits 5 minutes, not less", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const agent = assistant({ timeouts: new CallbackTimeouts({ approval: Duration.minutes(5) }) })
            const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
            const callback = blocked.callbacks[0]
            assert.strictEqual(callback.kind, "approval")
            assert.isDefined(callback.expiresAt)
            if (callback.expiresAt !== undefined) {
              assert.strictEqual(
                DateTime.distance(callback.openedAt, callback.expiresAt),
                Duration.toMillis("5 minutes")
              )
            }
            const turn = yield* turnOf(agent, blocked)
            yield* TestClock.adjust("4 minutes")
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
            yield* TestClock.adjust("1 minute")
            assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, NO_LOCATION)
            const events = yield* logOf(turn)
            assertOneResolution(events, callback.id, "expired")
            assert.isTrue(toolCompleted(events, "get_location").isFailure)
          })))
    })

    describe("cancel", () => {
      it.effect("Session.cancel ends a blocked turn Cancelled and resolves its callbacks cancelled", () =>
        withModel(concurrent(), (model) =>
          Effect.gen(function*() {
            const agent = assistant()
            const session = yield* Agent.startSession(agent)
            const blocked = stateAs(
              yield* Session.run(session, "Where am I, and what is my latest email about?"),
              "Blocked"
            )
            assert.deepStrictEqual(sortedKinds(blocked.callbacks), ["approval", "sign_in"])
            const turn = yield* Session.turn(session, blocked.turnId)
            yield* Session.cancel(session)
            const final = yield* Turn.result(turn, { after: blocked })
            stateAs(final, "Cancelled")
            assert.strictEqual(final.turnId, blocked.turnId)
            const events = yield* logOf(turn)
            for (const callback of blocked.callbacks) assertOneResolution(events, callback.id, "cancelled")
            const last = events[events.length - 1]
            assert.strictEqual(last._tag, "TurnEnded")
            if (last._tag === "TurnEnded") assert.strictEqual(last.state._tag, "Cancelled")
            // Nothing ran after the cancel: no tool call completed and the model was not called again.
            assert.deepStrictEqual(ofTag(events, "ToolCallCompleted"), [])
            assert.strictEqual((yield* model.calls).length, 1)
            assert.deepStrictEqual(yield* Turn.openCallbacks(turn), [])
            const error = yield* Effect.flip(
              Turn.answer(turn, blocked.callbacks[0].id, answerFor(blocked.callbacks[0]))
            )
            assert.strictEqual(error._tag, "CallbackNotOpen")
          })))

      it.effect("a Turn.result waiting when the session is cancelled returns Cancelled, not a stale Blocked", () =>
        withModel(concurrent(), () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(assistant())
            const blocked = stateAs(
              yield* Session.run(session, "Where am I, and what is my latest email about?"),
              "Blocked"
            )
            const turn = yield* Session.turn(session, blocked.turnId)
            // Another client waits on the turn from the Blocked state (as an app does while a person decides).
            const waiter = yield* Effect.fork(Turn.result(turn, { after: blocked }))
            yield* Effect.yieldNow()
            yield* Session.cancel(session)
            const state = yield* Fiber.join(waiter)
            stateAs(state, "Cancelled")
            // Once the cancel began, nothing may report the turn blocked again.
            const events = yield* logOf(turn)
            assert.deepStrictEqual(
              events.filter((event) => event.seq >= blocked.cursor).map((event) => event._tag),
              ["CallbackResolved", "CallbackResolved", "TurnEnded"]
            )
          })))
    })

    describe("readers", () => {
      it.effect("two readers of Turn.events both see the CallbackResolved of an answer given by id", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(assistant({ permissions: policy("allow") }))
            const turn = yield* Session.sendMessage(session, "Where am I?")
            const read = Turn.events(turn).pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray), Effect.fork)
            const first = yield* read
            const second = yield* read
            const blocked = stateAs(yield* Turn.result(turn), "Blocked")
            const callback = blocked.callbacks[0]
            yield* Turn.answer(turn, callback.id, lyon)
            const [one, two] = yield* Fiber.join(Fiber.zip(first, second))
            for (const events of [one, two]) {
              const resolved = assertOneResolution(events, callback.id, "answered")
              assert.deepStrictEqual(resolved.answer, lyon)
              assert.strictEqual(events[events.length - 1]._tag, "TurnEnded")
            }
            assert.deepStrictEqual(one.map((event) => event.seq), two.map((event) => event.seq))
          })))
    })

    describe("model failures", () => {
      it.effect("a model call beyond the script ends the turn Failed with a ModelFailure", () =>
        withModel(ScriptedModel.make([]), (model) =>
          Effect.gen(function*() {
            const agent = assistant()
            const state = yield* Agent.run(agent, "Where am I?")
            const failed = stateAs(state, "Failed")
            assert.strictEqual(failed.error._tag, "ModelFailure")
            assert.strictEqual((yield* model.calls).length, 1)
            const events = yield* logOf(yield* turnOf(agent, failed))
            const last = events[events.length - 1]
            assert.strictEqual(last._tag, "TurnEnded")
            if (last._tag === "TurnEnded") assert.strictEqual(last.state._tag, "Failed")
          })))

      it.effect("a model step that fails with an AiError after a tool call ends the turn Failed", () =>
        withModel(
          ScriptedModel.make([
            ScriptedModel.reply({ toolCalls: [LOCATION] }),
            () =>
              Effect.fail(
                new AiError.UnknownError({
                  module: "Provider",
                  method: "streamText",
                  description: "the provider is down"
                })
              )
          ]),
          (model) =>
            Effect.gen(function*() {
              const state = yield* Agent.run(assistant({ permissions: policy("allow") }), "Where am I?").pipe(
                Effect.provide(answerAll())
              )
              const failed = stateAs(state, "Failed")
              assert.strictEqual(failed.error._tag, "ModelFailure")
              assert.include(failed.error.message, "the provider is down")
              yield* model.assertComplete
            })
        ))
    })

    describe("policy and sign-in", () => {
      it.effect("deny: the tool is never called and the model gets a failure result", () =>
        withModel(brain([LOCATION]), () =>
          Effect.gen(function*() {
            const handled: Array<Kind> = []
            const agent = assistant({ permissions: policy("deny") })
            const state = yield* Agent.run(agent, "Where am I?").pipe(
              Effect.provide(CallbackHandler.layer({
                approval: (context) => {
                  handled.push(context.callback.kind)
                  return allow
                },
                clientTool: (callback) => {
                  handled.push(callback.kind)
                  return lyon
                }
              }))
            )
            assert.strictEqual(stateAs(state, "Completed").text, NO_LOCATION)
            assert.deepStrictEqual(handled, [])
            const events = yield* logOf(yield* turnOf(agent, stateAs(state, "Completed")))
            assert.deepStrictEqual(ofTag(events, "CallbackOpened"), [])
            assert.strictEqual(ofTag(events, "ToolCallStarted").length, 1)
            const completed = toolCompleted(events, "get_location")
            assert.isTrue(completed.isFailure)
            assert.strictEqual(completed.toolId, "client.get_location")
          })))

      it.effect("a connected sign-in runs the connector tool and the model sees the email", () =>
        withModel(brain([EMAIL]), (model) =>
          Effect.gen(function*() {
            const agent = assistant()
            const state = yield* Agent.run(agent, "What is my latest email about?").pipe(
              Effect.provide(answerAll("connected"))
            )
            const completed = stateAs(state, "Completed")
            assert.strictEqual(completed.text, EMAIL_ABOUT)
            const events = yield* logOf(yield* turnOf(agent, completed))
            assert.deepStrictEqual(ofTag(events, "CallbackOpened").map((event) => event.callback.kind), ["sign_in"])
            const email = toolCompleted(events, "gmail_latest_email")
            assert.isFalse(email.isFailure)
            assert.strictEqual(email.toolId, "connector.gmail.latest_email")
            assert.strictEqual((email.result as { readonly subject: string }).subject, "Dinner on Friday?")
            const calls = yield* model.calls
            const seen = ScriptedModel.toolResults(calls[calls.length - 1])
            assert.strictEqual(seen.length, 1)
            assert.isFalse(seen[0].isFailure)
          })))

      it.effect("a denied sign-in gives the model a tool error", () =>
        withModel(brain([EMAIL]), (model) =>
          Effect.gen(function*() {
            const agent = assistant()
            const state = yield* Agent.run(agent, "What is my latest email about?").pipe(
              Effect.provide(answerAll("denied"))
            )
            const completed = stateAs(state, "Completed")
            assert.strictEqual(completed.text, NO_EMAIL)
            const events = yield* logOf(yield* turnOf(agent, completed))
            assert.isTrue(toolCompleted(events, "gmail_latest_email").isFailure)
            const calls = yield* model.calls
            const seen = ScriptedModel.toolResults(calls[calls.length - 1])
            assert.deepStrictEqual(seen.map((result) => result.isFailure), [true])
          })))
    })
  })
