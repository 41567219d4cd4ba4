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

// =============================================================================
// Conditions on a call's arguments
// =============================================================================

/**
 * The value at `pointer` (a JSON pointer into the call's arguments, RFC 6901: `/to`, `/recipients/0`, `""` for the
 * whole arguments) equals `value`, as JSON (objects key by key, arrays item by item).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Equals extends Schema.TaggedClass<Equals>("@parley/core/Permissions/Equals")("Equals", {
  pointer: Schema.String,
  value: Schema.Json
}) {}

/**
 * The value at `pointer` is a string that matches `pattern`, where `*` stands for any run of characters (none
 * included) and every other character for itself: `*@corp.com`, `reports/*.pdf`. The whole string must match.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Glob extends Schema.TaggedClass<Glob>("@parley/core/Permissions/Glob")("Glob", {
  pointer: Schema.String,
  pattern: Schema.String
}) {}

/**
 * The value at `pointer` is a number within `min` and `max` (both inclusive; at least one is given).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Bound extends Schema.TaggedClass<Bound>("@parley/core/Permissions/Bound")("Bound", {
  pointer: Schema.String,
  min: Schema.optional(Schema.Finite),
  max: Schema.optional(Schema.Finite)
}) {}

/**
 * A condition on a call's arguments: what a rule's `when` and a scoped grant (`rememberWhen`) hold to. `@parley/policy`'s
 * `ArgumentCondition` evaluates them and checks them against a tool's parameter schema.
 *
 * @since 0.1.0
 * @category Models
 */
export type ArgumentCondition = Equals | Glob | Bound

/**
 * @since 0.1.0
 * @category Schemas
 */
export const ArgumentCondition: Schema.Union<readonly [typeof Equals, typeof Glob, typeof Bound]> = Schema.Union([
  Equals,
  Glob,
  Bound
])

// =============================================================================
// Who may answer
// =============================================================================

/**
 * Who may answer the approvals a rule opens: a principal holding one of `roles` (an API key's roles, or the roles a
 * trusted in-process caller gives), or one named in `principals` (an API key's id, a program's label, a handler's
 * name). Anyone else's answer fails with `NotAllowedToAnswer` and leaves the approval open. Without `approvers`,
 * anyone who may reach the callback may answer it.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Approvers extends Schema.Class<Approvers>("@parley/core/Permissions/Approvers")({
  roles: withDefault(Schema.Array(Schema.String), () => []),
  principals: withDefault(Schema.Array(Schema.String), () => [])
}) {}

// =============================================================================
// Rules and policies
// =============================================================================

/**
 * A rule: the tool id patterns it matches (exact ids, or `*` within one dotted segment) and its decision.
 * `when` (optional) narrows it to the calls whose arguments meet every one of its conditions: a call that does not
 * is decided by the rules after it (or the default). `approvers` (on an `ask` rule) says who may answer the
 * approvals it opens (see `Approvers`). `editable: false` (on an `ask` rule) refuses approvals that
 * change the call's arguments (`AllowApproval({ arguments })`): the person may allow or deny the call as the model
 * made it, nothing else.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class PermissionRule extends Schema.Class<PermissionRule>("@parley/core/PermissionRule")({
  tools: Schema.Array(Schema.String),
  decision: Decision,
  when: Schema.optional(Schema.Array(ArgumentCondition)),
  approvers: Schema.optional(Approvers),
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
 * The rule that decided an evaluation: its index in `rules`, the pattern that matched, and the rule; `when`, the
 * conditions on the arguments that held (the rule's own, when it has any); `bound` names the `PermissionBound` it
 * is a rule of (`by`), when it is not the policy's own.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class RuleMatched
  extends Schema.TaggedClass<RuleMatched>("@parley/core/Permissions/RuleMatched")("RuleMatched", {
    index: NonNegativeInt,
    pattern: Schema.String,
    rule: PermissionRule,
    when: Schema.optional(Schema.Array(ArgumentCondition)),
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
