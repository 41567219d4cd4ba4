/**
 * Builds a chat-completions request body from `LanguageModel.ProviderOptions` and `MistralConfig`, with the
 * field names of the target flavour.
 */
import * as AiError from "effect/ai/AiError"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Tool from "effect/ai/Tool"
import * as Effect from "effect/Effect"
import * as SchemaAST from "effect/SchemaAST"
import { type MistralConfig, REASONING_EFFORTS } from "../MistralConfig.js"
import * as InternalPrompt from "./prompt.js"
import type * as Wire from "./wire.js"

const fail = (reason: AiError.AiErrorReason) =>
  Effect.fail(AiError.make({ module: "MistralLanguageModel", method: "makeRequest", reason }))

export const prepareTools = (
  options: LanguageModel.ProviderOptions,
  flavour: Wire.Flavour
): Effect.Effect<
  { readonly tools: ReadonlyArray<Wire.FunctionTool> | undefined; readonly tool_choice: Wire.ToolChoice | undefined },
  AiError.AiError
> =>
  Effect.gen(function*() {
    const tools: Array<Wire.FunctionTool> = []
    for (const tool of options.tools) {
      if (Tool.isProviderDefined(tool)) {
        return yield* fail(
          new AiError.ToolConfigurationError({
            toolName: tool.name,
            description: `Provider-defined tool ${tool.name} is not supported by Mistral chat completions`
          })
        )
      }
      if (flavour === "mistral" && !InternalPrompt.isValidName(tool.name)) {
        return yield* fail(
          new AiError.ToolConfigurationError({
            toolName: tool.name,
            description: `Tool name ${JSON.stringify(tool.name)} must match ^[a-zA-Z0-9_-]{1,64}$ for Mistral`
          })
        )
      }
      const description = Tool.getDescription(tool)
      tools.push({
        type: "function",
        function: {
          name: tool.name,
          ...(description === undefined ? {} : { description }),
          parameters: Tool.getJsonSchema(tool)
        }
      })
    }
    // An empty `tools` array or a `tool_choice` without tools is a 400 on vLLM: send neither.
    if (tools.length === 0) return { tools: undefined, tool_choice: undefined }

    const forced: Wire.ToolChoice = flavour === "mistral" ? "any" : "required"
    const choice = options.toolChoice
    let tool_choice: Wire.ToolChoice
    if (choice === "auto" || choice === "none") {
      tool_choice = choice
    } else if (choice === "required") {
      tool_choice = forced
    } else if ("tool" in choice) {
      tool_choice = { type: "function", function: { name: choice.tool } }
    } else {
      // `oneOf`: the tools are already filtered by `LanguageModel`.
      tool_choice = choice.mode === "required" ? forced : "auto"
    }
    return { tools, tool_choice }
  })

/**
 * Models whose tokenizer takes `thinking` chunks in assistant messages (mistral-common encodes them from tokenizer
 * v13, with the think control tokens): the models documented to answer with thinking chunks. Magistral 2506 wrapped
 * its reasoning in `<think>` tags inside the text instead, and older models' tokenizers reject the chunks.
 */
export const replaysThinkingByDefault = (model: string): boolean => {
  if (model.startsWith("magistral-")) return !model.endsWith("-2506")
  return [
    "mistral-medium-3-5",
    "mistral-medium-3",
    "mistral-medium-latest",
    "mistral-small-2603",
    "mistral-small-latest"
  ].includes(model)
}

const defined = (record: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined))

export const makeRequest = (options: {
  readonly model: string
  readonly config: MistralConfig.Service
  readonly flavour: Wire.Flavour
  readonly providerOptions: LanguageModel.ProviderOptions
  /** Turns the schema of a structured answer into the JSON Schema sent as `response_format`. */
  readonly codecTransformer: LanguageModel.CodecTransformer
}): Effect.Effect<Wire.ChatCompletionRequest, AiError.AiError> =>
  Effect.gen(function*() {
    const { config, flavour, providerOptions } = options
    const effort: unknown = config.reasoning_effort
    if (flavour === "mistral" && effort !== undefined && !REASONING_EFFORTS.some((value) => value === effort)) {
      return yield* fail(
        new AiError.InvalidRequestError({
          parameter: "reasoning_effort",
          description: `reasoning_effort must be one of ${
            REASONING_EFFORTS.map((value) => JSON.stringify(value)).join(", ")
          } for Mistral, got ${JSON.stringify(effort)} (use compat.reasoning_effort for OpenAI-compatible servers)`
        })
      )
    }
    const messages = yield* InternalPrompt.prepareMessages(providerOptions.prompt, flavour, {
      replayThinking: config.replayThinking ?? replaysThinkingByDefault(options.model)
    })
    const { tool_choice, tools } = yield* prepareTools(providerOptions, flavour)
    const format = providerOptions.responseFormat
    let response_format: Wire.ResponseFormat | undefined
    if (format.type === "json") {
      const description = SchemaAST.resolveDescription(format.schema.ast)
      const schema = yield* Effect.try({
        try: () => Tool.getJsonSchemaFromSchema(format.schema, { transformer: options.codecTransformer }),
        catch: (cause) =>
          AiError.make({
            module: "MistralLanguageModel",
            method: "makeRequest",
            reason: new AiError.UnsupportedSchemaError({
              description: cause instanceof Error ? cause.message : String(cause)
            })
          })
      })
      response_format = {
        type: "json_schema",
        json_schema: {
          name: format.objectName,
          ...(description === undefined ? {} : { description }),
          schema,
          strict: true
        }
      }
    }

    const common = {
      temperature: config.temperature,
      top_p: config.top_p,
      stop: config.stop,
      presence_penalty: config.presence_penalty,
      frequency_penalty: config.frequency_penalty,
      prediction: config.prediction
    }
    const dialect = flavour === "mistral"
      ? {
        reasoning_effort: config.reasoning_effort,
        max_tokens: config.max_tokens,
        random_seed: config.random_seed,
        safe_prompt: config.safe_prompt,
        prompt_mode: config.prompt_mode,
        prompt_cache_key: config.prompt_cache_key
      }
      : {
        reasoning_effort: config.compat?.reasoning_effort ?? config.reasoning_effort,
        max_completion_tokens: config.max_tokens,
        seed: config.random_seed
      }
    const body = defined({
      model: options.model,
      messages,
      tools,
      tool_choice,
      parallel_tool_calls: tools === undefined ? undefined : config.parallel_tool_calls,
      response_format,
      ...common,
      ...dialect,
      ...config.extraBody
    })
    return { ...body, model: options.model, messages }
  })
