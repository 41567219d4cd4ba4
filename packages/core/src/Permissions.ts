/**
 * The serialisable data of a permission policy: a `default` decision and ordered rules over stable tool ids.
 * It is part of the agent definition (`AgentSpec`); `@parley/policy` gives it its meaning (patterns, evaluation,
 * validation, warnings).
 *
 * @example
 * ```ts
 * import { Permissions } from "@parley/core"
 *
 * const rules = new Permissions.PermissionPolicy({
 *   default: "allow",
 *   rules: [new Permissions.PermissionRule({ tools: ["client.get_location"], decision: "ask" })]
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { NonNegativeInt, withDefault } from "./internal/schemaFields.js"

/**
 * What a policy says about a tool call.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Decision = Schema.Literals(["allow", "deny", "ask"])

/**
 * @since 0.1.0
 * @category Models
 */
export type Decision = typeof Decision.Type

/**
 * A rule: the tool id patterns it matches (exact ids, or `*` within one dotted segment) and its decision.
 * `editable: false` (on an `ask` rule) refuses approvals that change the call's arguments
 * (`AllowApproval({ arguments })`): the person may allow or deny the call as the model made it, nothing else.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class PermissionRule extends Schema.Class<PermissionRule>("@parley/core/PermissionRule")({
  tools: Schema.Array(Schema.String),
  decision: Decision,
  editable: Schema.optional(Schema.Boolean)
}) {}

/**
 * A policy another party set, that the agent's own may not widen: `by` names who set it (`"server"` for a server's
 * floor, `"client"` for what a caller narrowed), and it reads like a policy (first matching rule, else `default`).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class PermissionBound extends Schema.Class<PermissionBound>("@parley/core/PermissionBound")({
  by: Schema.String.check(Schema.isNonEmpty()),
  default: Decision,
  rules: withDefault(Schema.Array(PermissionRule), () => [])
}) {}

/**
 * A permission policy: the first rule that matches a tool id decides; otherwise `default` does. With `bounds`, a
 * call's decision is the strictest of the policy's and each bound's (`deny` over `ask` over `allow`): a bound can
 * only make the agent ask or refuse more, never less.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class PermissionPolicy extends Schema.Class<PermissionPolicy>("@parley/core/PermissionPolicy")({
  default: Decision,
  rules: withDefault(Schema.Array(PermissionRule), () => []),
  bounds: Schema.optional(Schema.Array(PermissionBound))
}) {}

/**
 * The rule that decided an evaluation: its index in `rules`, the pattern that matched, and the rule; `bound` names
 * the `PermissionBound` it is a rule of (`by`), when it is not the policy's own.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class RuleMatched
  extends Schema.TaggedClass<RuleMatched>("@parley/core/Permissions/RuleMatched")("RuleMatched", {
    index: NonNegativeInt,
    pattern: Schema.String,
    rule: PermissionRule,
    bound: Schema.optional(Schema.String)
  })
{}

/**
 * No rule matched: the policy's `default` decided (a bound's, named by `bound`, when it was stricter).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class DefaultDecision
  extends Schema.TaggedClass<DefaultDecision>("@parley/core/Permissions/DefaultDecision")("DefaultDecision", {
    bound: Schema.optional(Schema.String)
  })
{}

/**
 * What decided an evaluation (and, in an approval request, what asked).
 *
 * @since 0.1.0
 * @category Models
 */
export type DecidedBy = RuleMatched | DefaultDecision

/**
 * @since 0.1.0
 * @category Schemas
 */
export const DecidedBy: Schema.Union<readonly [typeof RuleMatched, typeof DefaultDecision]> = Schema.Union([
  RuleMatched,
  DefaultDecision
])
