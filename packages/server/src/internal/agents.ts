/**
 * Which definition a session runs: the server owns the agents it serves. A client names one (the `name` of the
 * definition it posts); the server runs its own definition of that name, and the client's `permissions` can only
 * narrow it (a bound by `"client"`: ask or refuse more, never less). A definition the server does not serve is
 * refused, unless the server accepts its tenants' definitions (`acceptDefinitions`); then it runs as posted, under the
 * server's floor (`policyFloor`, a bound by `"server"` on every policy of the tree).
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import { AgentInvalid } from "@parley/core/ParleyError"
import type { PermissionPolicy } from "@parley/core/Permissions"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as Effect from "effect/Effect"

export interface Ownership {
  /** The agents the server serves, by name. */
  readonly served: ReadonlyArray<AgentSpec>
  /** Whether a tenant may run a definition of its own (one the server does not serve). */
  readonly acceptDefinitions: boolean
  /** The policy no accepted definition may widen (none: the definition's own policy). */
  readonly policyFloor: PermissionPolicy | undefined
}

/** Every policy of the tree bounded by `floor`: the root's (none is "allow all"), and each subagent's own. */
const underFloor = (agent: AgentSpec, floor: PermissionPolicy, root: boolean): AgentSpec => ({
  ...agent,
  // A subagent without a policy of its own inherits its parent's, which is bounded already.
  permissions: root || agent.permissions !== undefined
    ? Policy.bounded(agent.permissions, "server", floor)
    : undefined,
  subagents: agent.subagents.map((child) => underFloor(child, floor, false))
})

const refused = (posted: AgentSpec, served: ReadonlyArray<AgentSpec>) => {
  const names = served.map((agent) => agent.name)
  const closest = Policy.closestTool(posted.name, names)
  return new AgentInvalid({
    module: "ParleyServer",
    method: "createSession",
    agent: posted.name,
    issues: [
      names.length === 0
        ? "this server serves no agents and runs no definitions of its callers"
        : `this server runs only the agents it serves (${names.join(", ")}), not definitions of its callers` +
          (closest === undefined ? "" : `: did you mean ${closest}?`)
    ]
  })
}

/** The definition a session of `posted` runs on this server, or why it runs none. */
export const resolve = (ownership: Ownership, posted: AgentSpec): Effect.Effect<AgentSpec, AgentInvalid> => {
  const floored = (agent: AgentSpec) =>
    ownership.policyFloor === undefined ? agent : underFloor(agent, ownership.policyFloor, true)
  const served = ownership.served.find((agent) => agent.name === posted.name)
  if (served !== undefined) {
    const own = floored(served)
    return Effect.succeed(
      posted.permissions === undefined
        ? own
        : { ...own, permissions: Policy.bounded(own.permissions, "client", posted.permissions) }
    )
  }
  return ownership.acceptDefinitions ? Effect.succeed(floored(posted)) : Effect.fail(refused(posted, ownership.served))
}
