/**
 * The check a definition (and each of its subagents') passes before a session of it starts: its wire form, its
 * policy, its tools and connectors, its model; policy warnings are logged. Once per definition value.
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import { AgentSpec as AgentSpecSchema, childSpec, hasSubagentTools } from "@parley/core/AgentSpec"
import type { AgentInvalid, PolicyInvalid } from "@parley/core/ParleyError"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as PolicyWarning from "@parley/policy/PolicyWarning"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Connectors from "../Connectors.js"
import type * as Models from "../Models.js"
import { invalid, resolveTools } from "./agentTools.js"

export const make = (models: Models.Service, connectors: Connectors.Service) => {
  /** Definitions already checked: a program that starts many sessions of one agent pays the check once. */
  const validated = new WeakSet<AgentSpec>()

  /** Checks a definition (and its subagents') before anything runs. */
  const validate = (agent: AgentSpec): Effect.Effect<void, AgentInvalid | PolicyInvalid> =>
    validated.has(agent) ? Effect.void : Effect.tap(check(agent), () => Effect.sync(() => validated.add(agent)))

  const check = (agent: AgentSpec): Effect.Effect<void, AgentInvalid | PolicyInvalid> =>
    Effect.gen(function*() {
      // A round trip through the wire form checks every field, also of values built without validation.
      yield* Schema.encode(AgentSpecSchema)(agent).pipe(
        Effect.flatMap(Schema.decodeUnknown(AgentSpecSchema)),
        Effect.mapError((error) => invalid(agent, [ParseResult.TreeFormatter.formatErrorSync(error)]))
      )
      if (agent.permissions !== undefined) yield* Policy.validate(agent.permissions)
      yield* resolveTools(agent, connectors)
      yield* models.resolve(agent)
      if (agent.permissions !== undefined) {
        const warnings = PolicyWarning.check(agent.permissions, {
          agent: agent.name,
          hasSubagents: hasSubagentTools(agent) && agent.subagents.length > 0
        })
        yield* Effect.forEach(warnings, (warning) => Effect.logWarning(PolicyWarning.message(warning)))
      }
      yield* Effect.forEach(agent.subagents, (child) => validate(childSpec(agent, child)), { discard: true })
    })

  return validate
}
