import type { AgentSpec } from "@parley/core/AgentSpec"
import { hasSubagentTools } from "@parley/core/AgentSpec"
import { AgentInvalid } from "@parley/core/ParleyError"
import { ToolSpec } from "@parley/core/ToolSpec"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Connectors from "../Connectors.js"
import * as Builtins from "./builtins.js"

/**
 * A tool as a turn resolves it from the name the model calls it by. A tool of the program is `client` (answered through
 * a callback) or `runtime` (its handler runs in the engine), as its stored spec says: the decision never depends on
 * which handlers this process has.
 */
export type ResolvedTool =
  | { readonly _tag: "client"; readonly spec: ToolSpec }
  | { readonly _tag: "runtime"; readonly spec: ToolSpec }
  | { readonly _tag: "builtin"; readonly spec: ToolSpec; readonly builtin: Builtins.Builtin }
  | {
    readonly _tag: "connector"
    readonly spec: ToolSpec
    readonly source: string
    /** The session connects the source (a sign-in answered by id) before the first call. */
    readonly askFirst: boolean
    readonly run: Connectors.ConnectorTool["run"]
  }

export const invalid = (agent: AgentSpec, issues: ReadonlyArray<string>) =>
  new AgentInvalid({ module: "Engine", method: "createSession", agent: agent.name, issues })

/** The tools the model sees for an agent, by the name it calls them. */
export const resolveTools = (
  agent: AgentSpec,
  connectors: Connectors.Service
): Result.Result<ReadonlyMap<string, ResolvedTool>, AgentInvalid> => {
  const tools = new Map<string, ResolvedTool>()
  const issues: Array<string> = []
  const add = (name: string, tool: ResolvedTool) => {
    if (tools.has(name)) issues.push(`two tools are named ${name}`)
    tools.set(name, tool)
  }
  for (const spec of agent.tools) add(spec.name, { _tag: spec.runsIn === "runtime" ? "runtime" : "client", spec })
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
        source,
        askFirst: connector.value.askFirst ?? true,
        run: tool.run
      })
    }
  }
  if (hasSubagentTools(agent) && agent.subagents.length > 0) {
    for (const spec of Builtins.specs(agent)) add(spec.name, { _tag: "builtin", spec, builtin: spec.builtin })
  }
  return issues.length > 0 ? Result.fail(invalid(agent, issues)) : Result.succeed(tools)
}

/**
 * The definition a session stores: every tool of the agent and of its subagents (at any depth) that `hasHandler`
 * names is marked `runsIn: "runtime"`. Tools already marked stay marked. The agent itself when nothing changes.
 */
export const markRuntimeTools = (agent: AgentSpec, hasHandler: (toolId: string) => boolean): AgentSpec => {
  let changed = false
  const tools = agent.tools.map((spec) => {
    if (spec.runsIn === "runtime" || !hasHandler(spec.id)) return spec
    changed = true
    return new ToolSpec({ ...spec, runsIn: "runtime" }, { disableChecks: true })
  })
  const subagents = agent.subagents.map((subagent) => {
    const marked = markRuntimeTools(subagent, hasHandler)
    if (marked !== subagent) changed = true
    return marked
  })
  return changed ? { ...agent, tools, subagents } : agent
}
