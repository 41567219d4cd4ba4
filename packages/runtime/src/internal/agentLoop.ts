import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { ModelFailure } from "@parley/core/ParleyError"
import type { ToolSpec } from "@parley/core/ToolSpec"
import { MessageCompleted, MessageDelta, ToolCallStarted } from "@parley/core/TurnEvent"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Broker } from "./callbacks.js"
import * as Callbacks from "./callbacks.js"
import * as Conversation from "./conversation.js"
import { append } from "./log.js"
import type { Draft, ResolvedTool, TurnContext } from "./state.js"
import * as ToolExecution from "./toolExecution.js"

const AnyParameters = Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/** An `@effect/ai` tool described only by the JSON Schema of a `ToolSpec` (it needs a top-level `type`). */
const toAiTool = (name: string, spec: ToolSpec) =>
  Tool.make(name, { description: spec.description }).setParameters(
    AnyParameters.annotations({ jsonSchema: { type: "object", ...spec.parameters } })
  )

/** A toolkit whose calls are never executed by `@effect/ai`: the engine runs them (`disableToolCallResolution`). */
export const toolkitOf = (tools: ReadonlyMap<string, ResolvedTool>) => {
  const toolkit = Toolkit.make(...[...tools].map(([name, tool]) => toAiTool(name, tool.spec)))
  return {
    tools: toolkit.tools,
    handle: (name: string) => Effect.die(`the engine runs tool calls itself (${name})`)
  } as unknown as Toolkit.WithHandler<Record<string, ReturnType<typeof toAiTool>>>
}

/**
 * One turn's agent loop: derive the prompt from the log, stream the model (appending `MessageDelta`s), run the
 * tool calls concurrently, append their results, and loop until the model answers without tool calls. Returns the
 * final text.
 */
export const run = (broker: Broker, ctx: TurnContext): Effect.Effect<string, ModelFailure> =>
  Effect.gen(function*() {
    const sessionId = ctx.session.session.sessionId
    const agent = ctx.session.session.agent
    const toolkit = toolkitOf(ctx.tools)
    const ids = { sessionId, turnId: ctx.turnId }
    while (true) {
      const events = yield* broker.store.read(sessionId, 0)
      const prompt = Conversation.fromLog(agent.instructions, events)
      const messageId = `msg_${ctx.session.nextSeq}`
      let text = ""
      const calls: Array<ToolExecution.ToolCall> = []
      yield* ctx.model.streamText({ prompt, toolkit, disableToolCallResolution: true }).pipe(
        Stream.runForEach((part) => {
          if (part.type === "text-delta") {
            text += part.delta
            return append(broker.store, ctx.session, [
              (meta) => new MessageDelta({ ...ids, ...meta, messageId, delta: part.delta })
            ])
          }
          if (part.type === "tool-call") calls.push({ id: part.id, name: part.name, params: part.params })
          return Effect.void
        }),
        Effect.mapError((error) =>
          new ModelFailure({
            module: "Engine",
            method: "streamText",
            model: agent.model ?? "(default)",
            description: error.message,
            cause: error
          })
        )
      )
      const drafts: Array<Draft> = []
      if (text.length > 0 || calls.length === 0) {
        drafts.push((meta) => new MessageCompleted({ ...ids, ...meta, messageId, text }))
      }
      for (const call of calls) {
        const toolId = ctx.tools.get(call.name)?.spec.id ?? ("client.unknown" as ToolCallStarted["toolId"])
        drafts.push((meta) =>
          new ToolCallStarted({ ...ids, ...meta, toolCallId: call.id, toolId, name: call.name, arguments: call.params })
        )
      }
      yield* append(broker.store, ctx.session, drafts)
      if (calls.length === 0) return text
      // The loop hands its running unit to the calls: each counts as a running fiber of the tree, and the last one
      // to end hands the unit back to the loop (so the tree never looks blocked while the loop is about to go on).
      ctx.tree.active += calls.length - 1
      let remaining = calls.length
      const finish = Effect.suspend(() => (--remaining > 0 ? Callbacks.becameIdle(broker, ctx.tree) : Effect.void))
      yield* Effect.forEach(calls, (call) => ToolExecution.run(broker, ctx, call).pipe(Effect.ensuring(finish)), {
        concurrency: "unbounded",
        discard: true
      })
    }
  })
