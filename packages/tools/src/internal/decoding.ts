/**
 * Decoding what crosses the wire for a client tool (the model's arguments, a hand-made result) and describing what
 * does not decode in one line a model or a person can act on.
 */
import type * as Answer from "@parley/core/Answer"
import { AnswerMismatch } from "@parley/core/ParleyError"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import type { Any } from "../ClientTool.js"

const format = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => issue._tag === "MissingKey" ? "is missing" : SchemaIssue.defaultLeafHook(issue)
})

// The words a model has read since the first release: "Expected A | B, actual x" and "is missing". JSON has no
// `undefined`: an optional key is reported as "Expected A | B", not "A | B | undefined".
const reword = (message: string): string =>
  message.replace(/^(Expected .*?)(?: \| undefined)?, got /, "$1, actual ").replace(
    /^(Expected .*?) \| undefined$/,
    "$1"
  )

/** `path: problem; path: problem`, one entry per issue (a failing union is one "Expected A | B, actual x"). */
export const describe = (error: Schema.SchemaError): string =>
  format(error.issue).issues
    .map((issue) => {
      const message = reword(issue.message)
      return issue.path === undefined || issue.path.length === 0
        ? message
        : `${issue.path.map(String).join(".")}: ${message}`
    })
    .join("; ")

/** How the wire's values are decoded: every issue, each with the input it is about (for the messages). */
const parseOptions = { errors: "all", reportInput: true } as const

/** The model's arguments, decoded with the tool's `parameters` (defaults applied, extra keys dropped). */
export const decodeArguments = (tool: Any, value: unknown) =>
  Schema.decodeUnknownEffect(tool.parameters, { ...parseOptions, onExcessProperty: "ignore" })(value)

/** See `ClientTool.decodeResult`. */
export const decodeResult = (
  tool: Any,
  result: Answer.ClientToolResult,
  callbackId: string | undefined
): Effect.Effect<Answer.ClientToolResult, AnswerMismatch> => {
  const schema = result.isFailure ? tool.failure : tool.success
  const decoded = Schema.decodeUnknownResult(schema, { ...parseOptions, onExcessProperty: "error" })(result.result)
  if (Result.isSuccess(decoded) || (result.isFailure && typeof result.result === "string")) {
    return Effect.succeed(result)
  }
  const side = result.isFailure ? "failure" : "success"
  return Effect.fail(
    new AnswerMismatch({
      module: "ClientTool",
      method: "decodeResult",
      callbackId: callbackId ?? `(a call of ${tool.id})`,
      reason: `the ${side} result does not match the ${side} schema of ${tool.id}: ${describe(decoded.failure)}`
    })
  )
}
