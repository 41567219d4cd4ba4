/**
 * The server's models for the HTTP benchmark, as hand-written `LanguageModel.LanguageModel` doubles (no schema work per
 * call, so the numbers are the transport's and the engine's):
 *
 * - `pricer`: calls `lookup_price({ product: "atlas" })` until a tool result is in the prompt, then answers;
 * - `streamer`: answers with `deltas` text deltas (one `MessageDelta` event each).
 */
import { Effect, Stream } from "effect"
import { LanguageModel, Prompt, Response } from "effect/ai"

/** The API key of the benchmark's server. */
export const benchKey = "bench-key-0123456789"

/** The key of another tenant: the hostile clients of `hostile.ts`. */
export const hostileKey = "hostile-key-0123456789"

const usage = new Response.Usage({ inputTokens: { total: 1 }, outputTokens: { total: 1 } })

const hasToolResult = (input: Prompt.RawInput) => Prompt.make(input).content.some((message) => message.role === "tool")

const double = (parts: (input: Prompt.RawInput, index: number) => ReadonlyArray<Response.AnyPart>) => {
  let calls = 0
  const service = {
    [LanguageModel.TypeId]: LanguageModel.TypeId,
    generateText: () => Effect.die(new Error("the benchmark's models only stream")),
    generateObject: () => Effect.die(new Error("the benchmark's models only stream")),
    streamText: (options: LanguageModel.GenerateTextOptions<{}>) =>
      Stream.suspend(() => Stream.fromIterable(parts(options.prompt, ++calls)))
  }
  // The methods are generic in the caller's toolkit; the double answers every toolkit with the same parts.
  return service as unknown as LanguageModel.LanguageModel
}

const metadata = (index: number) =>
  Response.makePart("response-metadata", {
    id: `resp_${index}`,
    modelId: "bench"
  })

const text = (index: number, deltas: ReadonlyArray<string>): ReadonlyArray<Response.AnyPart> => {
  const id = `text_${index}`
  return [
    metadata(index),
    Response.makePart("text-start", { id }),
    ...deltas.map((delta) => Response.makePart("text-delta", { id, delta })),
    Response.makePart("text-end", { id }),
    Response.makePart("finish", { reason: "stop", usage })
  ]
}

export const pricer = double((input, index) =>
  hasToolResult(input)
    ? text(index, ["The ", "atlas ", "costs ", "129 ", "EUR."])
    : [
      metadata(index),
      Response.makePart("tool-call", {
        id: `call_${index}`,
        name: "lookup_price",
        params: { product: "atlas" },
        providerExecuted: false
      }),
      Response.makePart("finish", { reason: "tool-calls", usage })
    ]
)

export const streamer = (deltas: number) => {
  const words = Array.from({ length: deltas }, (_, i) => `w${i} `)
  return double((_, index) => text(index, words))
}
