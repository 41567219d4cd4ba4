/** The JSON Schema of the answer a callback expects (`TreeState.answerSchema`). */
import type { AgentSpec } from "@parley/core/AgentSpec"
import { AllowApproval, ClientToolResult, DenyApproval, SignInAnswer } from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import type { SessionId } from "@parley/core/Ids"
import type { JsonSchema } from "@parley/core/ToolSpec"
import * as Schema from "effect/Schema"

/** The JSON Schema of a schema's JSON form (as an HTTP client sends it), its definitions under `$defs`. */
const toJson = (schema: Schema.Top): JsonSchema => {
  const document = Schema.toJsonSchemaDocument(schema)
  return (Object.keys(document.definitions).length === 0
    ? document.schema
    : { ...document.schema, $defs: document.definitions }) as JsonSchema
}
const approvalAnswer = toJson(Schema.Union([AllowApproval, DenyApproval]))
const signInAnswer = toJson(SignInAnswer)
/** `agentOf` finds the definition of the session the callback belongs to (its tools' `success` schemas). */
export const answerSchema = (cb: Callback, agentOf: (sessionId: SessionId) => AgentSpec | undefined): JsonSchema => {
  switch (cb._tag) {
    case "OpenApproval":
      return approvalAnswer
    case "OpenSignIn":
      return signInAnswer
    case "OpenClientToolCall": {
      const spec = agentOf(cb.sessionId)?.tools.find((tool) => tool.id === cb.request.tool.id)
      const base = toJson(ClientToolResult)
      return spec?.success === undefined ? base : {
        anyOf: [
          {
            type: "object",
            required: ["_tag", "isFailure", "result"],
            properties: { _tag: { enum: ["ClientToolResult"] }, isFailure: { enum: [false] }, result: spec.success }
          },
          {
            type: "object",
            required: ["_tag", "isFailure", "result"],
            properties: { _tag: { enum: ["ClientToolResult"] }, isFailure: { enum: [true] }, result: {} }
          }
        ]
      }
    }
  }
}
