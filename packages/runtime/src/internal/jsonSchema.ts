import type { ClientToolResult } from "@parley/core/Answer"
import type { CallbackId } from "@parley/core/Ids"
import { AnswerMismatch } from "@parley/core/ParleyError"
import type { JsonSchema } from "@parley/core/ToolSpec"
import { Ajv } from "ajv"
import * as Either from "effect/Either"

const ajv = new Ajv({ allErrors: true, strict: false })

type Validate = ReturnType<typeof ajv.compile>

/**
 * Compiled validators, by schema object and by the schema's JSON text: a tree loaded again from a durable store
 * decodes its agent anew (new schema objects, the same schemas), and compiling costs far more than the text.
 */
const byObject = new WeakMap<object, Validate>()
const byText = new Map<string, Validate>()
/** Distinct schemas kept by text (the map is emptied when full). */
const byTextLimit = 1_000

const validatorOf = (schema: JsonSchema) => {
  const known = byObject.get(schema)
  if (known !== undefined) return known
  const text = JSON.stringify(schema)
  let validate = byText.get(text)
  if (validate === undefined) {
    validate = ajv.compile(schema)
    if (byText.size >= byTextLimit) byText.clear()
    byText.set(text, validate)
  }
  byObject.set(schema, validate)
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
