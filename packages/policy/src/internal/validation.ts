/** The load-time check of a policy: every issue of its default, its rules' decisions and their tool patterns. */
import { PolicyInvalid } from "@parley/core/ParleyError"
import * as Permissions from "@parley/core/Permissions"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ArgumentCondition from "../ArgumentCondition.js"
import * as ToolPattern from "../ToolPattern.js"

type PermissionPolicy = Permissions.PermissionPolicy

export const quote = (value: unknown): string => JSON.stringify(value)

const isDecision = Schema.is(Permissions.Decision)

/**
 * The issues of a policy's (or a bound's) default and rules, each path after `at` (`bounds[0].`); `toolIds`, when
 * known, are what a pattern without a namespace is compared with.
 */
const issuesOf = (
  policy: { readonly default: Permissions.Decision; readonly rules: ReadonlyArray<Permissions.PermissionRule> },
  at: string,
  toolIds: ReadonlyArray<string> | undefined
): Array<string> => {
  const issues: Array<string> = []
  if (!isDecision(policy.default)) {
    issues.push(`${at}default ${quote(policy.default)} is not "allow", "deny" or "ask"`)
  }
  policy.rules.forEach((rule, index) => {
    if (!isDecision(rule.decision)) {
      issues.push(`${at}rules[${index}]: decision ${quote(rule.decision)} is not "allow", "deny" or "ask"`)
    }
    if (rule.tools.length === 0) {
      issues.push(`${at}rules[${index}]: no tool patterns, so the rule matches nothing`)
    }
    rule.tools.forEach((pattern, position) => {
      const parsed = ToolPattern.parse(pattern, { toolIds })
      if (Result.isFailure(parsed)) {
        issues.push(`${at}rules[${index}].tools[${position}] ${parsed.failure}`)
      }
    })
    if (rule.approvers !== undefined) {
      if (rule.decision !== "ask") {
        issues.push(
          `${at}rules[${index}]: approvers say who may answer an approval, and a rule deciding ${
            quote(rule.decision)
          } opens none`
        )
      } else if (rule.approvers.roles.length === 0 && rule.approvers.principals.length === 0) {
        issues.push(`${at}rules[${index}]: approvers name no role and no principal, so nobody could answer`)
      }
    }
    ;(rule.when ?? []).forEach((condition, position) => {
      for (const issue of ArgumentCondition.issues(condition)) {
        issues.push(`${at}rules[${index}].when[${position}] ${issue}`)
      }
    })
  })
  return issues
}

const allIssuesOf = (policy: PermissionPolicy, toolIds: ReadonlyArray<string> | undefined): Array<string> => [
  ...issuesOf(policy, "", toolIds),
  ...(policy.bounds ?? []).flatMap((bound, index) => issuesOf(bound, `bounds[${index}] (${bound.by}) `, toolIds))
]

export const checked = (
  policy: PermissionPolicy,
  method: string,
  earlier: ReadonlyArray<string> = [],
  toolIds?: ReadonlyArray<string>
): Effect.Effect<PermissionPolicy, PolicyInvalid> => {
  const issues = [...earlier, ...allIssuesOf(policy, toolIds)]
  return issues.length === 0
    ? Effect.succeed(policy)
    : Effect.fail(new PolicyInvalid({ module: "PermissionPolicy", method, issues }))
}
