/**
 * The check a definition (and each of its subagents') passes before a session of it starts: its wire form, its
 * policy, its tools and connectors, its model; policy warnings are logged. Once per definition value.
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import { AgentSpec as AgentSpecSchema, childSpec, hasSubagentTools } from "@parley/core/AgentSpec"
import type { AgentInvalid } from "@parley/core/ParleyError"
import { PolicyInvalid } from "@parley/core/ParleyError"
import type { ToolSpec } from "@parley/core/ToolSpec"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as PolicyWarning from "@parley/policy/PolicyWarning"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import type * as Connectors from "../Connectors.js"
import type * as Models from "../Models.js"
import { invalid, resolveTools } from "./agentTools.js"
import * as Builtins from "./builtins.js"

/** A message with the value it is about, when the issue reports it and the message does not say it already. */
const withActual = (message: string, issue: SchemaIssue.Issue): string =>
  SchemaIssue.hasInput(issue) && !message.includes(", got ")
    ? `${message}, actual ${JSON.stringify(issue.input)}`
    : message

/** Each issue of a definition that does not decode: where, what it expects, and the value found there. */
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => withActual(SchemaIssue.defaultLeafHook(issue), issue),
  checkHook: (issue) => {
    const message = SchemaIssue.defaultCheckHook(issue)
    return message === undefined ? undefined : withActual(message, issue)
  }
})

const describeIssues = (error: Schema.SchemaError): Array<string> =>
  formatIssues(error.issue).issues.map((issue) =>
    issue.path === undefined || issue.path.length === 0
      ? issue.message
      : `${issue.path.map(String).join(".")}: ${issue.message}`
  )

export const make = (models: Models.Service, connectors: Connectors.Service) => {
  /** Definitions already checked: a program that starts many sessions of one agent pays the check once. */
  const validated = new WeakSet<AgentSpec>()

  /** Checks a definition (and its subagents') before anything runs. */
  const validate = (agent: AgentSpec): Effect.Effect<void, AgentInvalid | PolicyInvalid> =>
    validated.has(agent) ? Effect.void : Effect.tap(check(agent, true), () => Effect.sync(() => validated.add(agent)))

  /**
   * The tool ids an agent and its subagents (at any depth) can call — their own tools, the builtins of those with
   * subagents, the tools of the connectors they declare — and the declared connectors whose tools are not known.
   */
  const callable = (
    agent: AgentSpec,
    parameters: Map<string, ToolSpec["parameters"]> = new Map(),
    pending: Set<string> = new Set()
  ) => {
    // The first spec of an id wins its parameters: a subagent's tool sharing an id with the root's is the same tool.
    const add = (spec: ToolSpec) => {
      if (!parameters.has(spec.id)) parameters.set(spec.id, spec.parameters)
    }
    for (const spec of agent.tools) add(spec)
    for (const source of agent.connectors) {
      const connector = connectors.get(source)
      if (Option.isSome(connector) && connector.value.tools.length > 0) {
        for (const tool of connector.value.tools) add(tool.spec)
      } else {
        pending.add(source)
      }
    }
    if (hasSubagentTools(agent) && agent.subagents.length > 0) {
      for (const spec of Builtins.specs(agent)) add(spec)
    }
    for (const child of agent.subagents) callable(child, parameters, pending)
    return {
      toolIds: [...parameters.keys()].sort(),
      parameters: Object.fromEntries(parameters),
      pendingSources: [...pending]
    }
  }

  /** `ownPolicy`: the agent declares its policy (a subagent without one inherits its parent's, checked there). */
  const check = (agent: AgentSpec, ownPolicy: boolean): Effect.Effect<void, AgentInvalid | PolicyInvalid> =>
    Effect.gen(function*() {
      // A round trip through the wire form checks every field, also of values built without validation.
      yield* Schema.encodeEffect(AgentSpecSchema)(agent, { reportInput: true }).pipe(
        Effect.flatMap((encoded) => Schema.decodeUnknownEffect(AgentSpecSchema)(encoded, { reportInput: true })),
        Effect.mapError((error) => invalid(agent, describeIssues(error)))
      )
      // What the tree can call: a pattern without a namespace (`get_location`) is refused with the closest of them.
      const tools = ownPolicy ? callable(agent) : undefined
      if (agent.permissions !== undefined) yield* Policy.validate(agent.permissions, { toolIds: tools?.toolIds })
      yield* Effect.fromResult(resolveTools(agent, connectors))
      if (agent.permissions !== undefined && tools !== undefined) {
        // A rule naming a tool the tree cannot call decides nothing: almost always a typo, refused with the closest id;
        // a condition on a field the tool does not have never holds, refused with the closest field.
        const found = Policy.checkTools(agent.permissions, { agent: agent.name, ...tools })
        yield* Effect.forEach(found.warnings, (warning) => Effect.logWarning(`Agent ${agent.name}: ${warning}`))
        if (found.issues.length > 0) {
          return yield* new PolicyInvalid({ module: "Agent", method: "checkPolicy", issues: found.issues })
        }
      }
      yield* models.resolve(agent)
      if (agent.permissions !== undefined) {
        const warnings = PolicyWarning.check(agent.permissions, {
          agent: agent.name,
          hasSubagents: hasSubagentTools(agent) && agent.subagents.length > 0
        })
        yield* Effect.forEach(warnings, (warning) => Effect.logWarning(PolicyWarning.message(warning)))
      }
      yield* Effect.forEach(
        agent.subagents,
        (child) => check(childSpec(agent, child), child.permissions !== undefined),
        { discard: true }
      )
    })

  return validate
}
