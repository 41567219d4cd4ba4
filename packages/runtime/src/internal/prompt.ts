/**
 * What a model step sends: the session's conversation (kept incrementally by `TreeState`) as an `effect/ai` prompt,
 * and the agent's tools as a toolkit whose calls `effect/ai` never executes (the engine runs them). Both are built
 * once: a message once per message, a toolkit once per agent definition.
 */
import type { ToolSpec } from "@parley/core/ToolSpec"
import type * as TreeState from "@parley/log/TreeState"
import * as Prompt from "effect/ai/Prompt"
import * as Tool from "effect/ai/Tool"
import type * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import type { ResolvedTool } from "./agentTools.js"

const messages = new WeakMap<TreeState.Message, Prompt.Message>()

const toPrompt = (message: TreeState.Message): Prompt.Message => {
  switch (message.role) {
    case "user":
      return Prompt.userMessage({ content: [Prompt.makePart("text", { text: message.text })] })
    case "assistant":
      return Prompt.assistantMessage({
        content: [
          ...message.reasoning.map((reasoning) =>
            // The provider's metadata goes back as its options (e.g. Mistral's thinking marker).
            Prompt.makePart("reasoning", {
              text: reasoning.text,
              options: reasoning.metadata as Prompt.ProviderOptions
            })
          ),
          ...(message.text.length > 0 ? [Prompt.makePart("text", { text: message.text })] : []),
          ...message.toolCalls.map((call) =>
            Prompt.makePart("tool-call", { id: call.id, name: call.name, params: call.params, providerExecuted: false })
          )
        ]
      })
    case "tool":
      return Prompt.toolMessage({
        content: message.results.map((result) =>
          Prompt.makePart("tool-result", {
            id: result.id,
            name: result.name,
            isFailure: result.isFailure,
            result: result.result,
            providerExecuted: false
          })
        )
      })
  }
}

const cached = (message: TreeState.Message): Prompt.Message => {
  let prompt = messages.get(message)
  if (prompt === undefined) {
    prompt = toPrompt(message)
    messages.set(message, prompt)
  }
  return prompt
}

const systems = new Map<string, Prompt.Message>()

/** The prompt of a model step: the agent's instructions, then the session's conversation. */
export const promptOf = (instructions: string, conversation: ReadonlyArray<TreeState.Message>): Prompt.Prompt => {
  const system: Array<Prompt.Message> = []
  if (instructions.length > 0) {
    let message = systems.get(instructions)
    if (message === undefined) {
      message = Prompt.systemMessage({ content: instructions })
      if (systems.size < 1_000) systems.set(instructions, message)
    }
    system.push(message)
  }
  return Prompt.fromMessages([...system, ...conversation.map(cached)])
}

/**
 * An `effect/ai` tool described only by the JSON Schema of a `ToolSpec` (it needs a top-level `type`): a dynamic
 * tool, whose parameters the provider is given as that JSON Schema.
 */
const toAiTool = (name: string, spec: ToolSpec) =>
  Tool.dynamic(name, { description: spec.description, parameters: { type: "object", ...spec.parameters } })

type AiToolkit = Toolkit.WithHandler<Record<string, ReturnType<typeof toAiTool>>>

const toolkits = new WeakMap<ReadonlyMap<string, ResolvedTool>, AiToolkit>()

/**
 * A toolkit whose calls are never executed by `effect/ai` (`disableToolCallResolution`), nor approved by it (none of
 * its tools has `needsApproval`: Parley's permission policy decides): the engine runs them.
 */
export const toolkitOf = (tools: ReadonlyMap<string, ResolvedTool>): AiToolkit => {
  let toolkit = toolkits.get(tools)
  if (toolkit === undefined) {
    const made: Record<string, ReturnType<typeof toAiTool>> = {}
    for (const [name, tool] of tools) made[name] = toAiTool(name, tool.spec)
    toolkit = {
      tools: made,
      handle: (name) => Effect.die(`the engine runs tool calls itself (${String(name)})`)
    }
    toolkits.set(tools, toolkit)
  }
  return toolkit
}
