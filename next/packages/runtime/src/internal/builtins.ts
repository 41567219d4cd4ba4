import type { AgentSpec } from "@parley/core/AgentSpec"
import type { ToolId } from "@parley/core/Ids"
import { ToolAnnotations, ToolSpec } from "@parley/core/ToolSpec"

export type Builtin = "spawn" | "message" | "wait" | "interrupt"

/** The `agents.*` builtin tools of an agent with subagents, as the model sees them. */
export const specs = (agent: AgentSpec): ReadonlyArray<ToolSpec & { readonly builtin: Builtin }> => {
  const names = agent.subagents.map((subagent) => subagent.name)
  const catalogue = agent.subagents.map((subagent) =>
    `${subagent.name}: ${subagent.description ?? subagent.instructions}`
  )
  const make = (builtin: Builtin, description: string, parameters: Record<string, unknown>, readOnlyHint = false) =>
    Object.assign(
      new ToolSpec({
        id: `agents.${builtin}` as ToolId,
        name: `agents_${builtin}`,
        description,
        parameters: { type: "object", additionalProperties: false, ...parameters },
        annotations: new ToolAnnotations({ readOnlyHint })
      }),
      { builtin }
    )
  return [
    make(
      "spawn",
      `Start a subagent on a task; it runs on its own until it answers. Subagents: ${catalogue.join("; ")}.`,
      {
        properties: {
          agent: { type: "string", enum: names, description: "The subagent to start." },
          task: { type: "string", description: "What the subagent should do." }
        },
        required: ["agent", "task"]
      }
    ),
    make("message", "Send a running subagent a message (a new task or more details).", {
      properties: { sessionId: { type: "string" }, message: { type: "string" } },
      required: ["sessionId", "message"]
    }),
    make(
      "wait",
      "Wait for subagents to answer and return their results (all subagents you started, or the ones named).",
      { properties: { sessionIds: { type: "array", items: { type: "string" } } } },
      true
    ),
    make("interrupt", "Stop a running subagent.", {
      properties: { sessionId: { type: "string" } },
      required: ["sessionId"]
    })
  ]
}
