/** A policy checked against the tools its agent can call (re-exported by `PermissionPolicy`). */
import type * as Permissions from "@parley/core/Permissions"
import * as Result from "effect/Result"
import * as ToolPattern from "../ToolPattern.js"
import { quote } from "./validation.js"

type PermissionPolicy = Permissions.PermissionPolicy

/**
 * The tools a policy is checked against (`checkTools`): the ids an agent — with its subagents, their builtins and
 * the connectors they declare — can call, and the connector sources whose tool lists are not known yet.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Callable {
  readonly agent: string
  readonly toolIds: ReadonlyArray<string>
  /** Declared connectors whose tools are not known yet: patterns under them are only warned about. */
  readonly pendingSources?: ReadonlyArray<string> | undefined
}

/**
 * What `checkTools` found: `issues` (the policy is refused: `PolicyInvalid`) and `warnings` (logged).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ToolCheck {
  readonly issues: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
}

/**
 * The callable tool id closest to `pattern` (by edit distance), if one is close enough to be a typo; a pattern
 * without a namespace (`get_location`) is compared with the ids' names (`client.get_location`): `ToolPattern.closest`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const closestTool = (pattern: string, toolIds: ReadonlyArray<string>): string | undefined =>
  ToolPattern.closest(pattern, toolIds)

/**
 * Checks a (valid) policy against the tools its agent can call. A rule pattern without a wildcard that names no
 * callable tool is an issue — almost always a typo (`client.get_locaton`) that would otherwise silently decide
 * nothing — named with the closest tool id ("did you mean client.get_location?"). A pattern with a wildcard
 * (`client.*`, `connector.gmail.*`) that matches nothing today is allowed: it names a class of tools, and a policy
 * shared by several agents (or written before a tool is added) means it for the tools to come. An exact pattern under a
 * connector whose tools are not known yet (`pendingSources`) is a warning, not an issue.
 *
 * @since 0.1.0
 * @category Utils
 */
export const checkTools = (policy: PermissionPolicy, callable: Callable): ToolCheck => {
  const issues: Array<string> = []
  const warnings: Array<string> = []
  const pending = new Set(callable.pendingSources ?? [])
  policy.rules.forEach((rule, index) => {
    rule.tools.forEach((pattern, position) => {
      const parsed = ToolPattern.parse(pattern)
      if (Result.isFailure(parsed) || !parsed.success.exact) return
      if (callable.toolIds.some((id) => ToolPattern.matches(parsed.success, id))) return
      const where = `rules[${index}].tools[${position}] ${quote(pattern)}`
      if (parsed.success.namespace === "connector" && pending.has(parsed.success.segments[1])) {
        warnings.push(
          `${where}: the tools of connector ${parsed.success.segments[1]} are not known yet, so this pattern is not ` +
            `checked against them`
        )
        return
      }
      const closest = closestTool(pattern, callable.toolIds)
      issues.push(
        `${where} matches no tool agent ${quote(callable.agent)} can call` +
          (closest === undefined
            ? callable.toolIds.length === 0 ? " (it has none)" : ` (its tools: ${callable.toolIds.join(", ")})`
            : `; did you mean ${closest}?`)
      )
    })
  })
  return { issues, warnings }
}
