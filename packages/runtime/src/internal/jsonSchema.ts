import type { ClientToolResult } from "@parley/core/Answer"
import type { CallbackId } from "@parley/core/Ids"
import { AnswerMismatch } from "@parley/core/ParleyError"
import type { JsonSchema } from "@parley/core/ToolSpec"
import { Ajv } from "ajv"
import * as Either from "effect/Either"

const ajv = new Ajv({ allErrors: true, strict: false })
const compiled = new WeakMap<object, ReturnType<typeof ajv.compile>>()

const validatorOf = (schema: JsonSchema) => {
  let validate = compiled.get(schema)
  if (validate === undefined) {
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  return validate
}

/**
 * Checks a client tool's success value against the tool's `success` JSON Schema (a tool error is free-form).
 * A mismatch is an `AnswerMismatch`, and nothing is stored.
 */
export const checkClientToolResult = (
  callbackId: CallbackId,
  success: JsonSchema | undefined,
  answer: ClientToolResult
): Either.Either<void, AnswerMismatch> => {
  if (answer.isFailure || success === undefined) return Either.void
  const validate = validatorOf(success)
  if (validate(answer.result)) return Either.void
  const problems = (validate.errors ?? []).map((error) => `${error.instancePath || "the result"} ${error.message}`)
  return Either.left(
    new AnswerMismatch({
      module: "Turn",
      method: "answer",
      callbackId,
      reason: `the client tool result does not match the tool's success schema: ${problems.join("; ")}`
    })
  )
}
