/**
 * Warnings about a permission policy, found when an agent is defined: the policy is valid, but it makes the agent
 * unable to do something it declares. They are values (a Schema tagged union), so the runtime can log them or send
 * them to a client; each carries a `message` that names the fix.
 *
 * @example
 * ```ts
 * import { PermissionPolicy, PolicyWarning } from "@parley/policy"
 *
 * const warnings = PolicyWarning.check(PermissionPolicy.denyAll, { agent: "researcher", hasSubagents: true })
 * for (const warning of warnings) {
 *   console.warn(warning.message)
 *   // Agent "researcher" declares subagents, but its permission policy denies 'agents.spawn' (...), so every
 *   // spawn is refused. Add PermissionPolicy.rule(["agents.spawn"], "allow") (or "ask") before the first rule
 *   // that matches it.
 * }
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as PermissionPolicy from "./PermissionPolicy.js"

/**
 * The agent declares subagents, but its policy evaluates `agents.spawn` to `deny`: every spawn is refused.
 * `decidedBy` says whether a rule (which one) or the default denies it.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SpawnDenied
  extends Schema.TaggedClass<SpawnDenied>("@parley/policy/PolicyWarning/SpawnDenied")("SpawnDenied", {
    agent: Schema.String,
    decidedBy: PermissionPolicy.DecidedBy,
    message: Schema.String
  })
{}

/**
 * @since 0.1.0
 * @category Models
 */
export type PolicyWarning = SpawnDenied

/**
 * @since 0.1.0
 * @category Schemas
 */
export const PolicyWarning = Schema.Union([SpawnDenied])

/**
 * @since 0.1.0
 * @category Guards
 */
export const isPolicyWarning: (u: unknown) => u is PolicyWarning = Schema.is(PolicyWarning)

/**
 * The text of a warning, naming the fix.
 *
 * @since 0.1.0
 * @category Utils
 */
export const message = (warning: PolicyWarning): string => warning.message

const spawnDeniedMessage = (agent: string, decidedBy: PermissionPolicy.DecidedBy): string => {
  const cause = decidedBy._tag === "RuleMatched"
    ? `rules[${decidedBy.index}] denies it with the pattern '${decidedBy.pattern}'`
    : `its default is "deny" and no rule matches it`
  return `Agent ${
    JSON.stringify(agent)
  } declares subagents, but its permission policy denies 'agents.spawn' (${cause}), so every spawn is refused. ` +
    `Add PermissionPolicy.rule(["agents.spawn"], "allow") (or "ask") before the first rule that matches it.`
}

/**
 * The warnings for a policy given to `agent`. Reports `SpawnDenied` when the agent declares subagents and the
 * policy evaluates `agents.spawn` to `deny`. The policy is assumed validated.
 *
 * @since 0.1.0
 * @category Utils
 */
export const check = (
  policy: PermissionPolicy.PermissionPolicy,
  options: { readonly agent: string; readonly hasSubagents: boolean }
): ReadonlyArray<PolicyWarning> => {
  const warnings: Array<PolicyWarning> = []
  if (options.hasSubagents) {
    const spawn = PermissionPolicy.evaluate(policy, "agents.spawn")
    if (spawn.decision === "deny") {
      warnings.push(
        new SpawnDenied({
          agent: options.agent,
          decidedBy: spawn.decidedBy,
          message: spawnDeniedMessage(options.agent, spawn.decidedBy)
        })
      )
    }
  }
  return warnings
}
