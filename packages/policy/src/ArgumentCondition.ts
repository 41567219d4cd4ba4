/**
 * Conditions on a call's arguments: what a permission rule's `when` and a scoped grant (`rememberWhen`) hold to.
 *
 * A condition names a value in the arguments by a JSON pointer (RFC 6901: `/to`, `/recipients/0`, `/a~1b` for the key
 * `a/b`, `""` for the whole arguments) and says what it must be: `Equals` (that JSON value), `Glob` (a string matching
 * a pattern in which `*` is any run of characters: `*@corp.com`) or `Bound` (a number within `min` and `max`,
 * inclusive). A pointer to nothing meets no condition. The schemas are core's (`Permissions.Equals`, `Glob`, `Bound`):
 * they are part of the agent definition and of the log; this module gives them their meaning (`holds`), checks them
 * (`issues`, and `checkParameters` against a tool's parameter JSON Schema) and describes them for the audit.
 *
 * @example
 * ```ts
 * import { ArgumentCondition } from "@parley/policy"
 *
 * const colleague = ArgumentCondition.glob("/to", "*@corp.com")
 * ArgumentCondition.holds(colleague, { to: "ana@corp.com" }) // true
 * ArgumentCondition.holds(colleague, { to: "ana@gmail.com" }) // false
 * ArgumentCondition.describe(ArgumentCondition.bound("/amount", { max: 100 })) // "/amount <= 100"
 * // a pointer into a field the tool does not have: "/tp: no field \"tp\" in the arguments; did you mean /to?"
 * ArgumentCondition.checkParameters(ArgumentCondition.glob("/tp", "*"), {
 *   type: "object",
 *   properties: { to: { type: "string" } }
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Permissions from "@parley/core/Permissions"
import * as Suggestion from "@parley/core/Suggestion"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import * as Result from "effect/Result"

// ===== Schemas (re-exported from @parley/core/Permissions) =====

/**
 * The value at `pointer` equals `value` (as JSON).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Equals: typeof Permissions.Equals = Permissions.Equals

/**
 * @since 0.1.0
 * @category Models
 */
export type Equals = Permissions.Equals

/**
 * The value at `pointer` is a string matching `pattern` (`*` is any run of characters).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Glob: typeof Permissions.Glob = Permissions.Glob

/**
 * @since 0.1.0
 * @category Models
 */
export type Glob = Permissions.Glob

/**
 * The value at `pointer` is a number within `min` and `max` (inclusive).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Bound: typeof Permissions.Bound = Permissions.Bound

/**
 * @since 0.1.0
 * @category Models
 */
export type Bound = Permissions.Bound

/**
 * A condition on a call's arguments.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const ArgumentCondition: typeof Permissions.ArgumentCondition = Permissions.ArgumentCondition

/**
 * @since 0.1.0
 * @category Models
 */
export type ArgumentCondition = Permissions.ArgumentCondition

// ===== Constructors =====

const noValidation = { disableChecks: true } as const

/**
 * The value at `pointer` equals `value`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const equals = (pointer: string, value: Permissions.Equals["value"]): Equals =>
  new Permissions.Equals({ pointer, value }, noValidation)

/**
 * The value at `pointer` is a string matching `pattern`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const glob = (pointer: string, pattern: string): Glob => new Permissions.Glob({ pointer, pattern }, noValidation)

/**
 * The value at `pointer` is a number within `min` and `max` (inclusive; give one or both).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const bound = (
  pointer: string,
  range: { readonly min?: number | undefined; readonly max?: number | undefined }
): Bound =>
  new Permissions.Bound({
    pointer,
    ...(range.min === undefined ? {} : { min: range.min }),
    ...(range.max === undefined ? {} : { max: range.max })
  }, noValidation)

// ===== JSON pointers =====

/**
 * The reference tokens of a JSON pointer (`/a/b~1c` → `["a", "b/c"]`, `""` → `[]`), or why it is not one: it must be
 * empty or start with `/`, and `~` must be followed by `0` or `1`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const parsePointer = (pointer: string): Result.Result<ReadonlyArray<string>, string> => {
  if (pointer === "") return Result.succeed([])
  if (!pointer.startsWith("/")) {
    return Result.fail(
      `${quote(pointer)} is not a JSON pointer: it starts with "/" (as in /to), or is "" for all the arguments`
    )
  }
  const tokens = pointer.slice(1).split("/")
  if (tokens.some((token) => /~(?![01])/.test(token))) {
    return Result.fail(`${quote(pointer)} is not a JSON pointer: "~" is written "~0" and "/" inside a key "~1"`)
  }
  return Result.succeed(tokens.map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~")))
}

const hasOwn = (value: object, key: string): boolean => Object.prototype.hasOwnProperty.call(value, key)

/**
 * The value `pointer` names in `value`, if there is one (an array is indexed by a decimal index without leading
 * zeros; a malformed pointer names nothing).
 *
 * @since 0.1.0
 * @category Utils
 */
export const valueAt: {
  (pointer: string): (value: unknown) => Option.Option<unknown>
  (value: unknown, pointer: string): Option.Option<unknown>
} = dual(2, (value: unknown, pointer: string): Option.Option<unknown> => {
  const tokens = parsePointer(pointer)
  if (Result.isFailure(tokens)) return Option.none()
  let current = value
  for (const token of tokens.success) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= current.length) return Option.none()
      current = current[Number(token)]
    } else if (typeof current === "object" && current !== null && hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token]
    } else {
      return Option.none()
    }
  }
  return current === undefined ? Option.none() : Option.some(current)
})

// ===== Evaluation =====

/** Equality of JSON values: objects key by key (in any order), arrays item by item. */
const jsonEquals = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEquals(item, b[i]))
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null || Array.isArray(b)) return false
  const left = Object.keys(a).filter((key) => (a as Record<string, unknown>)[key] !== undefined)
  const right = Object.keys(b).filter((key) => (b as Record<string, unknown>)[key] !== undefined)
  return left.length === right.length &&
    left.every((key) =>
      hasOwn(b, key) && jsonEquals((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])
    )
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Whether `text` matches a glob `pattern` as a whole: `*` is any run of characters (none included), every other
 * character stands for itself (case matters).
 *
 * @since 0.1.0
 * @category Utils
 */
export const globMatches = (pattern: string, text: string): boolean =>
  new RegExp(`^${pattern.split("*").map(escapeRegExp).join("[\\s\\S]*")}$`).test(text)

/**
 * Whether `args` (a call's arguments) meet `condition`. A pointer to nothing meets none; `Glob` holds for strings
 * only and `Bound` for finite numbers only.
 *
 * @since 0.1.0
 * @category Utils
 */
export const holds: {
  (args: unknown): (condition: ArgumentCondition) => boolean
  (condition: ArgumentCondition, args: unknown): boolean
} = dual(2, (condition: ArgumentCondition, args: unknown): boolean => {
  const found = valueAt(args, condition.pointer)
  if (Option.isNone(found)) return false
  const value = found.value
  switch (condition._tag) {
    case "Equals":
      return jsonEquals(value, condition.value)
    case "Glob":
      return typeof value === "string" && globMatches(condition.pattern, value)
    case "Bound":
      return typeof value === "number" && Number.isFinite(value) &&
        (condition.min === undefined || value >= condition.min) &&
        (condition.max === undefined || value <= condition.max)
  }
})

/**
 * Whether `args` meet every condition (no conditions: always).
 *
 * @since 0.1.0
 * @category Utils
 */
export const holdsAll = (conditions: ReadonlyArray<ArgumentCondition> | undefined, args: unknown): boolean =>
  conditions === undefined || conditions.every((condition) => holds(condition, args))

const quote = (value: unknown): string => JSON.stringify(value)

/**
 * A condition as the audit and the errors write it: `/to = "ana@corp.com"`, `/to matches "*@corp.com"`,
 * `/amount <= 100`, `/amount in 10..100`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const describe = (condition: ArgumentCondition): string => {
  const pointer = condition.pointer === "" ? `""` : condition.pointer
  switch (condition._tag) {
    case "Equals":
      return `${pointer} = ${quote(condition.value)}`
    case "Glob":
      return `${pointer} matches ${quote(condition.pattern)}`
    case "Bound":
      return condition.min !== undefined && condition.max !== undefined
        ? `${pointer} in ${condition.min}..${condition.max}`
        : condition.min !== undefined
        ? `${pointer} >= ${condition.min}`
        : condition.max !== undefined
        ? `${pointer} <= ${condition.max}`
        : `${pointer} within no range`
  }
}

// ===== Checks =====

/**
 * What is wrong with a condition on its own, whatever the tool: a malformed pointer, a `Bound` with neither `min`
 * nor `max`, or with `min` above `max`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const issues = (condition: ArgumentCondition): ReadonlyArray<string> => {
  const found: Array<string> = []
  const pointer = parsePointer(condition.pointer)
  if (Result.isFailure(pointer)) found.push(pointer.failure)
  if (condition._tag === "Bound") {
    if (condition.min === undefined && condition.max === undefined) {
      found.push(`${condition.pointer}: a Bound gives min, max or both`)
    } else if (condition.min !== undefined && condition.max !== undefined && condition.min > condition.max) {
      found.push(`${condition.pointer}: min ${condition.min} is above max ${condition.max}, so no number is within`)
    }
  }
  return found
}

type JsonSchemaNode = Readonly<Record<string, unknown>>

const isNode = (u: unknown): u is JsonSchemaNode => typeof u === "object" && u !== null && !Array.isArray(u)

/** A `$ref` into the root's `$defs` (or `definitions`), followed; any other node as it is. */
const deref = (node: JsonSchemaNode, root: JsonSchemaNode, depth = 0): JsonSchemaNode => {
  const ref = node.$ref
  if (typeof ref !== "string" || depth > 16) return node
  const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref)
  const defs = match === null ? undefined : root[match[1]]
  const target = isNode(defs) && match !== null ? defs[match[2].replace(/~1/g, "/").replace(/~0/g, "~")] : undefined
  return isNode(target) ? deref(target, root, depth + 1) : node
}

/** The alternatives a node stands for (`anyOf` / `oneOf` flattened, `$ref`s followed). */
const alternatives = (node: JsonSchemaNode, root: JsonSchemaNode): ReadonlyArray<JsonSchemaNode> => {
  const resolved = deref(node, root)
  const branches = [resolved.anyOf, resolved.oneOf].flatMap((list) => Array.isArray(list) ? list.filter(isNode) : [])
  return branches.length === 0 ? [resolved] : branches.flatMap((branch) => alternatives(branch, root))
}

type JsonType = "string" | "number" | "integer" | "boolean" | "null" | "object" | "array"

const jsonTypeOf = (value: unknown): JsonType =>
  value === null
    ? "null"
    : Array.isArray(value)
    ? "array"
    : typeof value === "number"
    ? Number.isInteger(value) ? "integer" : "number"
    : typeof value === "string"
    ? "string"
    : typeof value === "boolean"
    ? "boolean"
    : "object"

/** The JSON types a node admits, or `undefined` when it does not say (no `type`, `const` or `enum`). */
const typesOf = (node: JsonSchemaNode): ReadonlyArray<string> | undefined => {
  if (typeof node.type === "string") return [node.type]
  if (Array.isArray(node.type)) return node.type.filter((t): t is string => typeof t === "string")
  if (hasOwn(node, "const")) return [jsonTypeOf(node.const)]
  if (Array.isArray(node.enum)) return [...new Set(node.enum.map(jsonTypeOf))]
  return undefined
}

const admits = (types: ReadonlyArray<string>, type: JsonType): boolean =>
  types.includes(type) || (type === "integer" && types.includes("number")) ||
  (type === "number" && types.includes("integer"))

const pointerOf = (tokens: ReadonlyArray<string>): string =>
  tokens.map((token) => `/${token.replace(/~/g, "~0").replace(/\//g, "~1")}`).join("")

/**
 * Checks a condition against a tool's parameter JSON Schema: every issue `issues` finds, a pointer into a field the
 * schema does not have (named with the closest field it has: "did you mean /to?"), an index into what is not an
 * array, and a type mismatch — a `Glob` on what is not a string, a `Bound` on what is not a number, an `Equals` whose
 * value is of a type the field does not take. A part of the schema that says nothing (no `type`, no `properties`)
 * accepts whatever is under it.
 *
 * @since 0.1.0
 * @category Utils
 */
export const checkParameters = (
  condition: ArgumentCondition,
  parameters: Readonly<Record<string, unknown>>
): ReadonlyArray<string> => {
  const own = issues(condition)
  const parsed = parsePointer(condition.pointer)
  if (own.length > 0 || Result.isFailure(parsed)) return own
  const tokens = parsed.success
  // Walk every alternative of the schema along the pointer; the field exists if one of them has it.
  let nodes: ReadonlyArray<JsonSchemaNode> = alternatives(parameters, parameters)
  for (let depth = 0; depth < tokens.length; depth++) {
    const token = tokens[depth]
    const next: Array<JsonSchemaNode> = []
    const known: Array<string> = []
    let open = false
    for (const node of nodes) {
      const properties = isNode(node.properties) ? node.properties : undefined
      if (properties !== undefined && isNode(properties[token])) {
        next.push(...alternatives(properties[token], parameters))
        continue
      }
      if (properties !== undefined) known.push(...Object.keys(properties))
      const types = typesOf(node)
      if (isNode(node.items) || (types !== undefined && types.includes("array"))) {
        if (/^(0|[1-9][0-9]*)$/.test(token)) {
          if (isNode(node.items)) next.push(...alternatives(node.items, parameters))
          else open = true
        }
        continue
      }
      if (isNode(node.additionalProperties)) next.push(...alternatives(node.additionalProperties, parameters))
      else if (properties === undefined && (types === undefined || types.includes("object"))) open = true
    }
    if (open) return []
    if (next.length === 0) {
      const at = pointerOf(tokens.slice(0, depth))
      const closest = Suggestion.closest(token, [...new Set(known)])
      return [
        known.length === 0
          ? `${condition.pointer}: ${at === "" ? "the arguments" : at} ${
            /^(0|[1-9][0-9]*)$/.test(token)
              ? at === "" ? "are not an array" : "is not an array"
              : at === ""
              ? "have no fields"
              : "has no fields"
          }, so there is no ${pointerOf(tokens.slice(0, depth + 1))}`
          : `${condition.pointer}: no field ${quote(token)} in ${at === "" ? "the arguments" : at}${
            closest === undefined
              ? ` (its fields: ${[...new Set(known)].join(", ")})`
              : `; did you mean ${pointerOf([...tokens.slice(0, depth), closest])}?`
          }`
      ]
    }
    nodes = next
  }
  const typed = nodes.map(typesOf)
  if (typed.some((types) => types === undefined)) return []
  const types = [...new Set(typed.flatMap((t) => t ?? []))]
  const wanted: JsonType | undefined = condition._tag === "Glob"
    ? "string"
    : condition._tag === "Bound"
    ? "number"
    : jsonTypeOf(condition.value)
  if (admits(types, wanted)) return []
  return [
    `${describe(condition)}: ${condition.pointer === "" ? "the arguments are" : `${condition.pointer} is`} ${
      types.join(" or ")
    }, and ${
      condition._tag === "Glob"
        ? "a Glob matches strings"
        : condition._tag === "Bound"
        ? "a Bound compares numbers"
        : `the value is ${wanted === "integer" ? "a number" : wanted === "array" ? "an array" : `a ${wanted}`}`
    }`
  ]
}
