/**
 * Wire shapes of `POST /chat/completions` (Mistral and OpenAI-compatible servers).
 *
 * Requests are plain TypeScript types (we only ever encode them). Responses and stream chunks are lenient
 * schemas: every field is optional or nullable and unknown fields (such as Mistral's padding field `p`) are
 * ignored, because servers differ in what they send.
 *
 * `MistralClient`'s public types refer to these, so none carries the JSDoc tag "internal": the build
 * (`stripInternal`) would drop them from the `.d.ts` and break the published types. The `./internal/*` export path
 * keeps them private.
 */
import * as Schema from "effect/Schema"

// =============================================================================
// Request
// =============================================================================

export type Flavour = "mistral" | "compat"

export type ContentChunk =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string } }
  | { readonly type: "document_url"; readonly document_url: string; readonly document_name?: string }

/**
 * Content chunks of an assistant message: text, and `thinking` chunks to replay the reasoning of a Mistral model
 * (spec `ThinkChunk`; tokenizers before v13 reject them).
 */
export type AssistantContentChunk =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "thinking"; readonly thinking: ReadonlyArray<{ readonly type: "text"; readonly text: string }> }

export interface ToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

export type Message =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string | ReadonlyArray<ContentChunk> }
  | {
    readonly role: "assistant"
    readonly content: string | ReadonlyArray<AssistantContentChunk> | null
    readonly tool_calls?: ReadonlyArray<ToolCall>
    readonly prefix?: boolean
  }
  | { readonly role: "tool"; readonly content: string; readonly tool_call_id: string; readonly name?: string }

export interface FunctionTool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description?: string
    readonly parameters: unknown
  }
}

export type ToolChoice = "auto" | "none" | "any" | "required" | {
  readonly type: "function"
  readonly function: { readonly name: string }
}

export type ResponseFormat =
  | { readonly type: "text" | "json_object" }
  | {
    readonly type: "json_schema"
    readonly json_schema: {
      readonly name: string
      readonly description?: string
      readonly schema: unknown
      readonly strict?: boolean
    }
  }

export interface ChatCompletionRequest {
  readonly model: string
  readonly messages: ReadonlyArray<Message>
  readonly stream?: boolean
  readonly tools?: ReadonlyArray<FunctionTool>
  readonly tool_choice?: ToolChoice
  readonly parallel_tool_calls?: boolean
  readonly response_format?: ResponseFormat
  readonly temperature?: number
  readonly top_p?: number
  readonly stop?: string | ReadonlyArray<string>
  readonly presence_penalty?: number
  readonly frequency_penalty?: number
  /** Mistral only. */
  readonly max_tokens?: number
  /** Mistral only. */
  readonly random_seed?: number
  /** Mistral only. */
  readonly safe_prompt?: boolean
  /** Mistral only. */
  readonly prompt_mode?: "reasoning"
  /** Mistral only. */
  readonly prompt_cache_key?: string
  /** Mistral: `"high"` or `"none"`; OpenAI-compatible servers: their own values. */
  readonly reasoning_effort?: string
  readonly prediction?: { readonly type: "content"; readonly content: string }
  /** OpenAI-compatible only. */
  readonly max_completion_tokens?: number
  /** OpenAI-compatible only. */
  readonly seed?: number
  /** OpenAI-compatible only (Mistral answers 422). */
  readonly stream_options?: { readonly include_usage: boolean }
  /** Server-specific extra fields, merged into the body as they are. */
  readonly [extra: string]: unknown
}

// =============================================================================
// Response
// =============================================================================

const optionalNullable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const PromptTokensDetails = Schema.Struct({ cached_tokens: optionalNullable(Schema.Number) })

export const Usage = Schema.Struct({
  prompt_tokens: optionalNullable(Schema.Number),
  completion_tokens: optionalNullable(Schema.Number),
  total_tokens: optionalNullable(Schema.Number),
  num_cached_tokens: optionalNullable(Schema.Number),
  prompt_tokens_details: optionalNullable(PromptTokensDetails),
  /** The spec's `UsageInfo` also has this spelling (`prompt_token_details`), with the same shape. */
  prompt_token_details: optionalNullable(PromptTokensDetails),
  completion_tokens_details: optionalNullable(Schema.Struct({ reasoning_tokens: optionalNullable(Schema.Number) }))
})

export type Usage = typeof Usage.Type

/** A content chunk as returned: `text`, `thinking` (reasoning) or anything else (ignored). */
export const ResponseContentChunk = Schema.Struct({
  type: Schema.String,
  text: optionalNullable(Schema.String),
  thinking: optionalNullable(Schema.Union([
    Schema.String,
    Schema.Array(Schema.Struct({ type: Schema.String, text: optionalNullable(Schema.String) }))
  ]))
})

export type ResponseContentChunk = typeof ResponseContentChunk.Type

const Content = optionalNullable(Schema.Union([Schema.String, Schema.Array(ResponseContentChunk)]))

const Arguments = Schema.Union([Schema.String, Schema.Record(Schema.String, Schema.Unknown)])

/** A tool call, whole or as a fragment (OpenAI-style streams leave out or null every field but `index`). */
export const ResponseToolCall = Schema.Struct({
  index: optionalNullable(Schema.Number),
  id: optionalNullable(Schema.String),
  type: optionalNullable(Schema.String),
  function: optionalNullable(Schema.Struct({
    name: optionalNullable(Schema.String),
    arguments: optionalNullable(Arguments)
  }))
})

export type ResponseToolCall = typeof ResponseToolCall.Type

export const ResponseMessage = Schema.Struct({
  role: optionalNullable(Schema.String),
  content: Content,
  tool_calls: optionalNullable(Schema.Array(ResponseToolCall)),
  reasoning: optionalNullable(Schema.String),
  reasoning_content: optionalNullable(Schema.String)
})

export type ResponseMessage = typeof ResponseMessage.Type

const ErrorField = optionalNullable(Schema.Unknown)

export const ChatCompletionResponse = Schema.Struct({
  id: optionalNullable(Schema.String),
  model: optionalNullable(Schema.String),
  created: optionalNullable(Schema.Number),
  choices: Schema.Array(Schema.Struct({
    index: optionalNullable(Schema.Number),
    message: ResponseMessage,
    finish_reason: optionalNullable(Schema.String)
  })),
  usage: optionalNullable(Usage)
})

export type ChatCompletionResponse = typeof ChatCompletionResponse.Type

export const ChatCompletionChunk = Schema.Struct({
  /** `"chat.completion.chunk"`, or `"error"` / `"Error"` for Mistral's error envelope sent inside a stream. */
  object: optionalNullable(Schema.String),
  id: optionalNullable(Schema.String),
  model: optionalNullable(Schema.String),
  created: optionalNullable(Schema.Number),
  choices: optionalNullable(Schema.Array(Schema.Struct({
    index: optionalNullable(Schema.Number),
    delta: optionalNullable(ResponseMessage),
    finish_reason: optionalNullable(Schema.String)
  }))),
  usage: optionalNullable(Usage),
  /** vLLM and Ollama report failures inside the stream as `{"error": {...}}`. */
  error: ErrorField
})

export type ChatCompletionChunk = typeof ChatCompletionChunk.Type
