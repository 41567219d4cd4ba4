/**
 * Permission policies: constructors, the load-time check and evaluation.
 *
 * The data (`PermissionPolicy { default, rules }`, `PermissionRule { tools, decision }`, `Decision`) is defined in
 * `@parley/core/Permissions`, because it is part of the serialisable agent definition, and re-exported here. A
 * policy says `allow`, `deny` or `ask` for a stable tool id: the first rule with a pattern (see `ToolPattern`) that
 * matches the id decides; when none does, `default` decides. `evaluate` also says *what* decided, as a serialisable
 * `Evaluation`, so an approval request can show it.
 *
 * @example
 * ```ts
 * import { PermissionPolicy } from "@parley/policy"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const policy = yield* PermissionPolicy.make({
 *     permissionMode: "ask",
 *     rules: [
 *       PermissionPolicy.rule(["client.get_*", "connector.gmail.latest_email"], "allow"),
 *       PermissionPolicy.rule(["connector.*.send_*"], "deny")
 *     ]
 *   })
 *   const evaluation = PermissionPolicy.evaluate(policy, "client.get_location")
 *   console.log(evaluation.decision) // "allow"
 *   console.log(evaluation.decidedBy) // RuleMatched { index: 0, pattern: "client.get_*", ... }
 *   // a malformed pattern fails with PolicyInvalid, naming the rule, the pattern and why
 *   yield* PermissionPolicy.make({ rules: [PermissionPolicy.rule(["client..x"], "allow")] }).pipe(Effect.flip)
 * })
 * ```
 *
 * @since 0.1.0
 */
import { PolicyInvalid } from "@parley/core/ParleyError"
import * as Permissions from "@parley/core/Permissions"
import * as Principal from "@parley/core/Principal"
import * as Suggestion from "@parley/core/Suggestion"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as ArgumentCondition from "./ArgumentCondition.js"
import { checked, quote } from "./internal/validation.js"
import * as ToolPattern from "./ToolPattern.js"

// ===== Schemas (re-exported from @parley/core/Permissions) =====

/**
 * What a policy says about a tool call: `allow`, `deny` or `ask`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Decision = Permissions.Decision

/**
 * @since 0.1.0
 * @category Models
 */
export type Decision = Permissions.Decision

/**
 * A rule: tool patterns and the decision for the tool ids they match.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const PermissionRule = Permissions.PermissionRule

/**
 * @since 0.1.0
 * @category Models
 */
export type PermissionRule = Permissions.PermissionRule

/**
 * A permission policy: a `default` decision and ordered rules.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const PermissionPolicy = Permissions.PermissionPolicy

/**
 * @since 0.1.0
 * @category Models
 */
export type PermissionPolicy = Permissions.PermissionPolicy

/**
 * Another party's policy that a policy may not widen (`bounds`; `bounded` adds one).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const PermissionBound = Permissions.PermissionBound

/**
 * @since 0.1.0
 * @category Models
 */
export type PermissionBound = Permissions.PermissionBound

// ===== Evaluation =====

/**
 * The rule that decided an evaluation (core's `Permissions.RuleMatched`).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const RuleMatched: typeof Permissions.RuleMatched = Permissions.RuleMatched

/**
 * @since 0.1.0
 * @category Models
 */
export type RuleMatched = Permissions.RuleMatched

/**
 * The policy's default decided (core's `Permissions.DefaultDecision`).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const DefaultDecision: typeof Permissions.DefaultDecision = Permissions.DefaultDecision

/**
 * @since 0.1.0
 * @category Models
 */
export type DefaultDecision = Permissions.DefaultDecision

/**
 * What decided an evaluation.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const DecidedBy: typeof Permissions.DecidedBy = Permissions.DecidedBy

/**
 * @since 0.1.0
 * @category Models
 */
export type DecidedBy = Permissions.DecidedBy

/**
 * The result of evaluating a policy for one tool id: the decision and what decided it.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Evaluation extends Schema.Class<Evaluation>("@parley/policy/PermissionPolicy/Evaluation")({
  decision: Decision,
  decidedBy: DecidedBy
}) {}

// ===== Constructors =====

/**
 * A rule as `make` accepts it: a `PermissionRule` or a plain object of the same shape.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RuleInput {
  readonly tools: ReadonlyArray<string>
  readonly decision: Decision
  readonly when?: ReadonlyArray<ArgumentCondition.ArgumentCondition> | undefined
  readonly approvers?: ApproversInput | undefined
  readonly editable?: boolean | undefined
}

/**
 * Who may answer the approvals of a rule, as `rule` accepts it: roles and principals (API key ids, program labels,
 * handler names), either or both.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ApproversInput {
  readonly roles?: ReadonlyArray<string> | undefined
  readonly principals?: ReadonlyArray<string> | undefined
}

/**
 * The options of `make`. `permissionMode` is shorthand for `default`; giving both with different values is an
 * error. With neither, the default is `"ask"`: a tool no rule mentions waits for an approval.
 *
 * @since 0.1.0
 * @category Models
 */
export interface MakeOptions {
  readonly default?: Decision
  readonly permissionMode?: Decision
  readonly rules?: ReadonlyArray<RuleInput>
}

/**
 * A rule deciding `decision` for the tool ids that match any of `tools` (one pattern or several). It is checked
 * when the policy is (`make`, `validate`). `when` narrows it to the calls whose arguments meet every condition
 * (`ArgumentCondition`); `approvers` (on an `ask` rule) says who may answer its approvals (roles, principals: anyone
 * else's answer is `NotAllowedToAnswer`); `editable: false` forbids approvals with edited arguments for those tools.
 *
 * @example
 * ```ts
 * import { ArgumentCondition, PermissionPolicy } from "@parley/policy"
 *
 * // email colleagues without asking; anyone else waits for an approval (the default)
 * const colleagues = PermissionPolicy.rule("client.send_email", "allow", {
 *   when: [ArgumentCondition.glob("/to", "*@corp.com")]
 * })
 * ```
 *
 * @since 0.1.0
 * @category Constructors
 */
export const rule = (
  tools: string | ReadonlyArray<string>,
  decision: Decision,
  options?: {
    readonly when?: ReadonlyArray<ArgumentCondition.ArgumentCondition> | undefined
    readonly approvers?: ApproversInput | undefined
    readonly editable?: boolean | undefined
  }
): PermissionRule =>
  new PermissionRule({
    tools: typeof tools === "string" ? [tools] : tools,
    decision,
    ...(options?.when === undefined ? {} : { when: options.when }),
    ...(options?.approvers === undefined ? {} : {
      approvers: options.approvers instanceof Permissions.Approvers
        ? options.approvers
        : new Permissions.Approvers({
          roles: options.approvers.roles ?? [],
          principals: options.approvers.principals ?? []
        }, { disableChecks: true })
    }),
    ...(options?.editable === undefined ? {} : { editable: options.editable })
  }, { disableChecks: true })

/**
 * Builds and checks a policy. Fails with `PolicyInvalid` listing every issue: `default` and `permissionMode` that
 * contradict each other, and every issue `validate` finds.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: MakeOptions = {}): Effect.Effect<PermissionPolicy, PolicyInvalid> => {
  const contradiction = options.default !== undefined && options.permissionMode !== undefined &&
      options.default !== options.permissionMode
    ? [
      `default ${quote(options.default)} contradicts permissionMode ${
        quote(options.permissionMode)
      }; permissionMode is shorthand for default, give one of them`
    ]
    : []
  const policy = new PermissionPolicy({
    default: options.default ?? options.permissionMode ?? "ask",
    rules: (options.rules ?? []).map((input) =>
      input instanceof PermissionRule
        ? input
        : rule(input.tools, input.decision, { when: input.when, approvers: input.approvers, editable: input.editable })
    )
  }, { disableChecks: true })
  return checked(policy, "make", contradiction)
}

/**
 * Every tool call is allowed.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const allowAll: PermissionPolicy = new PermissionPolicy({ default: "allow", rules: [] })

/**
 * Every tool call waits for an approval (`permissionMode: "ask"`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const askAll: PermissionPolicy = new PermissionPolicy({ default: "ask", rules: [] })

/**
 * Every tool call is refused. An agent with subagents needs a rule for `agents.spawn` (see `PolicyWarning`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const denyAll: PermissionPolicy = new PermissionPolicy({ default: "deny", rules: [] })

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Decodes a policy from its encoded form (JSON, a config file) and checks it like `validate`. Fails with
 * `PolicyInvalid` listing the decoding issues, or else every issue `validate` finds.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decodeUnknown = (input: unknown): Effect.Effect<PermissionPolicy, PolicyInvalid> =>
  Schema.decodeUnknownEffect(PermissionPolicy, { errors: "all", reportInput: true })(input).pipe(
    Effect.mapError((error) =>
      new PolicyInvalid({
        module: "PermissionPolicy",
        method: "decodeUnknown",
        issues: formatIssues(error.issue).issues.map((issue) =>
          issue.path === undefined || issue.path.length === 0
            ? issue.message
            : `${issue.path.map(String).join(".")}: ${issue.message}`
        )
      })
    ),
    Effect.flatMap((policy) => checked(policy, "decodeUnknown"))
  )

// ===== Utils =====

/**
 * What `validate` may know besides the policy: `toolIds`, the tools its agent can call. A pattern without a
 * namespace (`get_location`) is then refused with the closest of them ("did you mean client.get_location?",
 * `ToolPattern.closest`); without them, with the pattern as its shape would be namespaced.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ValidateOptions {
  readonly toolIds?: ReadonlyArray<string> | undefined
}

/**
 * The load-time check. Fails with `PolicyInvalid` listing every issue, each naming the rule and the pattern
 * (`rules[1].tools[0] "client..x": empty segment; …`): malformed patterns (empty, empty segment, `**`, bad
 * characters), unknown or missing namespaces (with "did you mean …?"), wrong segment counts, unknown `agents.<x>`
 * builtins, rules without patterns, decisions that are not `allow`, `deny` or `ask`, and conditions (`when`) with a
 * malformed pointer or a `Bound` without a range (`ArgumentCondition.issues`). What needs the agent's tools — patterns
 * that match none of them, conditions on fields a tool does not have — is `checkTools`'s.
 *
 * @since 0.1.0
 * @category Utils
 */
export const validate = (
  policy: PermissionPolicy,
  options: ValidateOptions = {}
): Effect.Effect<PermissionPolicy, PolicyInvalid> => checked(policy, "validate", [], options.toolIds)

/**
 * What the policy decides for a call of a tool id with `args` (its arguments), and what decided it: the first rule
 * with a matching pattern whose conditions (`when`) the arguments meet (`RuleMatched`, with its index, the pattern
 * and the conditions that held), or else the default (`DefaultDecision`). A rule with conditions decides nothing
 * when no arguments are given. Pure; the policy is assumed validated (a malformed pattern matches nothing).
 *
 * @example
 * ```ts
 * import { ArgumentCondition, PermissionPolicy } from "@parley/policy"
 *
 * const policy = new PermissionPolicy.PermissionPolicy({
 *   default: "ask",
 *   rules: [PermissionPolicy.rule("client.send_email", "allow", { when: [ArgumentCondition.glob("/to", "*@corp.com")] })]
 * })
 * PermissionPolicy.evaluate(policy, "client.send_email", { to: "ana@corp.com" }).decision // "allow"
 * PermissionPolicy.evaluate(policy, "client.send_email", { to: "bob@gmail.com" }).decision // "ask"
 * ```
 *
 * @since 0.1.0
 * @category Utils
 */
export const evaluate: {
  (toolId: string, args?: unknown): (policy: PermissionPolicy) => Evaluation
  (policy: PermissionPolicy, toolId: string, args?: unknown): Evaluation
} = dual(
  (args) => typeof args[0] !== "string",
  (policy: PermissionPolicy, toolId: string, args?: unknown): Evaluation => {
    let evaluation = firstMatch(policy, toolId, args, undefined)
    for (const bound of policy.bounds ?? []) {
      const other = firstMatch(bound, toolId, args, bound.by)
      if (stricter(other, evaluation)) evaluation = other
    }
    return evaluation
  }
)

/** The first rule of `rules` with a pattern that matches and conditions that hold, else the default; `bound` marks whose they are. */
const firstMatch = (
  policy: { readonly default: Decision; readonly rules: ReadonlyArray<PermissionRule> },
  toolId: string,
  args: unknown,
  bound: string | undefined
): Evaluation => {
  const owner = bound === undefined ? {} : { bound }
  for (let index = 0; index < policy.rules.length; index++) {
    const rule = policy.rules[index]
    if (!ArgumentCondition.holdsAll(rule.when, args)) continue
    for (const pattern of rule.tools) {
      const parsed = ToolPattern.parse(pattern)
      if (Result.isSuccess(parsed) && ToolPattern.matches(parsed.success, toolId)) {
        const when = rule.when === undefined || rule.when.length === 0 ? {} : { when: rule.when }
        return new Evaluation({
          decision: rule.decision,
          decidedBy: new RuleMatched({ index, rule, pattern, ...when, ...owner }, { disableChecks: true })
        }, { disableChecks: true })
      }
    }
  }
  return new Evaluation({ decision: policy.default, decidedBy: new DefaultDecision(owner) }, { disableChecks: true })
}

const strictness: Record<Decision, number> = { allow: 0, ask: 1, deny: 2 }

const editable = (evaluation: Evaluation) =>
  evaluation.decidedBy._tag !== "RuleMatched" || evaluation.decidedBy.rule.editable !== false

/** `a` decides more strictly than `b`: it refuses where `b` asks or allows, asks where `b` allows, or both ask and only `a` forbids edited arguments. */
const stricter = (a: Evaluation, b: Evaluation): boolean =>
  strictness[a.decision] > strictness[b.decision] ||
  (a.decision === "ask" && b.decision === "ask" && !editable(a) && editable(b))

/**
 * `policy` bounded by another party's policy (`by` names it in `decidedBy` and the audit): each call's decision is
 * the strictest of the two, so the bound can make the agent ask or refuse more, never less. No `policy` is the
 * engine's (every call allowed); the bound's own bounds are kept, as bounds by the same party.
 *
 * @example
 * ```ts
 * import { PermissionPolicy } from "@parley/policy"
 *
 * const served = new PermissionPolicy.PermissionPolicy({ default: "ask", rules: [PermissionPolicy.rule("client.*", "allow")] })
 * // a caller asks for "allow everything": the server's "ask" stands
 * const bounded = PermissionPolicy.bounded(served, "client", PermissionPolicy.allowAll)
 * PermissionPolicy.evaluate(bounded, "agents.spawn").decision // "ask"
 * ```
 *
 * @since 0.1.0
 * @category Constructors
 */
export const bounded = (
  policy: PermissionPolicy | undefined,
  by: string,
  bound: PermissionPolicy
): PermissionPolicy =>
  new PermissionPolicy({
    default: policy?.default ?? "allow",
    rules: policy?.rules ?? [],
    bounds: [
      ...(policy?.bounds ?? []),
      ...[bound, ...(bound.bounds ?? [])].map((added) =>
        new Permissions.PermissionBound({ by, default: added.default, rules: added.rules }, { disableChecks: true })
      )
    ]
  }, { disableChecks: true })

/**
 * An evaluation as the principal that decided, for the log's audit (`ToolCallStarted.decidedBy`): the rule that matched
 * and its decision, `rules[<index>] <pattern>: <decision>`, with the conditions that held
 * (`rules[0] client.send_email when /to matches "*@corp.com": allow`), or `default: <decision>`; a bound's rule or
 * default is prefixed with who set it (`server rules[0] agents.*: ask`).
 *
 * @example
 * ```ts
 * import { PermissionPolicy } from "@parley/policy"
 *
 * const policy = new PermissionPolicy.PermissionPolicy({
 *   default: "ask",
 *   rules: [PermissionPolicy.rule(["client.get_*"], "allow")]
 * })
 * PermissionPolicy.principal(PermissionPolicy.evaluate(policy, "client.get_location"))
 * // Policy { rule: "rules[0] client.get_*: allow" }
 * ```
 *
 * @since 0.1.0
 * @category Utils
 */
export const principal = (evaluation: Evaluation): Principal.Policy => {
  const { decidedBy } = evaluation
  const rule = decidedBy._tag === "RuleMatched"
    ? `rules[${decidedBy.index}] ${decidedBy.pattern}${describeWhen(decidedBy.when)}: ${evaluation.decision}`
    : `default: ${evaluation.decision}`
  return new Principal.Policy({ rule: decidedBy.bound === undefined ? rule : `${decidedBy.bound} ${rule}` }, {
    disableChecks: true
  })
}

/**
 * Conditions as the audit writes them after a rule: ` when /to matches "*@corp.com" and /cc = null`, or nothing.
 *
 * @since 0.1.0
 * @category Utils
 */
export const describeWhen = (when: ReadonlyArray<ArgumentCondition.ArgumentCondition> | undefined): string =>
  when === undefined || when.length === 0 ? "" : ` when ${when.map(ArgumentCondition.describe).join(" and ")}`

// =============================================================================
// Checked against the agent's tools
// =============================================================================

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
