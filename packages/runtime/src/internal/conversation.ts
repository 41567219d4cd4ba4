import * as Prompt from "@effect/ai/Prompt"
import type { TurnEvent } from "@parley/core/TurnEvent"

/**
 * Derives the conversation sent to the model from a session's log: each turn's input is a user message, each model
 * step's text and tool calls an assistant message, the tool results a tool message.
 */
export const fromLog = (instructions: string, events: ReadonlyArray<TurnEvent>): Prompt.Prompt => {
  const messages: Array<Prompt.Message> = []
  if (instructions.length > 0) messages.push(Prompt.systemMessage({ content: instructions }))
  let assistant: Array<Prompt.AssistantMessagePart> | undefined
  let tool: Array<Prompt.ToolMessagePart> | undefined
  const flush = () => {
    if (assistant !== undefined) messages.push(Prompt.assistantMessage({ content: assistant }))
    if (tool !== undefined) {
      // Results are logged as calls finish; the model gets them in the order of its calls.
      const order = (assistant ?? []).flatMap((part) => (part.type === "tool-call" ? [part.id] : []))
      tool.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id))
      messages.push(Prompt.toolMessage({ content: tool }))
    }
    assistant = undefined
    tool = undefined
  }
  for (const event of events) {
    switch (event._tag) {
      case "TurnStarted": {
        flush()
        messages.push(Prompt.userMessage({ content: [Prompt.makePart("text", { text: event.input })] }))
        break
      }
      case "MessageCompleted": {
        if (tool !== undefined) flush()
        assistant ??= []
        if (event.text.length > 0) assistant.push(Prompt.makePart("text", { text: event.text }))
        break
      }
      case "ToolCallStarted": {
        if (tool !== undefined) flush()
        assistant ??= []
        assistant.push(
          Prompt.makePart("tool-call", {
            id: event.toolCallId,
            name: event.name,
            params: event.arguments,
            providerExecuted: false
          })
        )
        break
      }
      case "ToolCallCompleted": {
        tool ??= []
        tool.push(
          Prompt.makePart("tool-result", {
            id: event.toolCallId,
            name: event.name,
            isFailure: event.isFailure,
            result: event.result,
            providerExecuted: false
          })
        )
        break
      }
      default:
        break
    }
  }
  flush()
  return Prompt.fromMessages(messages)
}
