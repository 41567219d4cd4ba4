/**
 * A deterministic, offline `@effect/ai` `LanguageModel` for tests and for the "brains" of example programs.
 *
 * `ScriptedModel.make(steps)` builds a real `LanguageModel.LanguageModel` service with `LanguageModel.make`. Every
 * model call (`generateText`, `generateObject` or `streamText`) is recorded with the prompt and the tools it got, and
 * consumes the next step of the script. A step is a `Reply` (text and / or tool calls) or a function of the recorded
 * call, so a step can answer from the conversation so far (for example from a tool result in the prompt).
 *
 * Streaming is first-class: a text reply is streamed as `text-start`, one `text-delta` per word and `text-end`; tool
 * calls are `tool-call` parts with deterministic ids (`call_1`, `call_2`, … unless the step names one); every reply
 * ends with a `finish` part (`tool-calls` or `stop`, with word-count usage).
 *
 * A call beyond the script fails with an `AiError.UnknownError` and is remembered, and `assertComplete` fails with
 * `UnexpectedModelCall` or `UnconsumedModelSteps`, so a test fails if the model was not driven the way it claims.
 * `ScriptedModel.fromFunction(brain)` is the unlimited variant for example programs.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { ScriptedModel } from "@parley/testing"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const first = yield* LanguageModel.generateText({ prompt: "What is the weather in Paris?" })
 *   const second = yield* LanguageModel.generateText({ prompt: "Thanks!" })
 *   console.log(first.text, second.text) // "Sunny, 21°C." "You're welcome."
 *   yield* ScriptedModel.assertComplete
 *   const calls = yield* ScriptedModel.calls
 *   console.log(ScriptedModel.lastUserText(calls[1])) // "Thanks!"
 * }).pipe(
 *   Effect.provide(ScriptedModel.layer([
 *     ScriptedModel.text("Sunny, 21°C."),
 *     (call) => ScriptedModel.text(ScriptedModel.lastUserText(call) === "Thanks!" ? "You're welcome." : "Pardon?")
 *   ]))
 * )
 * ```
 *
 * @since 0.1.0
 */
export * as ScriptedModel from "./ScriptedModel.js"

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
export * as TransportSuite from "./TransportSuite.js"
