/**
 * The JSON Schema of a schema's encoded side, as a model reads it, and the serialisable `ToolSpec` of a client tool.
 */
import * as Ids from "@parley/core/Ids"
import { InvalidId } from "@parley/core/ParleyError"
import * as ToolSpec from "@parley/core/ToolSpec"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaRepresentation from "effect/SchemaRepresentation"
import type { Any } from "../ClientTool.js"

const emptyObject: ToolSpec.JsonSchema = { type: "object", properties: {}, required: [], additionalProperties: false }

const isEmptyObject = (ast: SchemaAST.AST): boolean => {
  const encoded = SchemaAST.toEncoded(ast)
  return SchemaAST.isObjects(encoded) && encoded.propertySignatures.length === 0 &&
    encoded.indexSignatures.length === 0
}

type Json = { [key: string]: unknown }

const isNullSchema = (schema: unknown): boolean =>
  typeof schema === "object" && schema !== null && (schema as Json).type === "null" && Object.keys(schema).length === 1

const nonFinite = ["-Infinity", "Infinity", "NaN"]

/** The branch Effect's JSON codec adds to a number: the strings it writes `NaN` and the infinities as. */
const isNonFiniteSchema = (schema: unknown): boolean => {
  if (typeof schema !== "object" || schema === null) return false
  const { enum: values, type, ...rest } = schema as Json
  return type === "string" && Object.keys(rest).length === 0 && Array.isArray(values) &&
    values.length === nonFinite.length && [...values].sort().every((value, i) => value === nonFinite[i])
}

/** The schema without the `anyOf` members that `drop` picks (a single member left stands for the `anyOf`). */
const withoutMembers = (schema: unknown, drop: (member: unknown) => boolean): unknown => {
  if (typeof schema !== "object" || schema === null || !Array.isArray((schema as Json).anyOf)) return schema
  const { anyOf, ...rest } = schema as Json
  const members = (anyOf as Array<unknown>).filter((member) => !drop(member))
  if (members.length === (anyOf as Array<unknown>).length) return schema
  return members.length === 1 ? { ...(members[0] as Json), ...rest } : { ...rest, anyOf: members }
}

/**
 * Effect writes an optional key's `undefined` as a `null` branch, and a number's `NaN` and infinities as strings
 * (what its JSON codec sends). The arguments are decoded from the model's JSON as they are, where an optional key is
 * left out, `null` is refused and a number is a JSON number: both branches are dropped, and every object lists its
 * `required` keys (none, at least).
 */
const forModels = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(forModels)
  if (typeof schema !== "object" || schema === null) return schema
  const entries: Json = {}
  for (const [key, value] of Object.entries(schema)) entries[key] = forModels(value)
  const out = withoutMembers(entries, isNonFiniteSchema) as Json
  if (out.type === "object" && typeof out.properties === "object" && out.properties !== null) {
    const required = Array.isArray(out.required) ? (out.required as Array<string>) : []
    const properties: Json = {}
    for (const [name, property] of Object.entries(out.properties as Json)) {
      properties[name] = required.includes(name) ? property : withoutNull(property)
    }
    out.properties = properties
    out.required = required
  }
  return out
}

const withoutNull = (property: unknown): unknown => withoutMembers(property, isNullSchema)

/** No top-level `$ref` (a `Schema.Class` is inlined), named schemas under `$defs`, no `$schema` key. */
export const make = (schema: Schema.Top): ToolSpec.JsonSchema => {
  if (isEmptyObject(schema.ast)) return { ...emptyObject }
  const document = SchemaRepresentation.toJsonSchemaDocument(
    SchemaRepresentation.toRepresentation(SchemaAST.toEncoded(schema.ast)),
    { onExcessProperty: "error" }
  )
  const root = forModels(document.schema) as ToolSpec.JsonSchema
  return Object.keys(document.definitions).length === 0
    ? root
    : { ...root, $defs: forModels(document.definitions) as ToolSpec.JsonSchema }
}

/** The tool's id, checked: `client.<name>` with a valid name, else `InvalidId` (reported as `method`). */
export const checkedId = (tool: Pick<Any, "name">, method: string): Effect.Effect<Ids.ToolId, InvalidId> =>
  Effect.mapError(Ids.clientToolId(tool.name), (error) =>
    new InvalidId({
      module: "ClientTool",
      method,
      kind: "toolId",
      value: error.value,
      description: `the tool name ${JSON.stringify(tool.name)} must match ^[A-Za-z0-9][A-Za-z0-9_-]*$`
    }))

/** The tool's `ToolSpec`, its schemas exported with `make` (the id is not checked here). */
export const specOf = (tool: Omit<Any, "spec">): ToolSpec.ToolSpec =>
  new ToolSpec.ToolSpec({
    id: tool.id as ToolSpec.ToolSpec["id"],
    name: tool.name,
    description: tool.description,
    parameters: make(tool.parameters),
    success: make(tool.success),
    failure: make(tool.failure),
    annotations: tool.annotations
  }, { disableChecks: true })
