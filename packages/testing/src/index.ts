/**
 * A deterministic, offline `effect/ai` `LanguageModel` for tests and for the "brains" of example programs.
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
 * A call beyond the script fails with an `AiError` (reason `UnknownError`) and is remembered, and `assertComplete`
 * fails with `UnexpectedModelCall` or `UnconsumedModelSteps`, so a test fails if the model was not driven the way it
 * claims. `ScriptedModel.fromFunction(brain)` is the unlimited variant for example programs.
 *
 * The transport contract suite is not exported here: it registers `@effect/vitest` tests, and a program that imports
 * `@parley/testing` for `ScriptedModel` must not load vitest. Import it as `@parley/testing/TransportSuite`.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "effect/ai"
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
 * Free ports on 127.0.0.1, from below the system's ephemeral range, for processes that must know their address
 * before they listen.
 *
 * @since 0.1.0
 */
export * as Ports from "./Ports.js"
