/** A policy checked against the tools its agent can call (re-exported by `PermissionPolicy`). */
import type * as Permissions from "@parley/core/Permissions"
import * as Suggestion from "@parley/core/Suggestion"
import * as Result from "effect/Result"
import * as ArgumentCondition from "../ArgumentCondition.js"
import * as ToolPattern from "../ToolPattern.js"
import { quote } from "./validation.js"

type PermissionPolicy = Permissions.PermissionPolicy

/**
 * The tools a policy is checked against (`checkTools`): the ids an agent — with its subagents, their builtins and
 * the connectors they declare — can call, the parameter JSON Schema of each (by id, for the rules' conditions), and
 * the connector sources whose tool lists are not known yet.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Callable {
  readonly agent: string
  readonly toolIds: ReadonlyArray<string>
  /** The parameter JSON Schema of each tool id: conditions on arguments are checked against it. */
  readonly parameters?: Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined
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
 * A segment of an id in the shape of a pattern's segment: the pattern's own when it matches; for a segment with one
 * `*` (`sned_*`), the id's segment with as many characters kept on each side of the `*` (`send_email` → `send_*`);
 * else the id's segment.
 */
const reshaped = (own: string, segment: string): string => {
  if (!own.includes("*")) return segment
  if (segmentMatches(own, segment)) return own
  const parts = own.split("*")
  if (parts.length !== 2 || parts[0].length + parts[1].length > segment.length) return segment
  return `${segment.slice(0, parts[0].length)}*${segment.slice(segment.length - parts[1].length)}`
}

/**
 * The pattern closest to a wildcard `pattern` that matches one of `toolIds`, with the id it matches: each id written
 * in the pattern's shape (`reshaped`, segment by segment: `connector.gmial.*` against `connector.gmail.latest_email`
 * gives `connector.gmail.*`, `client.sned_*` against `client.send_email` gives `client.send_*`), the closest of those
 * by edit distance, if it is close enough to be a typo.
 */
const closestWildcard = (
  pattern: ToolPattern.ToolPattern,
  toolIds: ReadonlyArray<string>
): { readonly pattern: string; readonly id: string } | undefined => {
  const candidates = new Map<string, string>()
  for (const id of toolIds) {
    const segments = id.split(".")
    if (segments.length !== pattern.segments.length) continue
    const shaped = segments.map((segment, i) => reshaped(pattern.segments[i], segment)).join(".")
    if (!candidates.has(shaped)) candidates.set(shaped, id)
  }
  const best = Suggestion.closest(pattern.source, candidates.keys())
  return best === undefined ? undefined : { pattern: best, id: candidates.get(best)! }
}

/** A segment of a pattern matches a segment of an id (`*` a run of segment characters). */
const segmentMatches = (own: string, segment: string): boolean =>
  new RegExp(`^${own.split("*").join("[A-Za-z0-9_-]*")}$`).test(segment)

/**
 * Checks a (valid) policy against the tools its agent can call. A rule pattern that matches no callable tool is an
 * issue — almost always a typo that would otherwise silently decide nothing: an exact id (`client.get_locaton`) is
 * named with the closest tool id ("did you mean client.get_location?"), a wildcard (`connector.gmial.*`, `agents.*`
 * on an agent without subagents) with the closest pattern that matches one ("did you mean connector.gmail.*?"). A
 * pattern under a connector whose tools are not known yet (`pendingSources`) is a warning, not an issue. A rule's
 * conditions (`when`) are checked against the parameter schema of every tool its patterns match
 * (`ArgumentCondition.checkParameters`): a field the tool does not have, or a type it does not take, is an issue.
 *
 * @since 0.1.0
 * @category Utils
 */
export const checkTools = (policy: PermissionPolicy, callable: Callable): ToolCheck => {
  const issues: Array<string> = []
  const warnings: Array<string> = []
  const pending = new Set(callable.pendingSources ?? [])
  policy.rules.forEach((rule, index) => {
    const matched = new Set<string>()
    rule.tools.forEach((pattern, position) => {
      const parsed = ToolPattern.parse(pattern)
      if (Result.isFailure(parsed)) return
      const ids = callable.toolIds.filter((id) => ToolPattern.matches(parsed.success, id))
      for (const id of ids) matched.add(id)
      if (ids.length > 0) return
      const where = `rules[${index}].tools[${position}] ${quote(pattern)}`
      const source = parsed.success.segments[1]
      const waiting = parsed.success.namespace === "connector"
        ? [...pending].filter((pendingSource) => segmentMatches(source, pendingSource))
        : []
      if (waiting.length > 0) {
        warnings.push(
          `${where}: the tools of connector ${waiting.join(", ")} are not known yet, so this pattern is not checked ` +
            `against them`
        )
        return
      }
      const none = callable.toolIds.length === 0
        ? " (it has none)"
        : ` (its tools: ${callable.toolIds.join(", ")})`
      if (parsed.success.exact) {
        const closest = closestTool(pattern, callable.toolIds)
        issues.push(
          `${where} matches no tool agent ${quote(callable.agent)} can call` +
            (closest === undefined ? none : `; did you mean ${closest}?`)
        )
        return
      }
      const closest = closestWildcard(parsed.success, callable.toolIds)
      issues.push(
        `${where} matches no tool agent ${quote(callable.agent)} can call` +
          (closest === undefined ? none : `; did you mean ${closest.pattern} (${closest.id})?`)
      )
    })
    const parameters = callable.parameters
    if (rule.when === undefined || parameters === undefined) return
    rule.when.forEach((condition, position) => {
      for (const id of matched) {
        const schema = parameters[id]
        if (schema === undefined) continue
        for (const issue of ArgumentCondition.checkParameters(condition, schema)) {
          issues.push(`rules[${index}].when[${position}] (${id}) ${issue}`)
        }
      }
    })
  })
  return { issues, warnings }
}
