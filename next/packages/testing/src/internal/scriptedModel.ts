/**
 * The machinery of `ScriptedModel`: the recorded state and the `LanguageModel` built on it (the rendering of a
 * `Reply` as `@effect/ai` response parts is `scriptedReply.ts`).
 *
 * Work per call is O(1) in the number of calls so far: the recorded calls are appended to (never copied), and the
 * JSON Schema of a tool is built once per tool object.
 *
 * `LanguageModel.make` rebuilds the response schema (`Response.StreamPart(toolkit)` / `Response.Part(toolkit)`) and
 * compiles its decoder on every call, which costs milliseconds. So the common requests (no toolkit, or a toolkit
 * whose calls the caller runs itself, `disableToolCallResolution: true`) are answered by a direct implementation of
 * `LanguageModel.Service` that does what `LanguageModel.make` does (same provider options, same span — ended once
 * the reply is rendered —, same decoding of the encoded parts, same `MalformedOutput` on a decoding failure) with
 * decoders built once per toolkit (kept for the 16 toolkits used last), and streams the parts as one chunk. The other requests (tool calls resolved by `@effect/ai`, a toolkit given as an
 * Effect, a span transformer in context) go through `LanguageModel.make` itself.
 */
import * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import * as Response from "effect/ai/Response"
import * as Telemetry from "effect/ai/Telemetry"
import * as Tool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Channel from "effect/Channel"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as ParseResult from "effect/SchemaIssue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Call, Reply, Step, ToolDescription } from "../ScriptedModel.js"
import { type RenderedReply, toParts, toStreamParts } from "./scriptedReply.js"

/** Where a scripted model gets its steps. */
export interface Script {
  /** Number of steps, or `undefined` for an unlimited brain. */
  readonly size: number | undefined
  readonly step: (index: number) => Step | undefined
  /** Whether the calls are kept (`calls`); a brain for a program that runs for long keeps none. */
  readonly record: boolean
}

/** A model that records its calls; the public module turns `unexpected` and `size` into `assertComplete`. */
export interface Recording<Unexpected extends Error> {
  readonly languageModel: LanguageModel.Service
  /** A copy of the calls so far (later calls do not change it). */
  readonly calls: Effect.Effect<ReadonlyArray<Call>>
  /** The calls that went beyond the script, as built by `makeWith`'s `unexpected`. */
  readonly unexpected: Effect.Effect<ReadonlyArray<Unexpected>>
}

/** What a call is answered from: the provider options of `LanguageModel.make`, without the span. */
interface Request {
  readonly prompt: Prompt.Prompt
  readonly tools: ReadonlyArray<Tool.Any>
  readonly toolChoice: LanguageModel.ToolChoice<string>
  readonly responseFormat: LanguageModel.ProviderOptions["responseFormat"]
}

type Tools = Record<string, Tool.Any>
type Options = LanguageModel.GenerateTextOptions<Tools>

const MODULE = "ScriptedModel"

/**
 * Builds a recording `LanguageModel` on `script`. A call beyond the script is recorded, described by `unexpected`
 * and fails with an `AiError.UnknownError` whose `cause` is that description.
 */
export const makeWith = <Unexpected extends Error>(
  script: Script,
  unexpected: (call: Call) => Unexpected
): Effect.Effect<Recording<Unexpected>> =>
  Effect.gen(function*() {
    // Mutated only inside `Effect.suspend`, one call at a time: appends, no copies.
    const calls: Array<Call> = []
    const beyond: Array<Unexpected> = []
    let nextToolCallId = 1
    let nextIndex = 0

    const respond = (request: Request, method: Call["method"]): Effect.Effect<RenderedReply, AiError.AiError> =>
      Effect.flatMap(describeTools(request.tools, method), (tools) =>
        Effect.suspend(() => {
          const call: Call = {
            index: nextIndex++,
            method,
            prompt: request.prompt,
            tools,
            toolChoice: request.toolChoice,
            responseFormat: request.responseFormat
          }
          if (script.record) calls.push(call)
          const step = script.step(call.index)
          if (step === undefined) {
            const error = unexpected(call)
            beyond.push(error)
            return Effect.fail(
              new AiError.UnknownError({ module: MODULE, method, description: error.message, cause: error })
            )
          }
          return Effect.map(runStep(step, call), (reply): RenderedReply => ({
            reply,
            toolCallIds: (reply.toolCalls ?? []).map((toolCall) => toolCall.id ?? `call_${nextToolCallId++}`),
            call
          }))
        }))

    const made = yield* LanguageModel.make({
      generateText: (options) => Effect.map(respond(options, "generateText"), toParts),
      streamText: (options) =>
        Stream.unwrap(
          Effect.map(
            respond(options, "streamText"),
            (rendered) => Stream.fromChunks(...toStreamParts(rendered).map(Chunk.of))
          )
        )
    })
    const languageModel = Option.isSome(yield* Effect.serviceOption(Telemetry.CurrentSpanTransformer))
      ? made
      : direct(made, respond)

    return {
      languageModel,
      calls: Effect.sync(() => calls.slice()),
      unexpected: Effect.sync(() => beyond.slice())
    }
  })

const runStep = (step: Step, call: Call): Effect.Effect<Reply, AiError.AiError> =>
  typeof step === "function"
    ? Effect.suspend(() => {
      const result = step(call)
      return Effect.isEffect(result) ? result : Effect.succeed(result)
    })
    : Effect.succeed(step)

// =============================================================================
// Tools as the model sees them (JSON Schema built once per tool)
// =============================================================================

const descriptions = new WeakMap<Tool.Any, ToolDescription>()

const describeTool = (tool: Tool.Any): ToolDescription => {
  const cached = descriptions.get(tool)
  if (cached !== undefined) return cached
  const description: ToolDescription = {
    name: tool.name,
    description: tool.description ?? Tool.getDescriptionFromSchemaAst(tool.parametersSchema.ast),
    parameters: Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast)
  }
  descriptions.set(tool, description)
  return description
}

const describeTools = (
  tools: ReadonlyArray<Tool.Any>,
  method: Call["method"]
): Effect.Effect<ReadonlyArray<ToolDescription>, AiError.AiError> =>
  Effect.try({
    try: () => tools.map(describeTool),
    catch: (cause) =>
      new AiError.MalformedInput({
        module: MODULE,
        method,
        description: "a tool's parameters could not be converted to JSON Schema",
        cause
      })
  })

// =============================================================================
// The direct service: LanguageModel.make's work, with the response decoders built once per toolkit
// =============================================================================

interface Decoders {
  /** One part, decoded synchronously (no effect to run): what a part whose schema needs no effect goes through. */
  readonly streamPart: (
    part: Response.StreamPartEncoded
  ) => Either.Either<Response.StreamPart<Tools>, ParseResult.ParseError>
  /**
   * A chunk of parts, decoded as `LanguageModel.make` decodes each chunk (in an effect: a tool's parameters may need
   * one): a part the synchronous decoder refused goes through it, which gives `LanguageModel.make`'s error.
   */
  readonly stream: (
    chunk: Chunk.Chunk<Response.StreamPartEncoded>
  ) => Effect.Effect<Chunk.Chunk<Response.StreamPart<Tools>>, ParseResult.ParseError>
  readonly parts: (content: unknown) => Effect.Effect<Array<Response.Part<Tools>>, ParseResult.ParseError>
}

/** The decoders `LanguageModel.make` builds on every call with this toolkit, each built on first use. */
const makeDecoders = (toolkit: Toolkit.Any | Toolkit.WithHandler<Tools>): Decoders => {
  let streamPart: Decoders["streamPart"] | undefined
  let stream: Decoders["stream"] | undefined
  let parts: Decoders["parts"] | undefined
  return {
    streamPart: (part) => (streamPart ??= Schema.decodeEither(Response.StreamPart(toolkit)))(part),
    stream: (chunk) => (stream ??= Schema.decode(Schema.ChunkFromSelf(Response.StreamPart(toolkit))))(chunk),
    parts: (content) => (parts ??= Schema.decodeUnknown(Schema.mutable(Schema.Array(Response.Part(toolkit)))))(content)
  }
}

/**
 * The decoders of the toolkits used last, keyed by the toolkit's `tools` record (a toolkit and the `WithHandler`s
 * made from it share theirs), least recently used first. Bounded rather than weak: compiled decoders weigh tens of
 * KB, and a caller that makes a toolkit per conversation and keeps it alive (a paused turn) must not keep one
 * decoder per conversation alive with it.
 */
const recentDecoders = new Map<object, Decoders>()
const RECENT_DECODERS = 16
let noTools: Decoders | undefined

const decodersOf = (toolkit: Toolkit.WithHandler<Tools> | undefined): Decoders => {
  if (toolkit === undefined) return (noTools ??= makeDecoders(Toolkit.empty))
  const cached = recentDecoders.get(toolkit.tools)
  if (cached !== undefined) {
    recentDecoders.delete(toolkit.tools)
    recentDecoders.set(toolkit.tools, cached)
    return cached
  }
  const decoders = makeDecoders(toolkit)
  recentDecoders.set(toolkit.tools, decoders)
  const oldest = recentDecoders.keys().next()
  if (recentDecoders.size > RECENT_DECODERS && oldest.done !== true) recentDecoders.delete(oldest.value)
  return decoders
}

/** What `LanguageModel.make` passes to the provider, and the decoders of the response. */
const prepare = (
  options: Options,
  responseFormat: LanguageModel.ProviderOptions["responseFormat"]
): { readonly request: Request; readonly decoders: Decoders } => {
  const prompt = Prompt.make(options.prompt)
  const toolkit = options.toolkit as Toolkit.WithHandler<Tools> | undefined
  const all = toolkit === undefined ? [] : Object.values(toolkit.tools)
  if (toolkit === undefined || all.length === 0) {
    return { request: { prompt, tools: [], toolChoice: "none", responseFormat }, decoders: decodersOf(undefined) }
  }
  const toolChoice = options.toolChoice ?? "auto"
  const tools = typeof toolChoice === "object" && "oneOf" in toolChoice
    ? all.filter((tool) => toolChoice.oneOf.includes(tool.name))
    : all
  return { request: { prompt, tools, toolChoice, responseFormat }, decoders: decodersOf(toolkit) }
}

/** Whether `LanguageModel.make` would resolve tool calls (or read the toolkit from an Effect): then it answers. */
const needsMake = (options: Options): boolean => {
  const toolkit = options.toolkit
  if (toolkit === undefined) return false
  if (Effect.isEffect(toolkit)) return true
  return options.disableToolCallResolution !== true && Object.keys(toolkit.tools).length > 0
}

/** What `LanguageModel.make` fails with when the provider's parts do not decode. */
const malformed = (method: Call["method"], error: ParseResult.ParseError): AiError.AiError =>
  AiError.MalformedOutput.fromParseError({ module: "LanguageModel", method, error })

const textFormat: LanguageModel.ProviderOptions["responseFormat"] = { type: "text" }

const direct = (
  made: LanguageModel.Service,
  respond: (request: Request, method: Call["method"]) => Effect.Effect<RenderedReply, AiError.AiError>
): LanguageModel.Service => {
  const withTransformer = Effect.map(Effect.serviceOption(Telemetry.CurrentSpanTransformer), Option.isSome)

  const generateText = (options: Options) =>
    Effect.flatMap(withTransformer, (transformed) =>
      transformed || needsMake(options)
        ? made.generateText(options)
        : Effect.useSpan(
          "LanguageModel.generateText",
          {
            captureStackTrace: false,
            attributes: { concurrency: options.concurrency, toolChoice: options.toolChoice }
          },
          (span) =>
            Effect.suspend(() => {
              const { decoders, request } = prepare(options, textFormat)
              return Effect.flatMap(respond(request, "generateText"), (rendered) => decoders.parts(toParts(rendered)))
            }).pipe(
              Effect.map((content) => new LanguageModel.GenerateTextResponse(content)),
              Effect.mapError((error) => ParseResult.isParseError(error) ? malformed("generateText", error) : error),
              Effect.withParentSpan(span)
            )
        ))

  // The span is `LanguageModel.make`'s, ended once the reply is rendered rather than when its stream ends: a scripted
  // reply is whole at once. The stream is one channel that writes the reply's parts as one chunk: a caller pulling
  // it runs a third of the runtime's steps a stream built with `Stream.unwrap` and `Stream.fromIterable` costs.
  const streamText = (options: Options) =>
    Stream.fromChannel(Channel.unwrap(Effect.flatMap(withTransformer, (transformed) =>
      transformed || needsMake(options)
        ? Effect.succeed(Stream.toChannel(made.streamText(options)))
        : Effect.useSpan("LanguageModel.streamText", {
          captureStackTrace: false,
          attributes: { concurrency: options.concurrency, toolChoice: options.toolChoice }
        }, () =>
          Effect.gen(function*() {
            const { decoders, request } = prepare(options, textFormat)
            const rendered = yield* respond(request, "streamText")
            // Decoded part by part, as `LanguageModel.make` decodes the one-part chunks: a part that fails to decode
            // ends the stream after the parts before it.
            const parts: Array<Response.StreamPart<Tools>> = []
            for (const part of toStreamParts(rendered)) {
              const decoded = decoders.streamPart(part)
              if (Either.isRight(decoded)) {
                parts.push(decoded.right)
                continue
              }
              const again = yield* Effect.either(decoders.stream(Chunk.of(part)))
              if (Either.isLeft(again)) {
                return Channel.zipRight(
                  Channel.write(Chunk.unsafeFromArray(parts)),
                  Channel.fail(malformed("streamText", again.left))
                )
              }
              parts.push(...again.right)
            }
            return Channel.write(Chunk.unsafeFromArray(parts))
          })))))

  const service = { generateText, generateObject: made.generateObject, streamText }
  // `LanguageModel.Service`'s methods are generic in the caller's toolkit, as in `LanguageModel.make`'s own result.
  return service as unknown as LanguageModel.Service
}
