import type { ClientToolResult } from "@parley/core/Answer"
import type { OpenApproval } from "@parley/core/Callback"
import type { CallbackId } from "@parley/core/Ids"
import { AnswerMismatch } from "@parley/core/ParleyError"
import type { JsonSchema } from "@parley/core/ToolSpec"
import * as ArgumentCondition from "@parley/policy/ArgumentCondition"
import { Ajv } from "ajv"
import * as Result from "effect/Result"

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
): Result.Result<void, AnswerMismatch> => {
  if (answer.isFailure || success === undefined) return Result.void
  const validate = validatorOf(success)
  if (validate(answer.result)) return Result.void
  const problems = (validate.errors ?? []).map((error) => `${error.instancePath || "the result"} ${error.message}`)
  return Result.fail(
    new AnswerMismatch({
      module: "Turn",
      method: "answer",
      callbackId,
      reason: `the client tool result does not match the tool's success schema: ${problems.join("; ")}`
    })
  )
}

/**
 * Checks the arguments of an approval that edits its call (`AllowApproval({ arguments })`): the rule that asked must
 * let the call be edited (`editable` is not `false`), and the arguments must match the tool's parameters JSON Schema,
 * the schema the model's own call is made against. A refusal is an `AnswerMismatch`, and nothing is stored.
 */
export const checkEdit = (
  callback: OpenApproval,
  parameters: JsonSchema | undefined,
  args: unknown
): Result.Result<void, AnswerMismatch> => {
  const mismatch = (reason: string) =>
    Result.fail(new AnswerMismatch({ module: "Turn", method: "answer", callbackId: callback.id, reason }))
  const decidedBy = callback.request.decidedBy
  if (decidedBy._tag === "RuleMatched" && decidedBy.rule.editable === false) {
    return mismatch(
      `the permission policy does not let calls of ${callback.request.tool.id} be edited (rules[${decidedBy.index}] ` +
        `is editable: false): allow or deny the call as it was made`
    )
  }
  if (parameters === undefined) return mismatch(`the tool ${callback.request.tool.id} is not known: nothing to edit`)
  const validate = validatorOf(parameters)
  if (validate(args)) return Result.void
  const problems = (validate.errors ?? []).map((error) => `${error.instancePath || "the arguments"} ${error.message}`)
  return mismatch(
    `the edited arguments do not match the parameters of ${callback.request.tool.id}: ${problems.join("; ")}`
  )
}

/**
 * Checks the conditions a remembered grant is scoped to (`rememberWhen`) against the tool's parameters JSON Schema,
 * as a rule's `when` is when its policy is loaded: a malformed pointer, a field the tool does not have (with the
 * closest it has) or a type it does not take is an `AnswerMismatch`, and nothing is stored.
 */
export const checkRememberWhen = (
  callback: OpenApproval,
  parameters: JsonSchema | undefined,
  when: ReadonlyArray<ArgumentCondition.ArgumentCondition>
): Result.Result<void, AnswerMismatch> => {
  const problems = when.flatMap((condition, index) =>
    (parameters === undefined
      ? ArgumentCondition.issues(condition)
      : ArgumentCondition.checkParameters(condition, parameters))
      .map((issue) => `rememberWhen[${index}] ${issue}`)
  )
  return problems.length === 0 ? Result.void : Result.fail(
    new AnswerMismatch({
      module: "Turn",
      method: "answer",
      callbackId: callback.id,
      reason: `the grant's conditions do not fit ${callback.request.tool.id}: ${problems.join("; ")}`
    })
  )
}
