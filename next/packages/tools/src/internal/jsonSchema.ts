/**
 * The JSON Schema of a schema's encoded side, as a model reads it, and the serialisable `ToolSpec` of a client tool.
 */
import * as Ids from "@parley/core/Ids"
import { InvalidId } from "@parley/core/ParleyError"
import * as ToolSpec from "@parley/core/ToolSpec"
import * as Effect from "effect/Effect"
import * as JSONSchema from "effect/JsonSchema"
import type * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type { Any } from "../ClientTool.js"

const emptyObject: ToolSpec.JsonSchema = { type: "object", properties: {}, required: [], additionalProperties: false }

const isEmptyObject = (ast: SchemaAST.AST): boolean => {
  const encoded = SchemaAST.encodedAST(ast)
  return SchemaAST.isTypeLiteral(encoded) && encoded.propertySignatures.length === 0 &&
    encoded.indexSignatures.length === 0
}

/** No top-level `$ref` (a `Schema.Class` is inlined), named schemas under `$defs`, no `$schema` key. */
export const make = (schema: Schema.Schema.All): ToolSpec.JsonSchema => {
  if (isEmptyObject(schema.ast)) return { ...emptyObject }
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const root = JSONSchema.fromAST(schema.ast, { definitions, topLevelReferenceStrategy: "skip" })
  return Object.keys(definitions).length === 0 ? { ...root } : { ...root, $defs: definitions }
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
