/**
 * Answering calls of a client tool: decode the arguments, run the program's code, encode its outcome into a
 * `ClientToolResult` (see `ClientTool.run`, `ClientTool.answer`, `ClientTool.answers`).
 */
import * as Answer from "@parley/core/Answer"
import type * as Callback from "@parley/core/Callback"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Any, ClientToolHandler, Handler, HandlerResult, RunResult, ToolAnswer } from "../ClientTool.js"
import { NotThisTool } from "../ClientTool.js"
import { decodeArguments, describe } from "./decoding.js"

const keep = new Answer.KeepCallbackOpen()

const liftResult = <S, F, R>(
  result: HandlerResult<S, F, R>
): Effect.Effect<S | Answer.KeepCallbackOpen, F, R> => Effect.isEffect(result) ? result : Effect.succeed(result)

const encodeOutcome = (
  tool: Any,
  outcome: Result.Result<unknown, unknown>
): Effect.Effect<Answer.ClientToolResult | Answer.KeepCallbackOpen> => {
  if (Result.isSuccess(outcome)) {
    if (Answer.isKeepCallbackOpen(outcome.success)) return Effect.succeed(keep)
    return Schema.encodeEffect(tool.success)(outcome.success).pipe(
      Effect.map(Answer.ClientToolResult.success),
      Effect.catch((error) =>
        Effect.as(
          Effect.logWarning(`${tool.id}: the value answered does not match the tool's success schema`, describe(error)),
          Answer.ClientToolResult.failure(`${tool.name} failed: it produced a result that does not match its schema`)
        )
      )
    )
  }
  return Schema.encodeEffect(tool.failure)(outcome.failure).pipe(
    Effect.map(Answer.ClientToolResult.failure),
    Effect.catch((error) =>
      Effect.as(
        Effect.logWarning(
          `${tool.id}: the tool failed with an error its failure schema does not encode`,
          describe(error)
        ),
        Answer.ClientToolResult.failure(`${tool.name} failed`)
      )
    )
  )
}

export const called = (tool: Any, callback: Callback.Callback): callback is Callback.OpenClientToolCall =>
  callback._tag === "OpenClientToolCall" && callback.request.tool.id === tool.id

/**
 * See `ClientTool.run`. `runCall` returns `KeepCallbackOpen` only when `fn` did, which `RunResult<Out>` accounts for:
 * the cast narrows the union the implementation cannot see through.
 */
export const run = <P, Out, F, R>(
  tool: Any,
  callback: Callback.Callback,
  fn: Handler<P, Out, F, R>
): Effect.Effect<RunResult<Out>, NotThisTool, R> =>
  called(tool, callback)
    ? runCall(tool, callback, fn) as Effect.Effect<RunResult<Out>, never, R>
    : Effect.fail(new NotThisTool({ toolId: tool.id, callback }))

const runCall = <P, S, F, R>(
  tool: Any,
  callback: Callback.OpenClientToolCall,
  fn: Handler<P, S, F, R>
): Effect.Effect<Answer.ClientToolResult | Answer.KeepCallbackOpen, never, R> =>
  Effect.flatMap(
    Effect.result(decodeArguments(tool, callback.request.arguments)),
    (decoded) =>
      Result.isFailure(decoded)
        ? Effect.succeed(
          Answer.ClientToolResult.failure(`Invalid arguments for ${tool.name}: ${describe(decoded.failure)}`)
        )
        : Effect.suspend(() => liftResult(fn(decoded.success as P, callback))).pipe(
          Effect.result,
          Effect.flatMap((outcome) => encodeOutcome(tool, outcome))
        )
  )

/** See `ClientTool.answer`. */
export const answer = <P, S, F>(tool: Any, fn: Handler<P, S, F>): ToolAnswer => ({
  tool,
  handle: (callback) => called(tool, callback) ? runCall(tool, callback, fn) : Effect.succeed(keep)
})

/** See `ClientTool.answers`. */
export const answers = (...entries: ReadonlyArray<ToolAnswer>): ClientToolHandler => (callback) =>
  Effect.gen(function*() {
    for (const entry of entries) {
      if (!called(entry.tool, callback)) continue
      const decision = yield* entry.handle(callback)
      if (!Answer.isKeepCallbackOpen(decision)) return decision
    }
    return keep
  })
