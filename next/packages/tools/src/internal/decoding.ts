/**
 * Decoding what crosses the wire for a client tool (the model's arguments, a hand-made result) and describing what
 * does not decode in one line a model or a person can act on.
 */
import type * as Answer from "@parley/core/Answer"
import { AnswerMismatch } from "@parley/core/ParleyError"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as ParseResult from "effect/SchemaIssue"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type { Any } from "../ClientTool.js"

// JSON has no `undefined`: an optional key is reported as "Expected A | B", not "A | B | undefined".
const withoutUndefined = (union: SchemaAST.Union): SchemaAST.AST => {
  const types = union.types.filter((type) => !SchemaAST.isUndefinedKeyword(type))
  return types.length === union.types.length || types.length === 0 ? union : SchemaAST.Union.make(types)
}

// A union that fails is reported as one "Expected A | B, actual x", not once per member.
const collapseUnions = (issue: ParseResult.ParseIssue): ParseResult.ParseIssue => {
  switch (issue._tag) {
    case "Composite":
      return SchemaAST.isUnion(issue.ast)
        ? new ParseResult.Type(withoutUndefined(issue.ast), issue.actual)
        : new ParseResult.Composite(
          issue.ast,
          issue.actual,
          "_tag" in issue.issues ? collapseUnions(issue.issues) : Arr.map(issue.issues, collapseUnions),
          issue.output
        )
    case "Pointer":
      return new ParseResult.Pointer(issue.path, issue.actual, collapseUnions(issue.issue))
    case "Refinement":
      return new ParseResult.Refinement(issue.ast, issue.actual, issue.kind, collapseUnions(issue.issue))
    case "Transformation":
      return new ParseResult.Transformation(issue.ast, issue.actual, issue.kind, collapseUnions(issue.issue))
    default:
      return issue
  }
}

/** `path: problem; path: problem`, one entry per issue. */
export const describe = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatIssueSync(collapseUnions(error.issue))
    .map((issue) => issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`)
    .join("; ")

/** The model's arguments, decoded with the tool's `parameters` (defaults applied, extra keys dropped). */
export const decodeArguments = (tool: Any, value: unknown) =>
  Schema.decodeUnknownEffect(tool.parameters, { errors: "all", onExcessProperty: "ignore" })(value)

/** See `ClientTool.decodeResult`. */
export const decodeResult = (
  tool: Any,
  result: Answer.ClientToolResult,
  callbackId: string | undefined
): Effect.Effect<Answer.ClientToolResult, AnswerMismatch> => {
  const schema = result.isFailure ? tool.failure : tool.success
  const decoded = Schema.decodeUnknownResult(schema, { errors: "all", onExcessProperty: "error" })(result.result)
  if (Either.isRight(decoded) || (result.isFailure && typeof result.result === "string")) {
    return Effect.succeed(result)
  }
  const side = result.isFailure ? "failure" : "success"
  return Effect.fail(
    new AnswerMismatch({
      module: "ClientTool",
      method: "decodeResult",
      callbackId: callbackId ?? `(a call of ${tool.id})`,
      reason: `the ${side} result does not match the ${side} schema of ${tool.id}: ${describe(decoded.left)}`
    })
  )
}
