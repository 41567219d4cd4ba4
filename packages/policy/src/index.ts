/**
 * Conditions on a call's arguments: what a rule's `when` and a scoped grant hold to, evaluated and checked.
 *
 * @since 0.1.0
 */
export * as ArgumentCondition from "./ArgumentCondition.js"

/**
 * Permission policies: constructors, the load-time check and evaluation.
 *
 * @since 0.1.0
 */
export * as PermissionPolicy from "./PermissionPolicy.js"

/**
 * Warnings about a permission policy, found when an agent is defined.
 *
 * @since 0.1.0
 */
export * as PolicyWarning from "./PolicyWarning.js"

/**
 * Tool patterns: what the `tools` of a permission rule say, compiled and checked against the stable tool ids.
 *
 * @since 0.1.0
 */
export * as ToolPattern from "./ToolPattern.js"
