import type { AgentSpec } from "@parley/core/AgentSpec"
import { hasSubagentTools } from "@parley/core/AgentSpec"
import { AgentInvalid } from "@parley/core/ParleyError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Connectors from "../Connectors.js"
import * as Builtins from "./builtins.js"
import type { ResolvedTool, SessionRuntime } from "./state.js"

export const invalid = (agent: AgentSpec, issues: ReadonlyArray<string>) =>
  new AgentInvalid({ module: "Engine", method: "createSession", agent: agent.name, issues })

/** The tools the model sees for an agent, by the name it calls them. */
export const resolveTools = (
  agent: AgentSpec,
  connectors: Connectors.Service
): Effect.Effect<ReadonlyMap<string, ResolvedTool>, AgentInvalid> => {
  const tools = new Map<string, ResolvedTool>()
  const issues: Array<string> = []
  const add = (name: string, tool: ResolvedTool) => {
    if (tools.has(name)) issues.push(`two tools are named ${name}`)
    tools.set(name, tool)
  }
  for (const spec of agent.tools) add(spec.name, { _tag: "client", spec })
  for (const source of agent.connectors) {
    const connector = connectors.get(source)
    if (Option.isNone(connector)) {
      issues.push(`no connector named ${source}`)
      continue
    }
    for (const tool of connector.value.tools) {
      add(`${source}_${tool.spec.name}`, {
        _tag: "connector",
        spec: tool.spec,
        connector: connector.value,
        run: tool.run
      })
    }
  }
  if (hasSubagentTools(agent) && agent.subagents.length > 0) {
    for (const spec of Builtins.specs(agent)) {
      add(spec.name, { _tag: "builtin", spec, builtin: spec.builtin as "spawn" | "message" | "wait" | "interrupt" })
    }
  }
  return issues.length > 0 ? Effect.fail(invalid(agent, issues)) : Effect.succeed(tools)
}

/** A subagent without a model or a policy of its own uses its parent's. */
export const childSpec = (parent: AgentSpec, child: AgentSpec): AgentSpec => ({
  ...child,
  model: child.model ?? parent.model,
  ...(child.permissions ?? parent.permissions) === undefined
    ? {}
    : { permissions: child.permissions ?? parent.permissions }
})

export const descendants = (session: SessionRuntime): ReadonlyArray<SessionRuntime> => [
  session,
  ...session.children.flatMap(descendants)
]
