/**
 * The two models the workload runs on, both deciding with `Workload.decide`:
 *
 * - `scripted`: a `ScriptedModel.fromFunction` brain (what tests and examples use), a real `@effect/ai`
 *   `LanguageModel` whose responses are decoded by `effect/ai` against the request's toolkit;
 * - `rawDouble`: a hand-written object implementing `LanguageModel.LanguageModel` directly (not built with
 *   `LanguageModel.make`): it hands out already-built response parts, so no schema is built or run per call. The
 *   difference between the two is what `effect/ai`'s per-call work costs the engine.
 *
 * Both stream the same parts: `response-metadata`, then either one `tool-call` or the text (one `text-delta` per
 * word), then `finish`.
 */
import { ScriptedModel } from "@parley/testing"
import { Effect, Schema, Stream } from "effect"
import { LanguageModel, Prompt, Response, Tool } from "effect/ai"
import { decide, type Ledger, Price, PRODUCT } from "./workload.js"

/** A model the workload can run on. */
export interface BenchModel {
  readonly name: string
  readonly make: (ledger: Ledger) => Effect.Effect<LanguageModel.LanguageModel>
}

export const scripted: BenchModel = {
  name: "ScriptedModel",
  make: (ledger) =>
    Effect.map(
      ScriptedModel.fromFunction((call) => {
        const decision = decide(ledger, call.prompt)
        return decision._tag === "CallTool"
          ? ScriptedModel.toolCall("lookup_price", { product: PRODUCT })
          : ScriptedModel.text(decision.text)
      }, { record: false }),
      (model) => model.languageModel
    )
}

/** Word-sized deltas, as `ScriptedModel` streams them. */
const words = (text: string): ReadonlyArray<string> => text.match(/\s*\S+\s*/g) ?? [text]

/** `lookup_price` as an `effect/ai` tool: the toolkit type of the parts the raw double builds. */
export const LookupPrice = Tool.make("lookup_price", {
  description: "The price of a product, in EUR.",
  parameters: Schema.Struct({ product: Schema.String }),
  success: Price
})

type Tools = { readonly lookup_price: typeof LookupPrice }

const usage = new Response.Usage({ inputTokens: { total: 1 }, outputTokens: { total: 1 } })

/** The hand-written `LanguageModel.LanguageModel` double. */
export const makeRawDouble = (ledger: Ledger): LanguageModel.LanguageModel => {
  let calls = 0
  const respond = (input: Prompt.RawInput) => {
    const index = ++calls
    const decision = decide(ledger, Prompt.make(input))
    const metadata = Response.makePart("response-metadata", {
      id: `resp_${index}`,
      modelId: "raw-double"
    })
    const toolCall = Response.makePart("tool-call", {
      id: `call_${index}`,
      name: "lookup_price",
      params: { product: PRODUCT },
      providerExecuted: false
    })
    return { index, decision, metadata, toolCall }
  }
  const streamParts = (input: Prompt.RawInput): Array<Response.StreamPart<Tools>> => {
    const { decision, index, metadata, toolCall } = respond(input)
    if (decision._tag === "CallTool") {
      return [metadata, toolCall, Response.makePart("finish", { reason: "tool-calls", usage })]
    }
    const id = `text_${index}`
    return [
      metadata,
      Response.makePart("text-start", { id }),
      ...words(decision.text).map((delta) => Response.makePart("text-delta", { id, delta })),
      Response.makePart("text-end", { id }),
      Response.makePart("finish", { reason: "stop", usage })
    ]
  }
  const parts = (input: Prompt.RawInput): Array<Response.Part<Tools>> => {
    const { decision, metadata, toolCall } = respond(input)
    return decision._tag === "CallTool"
      ? [metadata, toolCall, Response.makePart("finish", { reason: "tool-calls", usage })]
      : [
        metadata,
        Response.makePart("text", { text: decision.text }),
        Response.makePart("finish", { reason: "stop", usage })
      ]
  }
  const service = {
    [LanguageModel.TypeId]: LanguageModel.TypeId,
    generateText: (options: LanguageModel.GenerateTextOptions<{}>) =>
      Effect.sync(() => new LanguageModel.GenerateTextResponse(parts(options.prompt))),
    generateObject: () => Effect.die(new Error("the raw model double does not generate objects")),
    streamText: (options: LanguageModel.GenerateTextOptions<{}>) =>
      Stream.suspend(() => Stream.fromIterable(streamParts(options.prompt)))
  }
  // The service's methods are generic in the caller's toolkit; the double answers every toolkit with the same parts.
  return service as unknown as LanguageModel.LanguageModel
}

export const rawDouble: BenchModel = {
  name: "raw double",
  make: (ledger) => Effect.sync(() => makeRawDouble(ledger))
}
