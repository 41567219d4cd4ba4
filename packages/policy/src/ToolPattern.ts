/**
 * Tool patterns: what the `tools` of a permission rule say, compiled and checked against the stable tool ids
 * (`client.<name>`, `agents.spawn|message|wait|interrupt`, `connector.<source>.<tool>`).
 *
 * A pattern is an exact tool id, or a tool id in which `*` stands for any run of the characters a segment may hold
 * (letters, digits, `_`, `-`). `*` may be a whole segment (`client.*`, `connector.gmail.*`,
 * `connector.*.latest_email`) or part of one (`client.get_*`, `connector.gmail.*_email`). It never crosses a dot,
 * so a pattern has exactly as many segments as the ids it matches. The namespace (first segment) is always
 * literal, and `agents.<x>` takes a builtin or `*`.
 *
 * @example
 * ```ts
 * import { ToolPattern } from "@parley/policy"
 * import { Result } from "effect"
 *
 * const pattern = ToolPattern.parse("connector.*.latest_email")
 * if (Result.isSuccess(pattern)) {
 *   ToolPattern.matches(pattern.success, "connector.gmail.latest_email") // true
 *   ToolPattern.matches(pattern.success, "connector.gmail.send_email") // false
 * }
 * ToolPattern.parse("client.**") // Failure("\"client.**\": \"**\" is not a pattern; ...")
 * ```
 *
 * @since 0.1.0
 */
import * as Ids from "@parley/core/Ids"
import * as Suggestion from "@parley/core/Suggestion"
import { dual } from "effect/Function"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"

/**
 * @since 0.1.0
 * @category Models
 */
export const TypeId: unique symbol = Symbol.for("@parley/policy/ToolPattern")

/**
 * @since 0.1.0
 * @category Models
 */
export type TypeId = typeof TypeId

/**
 * A checked, compiled tool pattern. Made by `parse`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ToolPattern {
  readonly [TypeId]: TypeId
  /** The pattern as written. */
  readonly source: string
  /** The literal first segment. */
  readonly namespace: Ids.ToolNamespace
  /** The dotted segments, namespace included. */
  readonly segments: ReadonlyArray<string>
  /** `true` when the pattern holds no `*`: it matches exactly one tool id. */
  readonly exact: boolean
  /** The anchored matcher; `*` compiles to a run of segment characters and never matches a dot. */
  readonly regexp: RegExp
}

/**
 * How many segments the ids of each namespace have.
 *
 * @since 0.1.0
 * @category Models
 */
export const segmentCounts: { readonly [N in Ids.ToolNamespace]: number } = {
  client: 2,
  agents: 2,
  connector: 3
}

const shapes: { readonly [N in Ids.ToolNamespace]: string } = {
  client: "client.<name>",
  agents: "agents.<builtin>",
  connector: "connector.<source>.<tool>"
}

const segmentSyntax = /^[A-Za-z0-9*][A-Za-z0-9_*-]*$/
const segmentCharacters = "[A-Za-z0-9_-]"

const isNamespace = (segment: string): segment is Ids.ToolNamespace =>
  (Ids.toolNamespaces as ReadonlyArray<string>).includes(segment)

const isBuiltin = (segment: string): boolean => (Ids.builtinTools as ReadonlyArray<string>).includes(segment)

const compile = (segments: ReadonlyArray<string>): RegExp =>
  new RegExp(
    `^${segments.map((segment) => segment.split("*").join(`${segmentCharacters}*`)).join("\\.")}$`
  )

const quote = (value: string): string => JSON.stringify(value)

const issue = (pattern: string, why: string): Result.Result<never, string> => Result.fail(`${quote(pattern)}: ${why}`)

/**
 * The tool id among `toolIds` closest to `pattern`, if one is close enough to be a slip: by edit distance to the whole
 * id (`client.get_locaton`), or, when the pattern does not start with a namespace (`get_location`,
 * `gmail.latest_email`), to the id without its namespace and leading segments (`get_location`, `latest_email`).
 *
 * @since 0.1.0
 * @category Utils
 */
export const closest = (pattern: string, toolIds: ReadonlyArray<string>): string | undefined => {
  const whole = Suggestion.closest(pattern, toolIds)
  if (whole !== undefined || isNamespace(pattern.split(".")[0])) return whole
  // the id's names without its namespace: connector.gmail.latest_email → gmail.latest_email, latest_email
  const names = toolIds.flatMap((id) => {
    const segments = id.split(".")
    return segments.slice(1).map((_, from) => ({ id, name: segments.slice(from + 1).join(".") }))
  })
  const name = Suggestion.closest(pattern, names.map((candidate) => candidate.name))
  return names.find((candidate) => candidate.name === name)?.id
}

/**
 * The pattern with the namespace its shape calls for, when it has none or a misspelt one: a bare name is a client
 * tool or a builtin (`get_location` → `client.get_location`, `spawn` → `agents.spawn`); a namespace one slip from a
 * real one is that one, when the segment count fits (`Client.get_location` → `client.get_location`).
 */
const withNamespace = (segments: ReadonlyArray<string>): string | undefined => {
  if (segments.length === 1) return `${isBuiltin(segments[0]) ? "agents" : "client"}.${segments[0]}`
  const namespace = Suggestion.closest(segments[0].toLowerCase(), Ids.toolNamespaces)
  return namespace !== undefined && isNamespace(namespace) && segmentCounts[namespace] === segments.length
    ? [namespace, ...segments.slice(1)].join(".")
    : undefined
}

/**
 * What `parse` may know besides the pattern: `toolIds`, the ids the pattern is meant for (the tools its agent can
 * call). A pattern without a namespace then suggests the closest of them (`closest`) instead of guessing.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ParseOptions {
  readonly toolIds?: ReadonlyArray<string> | undefined
}

/**
 * Checks and compiles a tool pattern. The `Left` is one issue, naming the pattern and what is wrong with it:
 * an empty pattern, an empty segment, `**`, a character other than letters, digits, `_`, `-` and `*` (or a segment
 * starting with `_` or `-`), an unknown or wildcard namespace, the wrong number of segments for the namespace, or
 * `agents.<x>` where `x` is neither a builtin nor `*`. A pattern without a namespace (`get_location`) is a near miss
 * like a typo: its issue asks "did you mean client.get_location?", naming the closest of `options.toolIds` when they
 * are given, else the pattern with the namespace its shape calls for.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const parse = (pattern: string, options: ParseOptions = {}): Result.Result<ToolPattern, string> => {
  if (pattern.length === 0) {
    return issue(pattern, "an empty pattern matches no tool; write a tool id such as client.get_location")
  }
  const segments = pattern.split(".")
  for (const segment of segments) {
    if (segment.length === 0) {
      return issue(pattern, "empty segment; segments are separated by single dots, as in connector.gmail.*")
    }
    if (segment.includes("**")) {
      return issue(pattern, `"**" is not a pattern; "*" stands for one segment or part of one and never crosses a dot`)
    }
    if (!segmentSyntax.test(segment)) {
      return issue(
        pattern,
        `bad characters in segment ${
          quote(segment)
        }; a segment holds letters, digits, "_", "-" and "*" and starts with a letter, a digit or "*"`
      )
    }
  }
  const namespace = segments[0]
  if (!isNamespace(namespace)) {
    // `*` alone or before a dot stands for a namespace; in a bare name (`get_*`) it is part of a tool's name
    if (namespace === "*" || (namespace.includes("*") && segments.length > 1)) {
      return issue(
        pattern,
        `the namespace cannot be a wildcard; write client, agents or connector (the policy default covers every tool)`
      )
    }
    const suggestion = options.toolIds === undefined ? withNamespace(segments) : closest(pattern, options.toolIds)
    return issue(
      pattern,
      `${segments.length === 1 ? "no namespace" : `unknown namespace ${quote(namespace)}`}; tool ids start with ` +
        `client, agents or connector${suggestion === undefined ? "" : `: did you mean ${suggestion}?`}`
    )
  }
  if (segments.length !== segmentCounts[namespace]) {
    return issue(
      pattern,
      `wrong segment count: ${namespace} tool ids have ${segmentCounts[namespace]} segments (${
        shapes[namespace]
      }), this pattern has ${segments.length}`
    )
  }
  if (namespace === "agents" && segments[1] !== "*" && !isBuiltin(segments[1])) {
    return issue(
      pattern,
      `unknown builtin ${quote(segments[1])}; agents.<x> takes ${Ids.builtinTools.join(", ")} or *`
    )
  }
  return Result.succeed({
    [TypeId]: TypeId,
    source: pattern,
    namespace,
    segments,
    exact: !pattern.includes("*"),
    regexp: compile(segments)
  })
}

/**
 * @since 0.1.0
 * @category Guards
 */
export const isToolPattern = (u: unknown): u is ToolPattern => Predicate.hasProperty(u, TypeId)

/**
 * Whether a tool id matches a pattern. A string that is not a stable tool id matches no pattern.
 *
 * @since 0.1.0
 * @category Utils
 */
export const matches: {
  (toolId: string): (pattern: ToolPattern) => boolean
  (pattern: ToolPattern, toolId: string): boolean
} = dual(
  2,
  (pattern: ToolPattern, toolId: string): boolean =>
    Ids.toolIdPattern.test(toolId) && (pattern.exact ? pattern.source === toolId : pattern.regexp.test(toolId))
)
