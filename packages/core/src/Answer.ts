/**
 * Answers to callbacks, and `validate`, the pure check behind "nothing was sent": an answer that does not fit its
 * callback fails with `AnswerMismatch` before anything is stored.
 *
 * `KeepCallbackOpen` is a handler's decision ("not mine, a person decides"); it is never sent.
 *
 * @example
 * ```ts
 * import { Answer } from "@parley/core"
 *
 * const yes = new Answer.AllowApproval()
 * const no = new Answer.DenyApproval({ reason: "not today" })
 * const result = Answer.ClientToolResult.success({ city: "Lyon", country: "France" })
 * const signIn = new Answer.SignInAnswer({ connected: [], denied: ["gmail"] })
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Callback } from "./Callback.js"
import { withDefault } from "./internal/schemaFields.js"
import { AnswerMismatch } from "./ParleyError.js"
import { ArgumentCondition } from "./Permissions.js"

/**
 * How long an approval answer holds (`remember`): for later calls of the same tool id in the asking session
 * (`session`), or anywhere in its tree, subagents included (`tree`). Without it, the answer is for this call only.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Remember = Schema.Literals(["session", "tree"])

/**
 * @since 0.1.0
 * @category Models
 */
export type Remember = typeof Remember.Type

/**
 * Allows the call. `arguments` (optional) are corrected arguments: checked against the tool's parameters like the
 * model's, the call then runs with them and the model sees the call as made with them. `remember` grants later calls
 * of the same tool without asking (see `Remember`); `rememberWhen` scopes that grant to the calls whose arguments
 * meet every one of its conditions (`Permissions.ArgumentCondition`: "always allow this tool *with these
 * arguments*"), and needs `remember`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class AllowApproval
  extends Schema.TaggedClass<AllowApproval>("@parley/core/Answer/AllowApproval")("AllowApproval", {
    arguments: Schema.optional(Schema.Unknown),
    remember: Schema.optional(Remember),
    rememberWhen: Schema.optional(Schema.Array(ArgumentCondition))
  })
{}

/**
 * Denies the call, with a reason the model sees. `remember` denies later calls of the same tool without asking;
 * `rememberWhen` scopes that to the calls whose arguments meet its conditions, as on `AllowApproval`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class DenyApproval extends Schema.TaggedClass<DenyApproval>("@parley/core/Answer/DenyApproval")("DenyApproval", {
  reason: Schema.optional(Schema.String),
  remember: Schema.optional(Remember),
  rememberWhen: Schema.optional(Schema.Array(ArgumentCondition))
}) {}

/**
 * The result of a client tool: the tool's encoded success value, or a tool error the model sees.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ClientToolResult
  extends Schema.TaggedClass<ClientToolResult>("@parley/core/Answer/ClientToolResult")("ClientToolResult", {
    isFailure: Schema.Boolean,
    result: Schema.Unknown
  })
{
  /**
   * A successful result (already encoded with the tool's `success` schema).
   *
   * @since 0.1.0
   */
  static success(result: unknown): ClientToolResult {
    return new ClientToolResult({ isFailure: false, result })
  }
  /**
   * A tool error the model sees.
   *
   * @since 0.1.0
   */
  static failure(result: unknown): ClientToolResult {
    return new ClientToolResult({ isFailure: true, result })
  }
}

/**
 * OAuth tokens, in the token endpoint's wire form (RFC 6749 §5.1): for a client that completed the authorization
 * itself and hands the runtime the result.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TokenSet extends Schema.Class<TokenSet>("@parley/core/Answer/TokenSet")({
  access_token: Schema.String,
  token_type: Schema.String,
  refresh_token: Schema.optional(Schema.String),
  expires_in: Schema.optional(Schema.Number),
  scope: Schema.optional(Schema.String)
}) {}

/**
 * A request connected with a credential: the authorization `code` the authorization server gave the person who opened
 * the request's `authorizationUrl` (with its `state`, when the redirect carried one), or the `tokens` of a flow the
 * client completed itself. The runtime exchanges or keeps the credential before the answer is stored: the answer in
 * the log names the request only.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SignInGrant extends Schema.Class<SignInGrant>("@parley/core/Answer/SignInGrant")({
  /** The request's id (for a connector's sign-in, its source). */
  id: Schema.String,
  code: Schema.optional(Schema.String),
  state: Schema.optional(Schema.String),
  tokens: Schema.optional(TokenSet)
}) {}

/**
 * The answer to a sign-in: which requests (by id) were connected and which denied. It must name every request. A
 * request that asked for an authorization (its `authorizationUrl`) is connected with a `SignInGrant` carrying the code.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SignInAnswer extends Schema.TaggedClass<SignInAnswer>("@parley/core/Answer/SignInAnswer")("SignInAnswer", {
  connected: withDefault(Schema.Array(Schema.Union([Schema.String, SignInGrant])), () => []),
  denied: withDefault(Schema.Array(Schema.String), () => [])
}) {
  /**
   * The ids of the connected requests.
   *
   * @since 0.1.0
   */
  get connectedIds(): ReadonlyArray<string> {
    return this.connected.map((entry) => (typeof entry === "string" ? entry : entry.id))
  }
}

/**
 * @since 0.1.0
 * @category Models
 */
export type Answer = AllowApproval | DenyApproval | ClientToolResult | SignInAnswer

/**
 * @since 0.1.0
 * @category Schemas
 */
export const Answer: Schema.Union<
  readonly [typeof AllowApproval, typeof DenyApproval, typeof ClientToolResult, typeof SignInAnswer]
> = Schema.Union([AllowApproval, DenyApproval, ClientToolResult, SignInAnswer])

/**
 * A handler's decision to leave the callback to someone else. Never sent.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class KeepCallbackOpen
  extends Schema.TaggedClass<KeepCallbackOpen>("@parley/core/Answer/KeepCallbackOpen")("KeepCallbackOpen", {})
{}

/**
 * @since 0.1.0
 * @category Guards
 */
export const isKeepCallbackOpen = (u: unknown): u is KeepCallbackOpen => u instanceof KeepCallbackOpen

/**
 * The answers a callback kind takes.
 *
 * @since 0.1.0
 * @category Utils
 */
export const expectedFor = (callback: Callback): ReadonlyArray<Answer["_tag"]> => {
  switch (callback._tag) {
    case "OpenApproval":
      return ["AllowApproval", "DenyApproval"]
    case "OpenClientToolCall":
      return ["ClientToolResult"]
    case "OpenSignIn":
      return ["SignInAnswer"]
  }
}

const signInIssues = (requested: ReadonlyArray<string>, answer: SignInAnswer): ReadonlyArray<string> => {
  const issues: Array<string> = []
  const named = [...answer.connectedIds, ...answer.denied]
  const unknown = named.filter((id) => !requested.includes(id))
  if (unknown.length > 0) {
    issues.push(`names unknown sign-in requests ${unknown.join(", ")} (requested: ${requested.join(", ")})`)
  }
  const missing = requested.filter((id) => !named.includes(id))
  if (missing.length > 0) issues.push(`does not name ${missing.join(", ")}`)
  const both = [...new Set(answer.connectedIds.filter((id) => answer.denied.includes(id)))]
  if (both.length > 0) issues.push(`names ${both.join(", ")} as both connected and denied`)
  const repeated = named.filter((id, i) => named.indexOf(id) !== i && !both.includes(id))
  if (repeated.length > 0) issues.push(`names ${[...new Set(repeated)].join(", ")} more than once`)
  return issues
}

/**
 * Checks that `answer` fits `callback`: its kind, `rememberWhen` only with `remember`, and for a sign-in that it names every requested source once and
 * nothing else. Returns the answer, or `AnswerMismatch`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const validateSync = (callback: Callback, answer: Answer): Result.Result<Answer, AnswerMismatch> => {
  const mismatch = (reason: string) =>
    Result.fail(new AnswerMismatch({ module: "Answer", method: "validate", callbackId: callback.id, reason }))
  const expected = expectedFor(callback)
  if (!expected.includes(answer._tag)) {
    return mismatch(
      `${callback.kind === "approval" ? "an" : "a"} ${callback.kind} callback takes ${
        expected.join(" or ")
      }, not ${answer._tag}`
    )
  }
  if (
    (answer._tag === "AllowApproval" || answer._tag === "DenyApproval") && answer.rememberWhen !== undefined &&
    answer.remember === undefined
  ) {
    return mismatch(
      `rememberWhen scopes a grant, and ${answer._tag} without remember makes none; add remember: "session" or "tree"`
    )
  }
  if (callback._tag === "OpenSignIn" && answer._tag === "SignInAnswer") {
    const issues = signInIssues(callback.requests.map((request) => request.id), answer)
    if (issues.length > 0) return mismatch(`the SignInAnswer ${issues.join("; ")}`)
  }
  return Result.succeed(answer)
}

/**
 * Checks that `answer` fits `callback` (see `validateSync`). Fails with `AnswerMismatch`; does nothing else.
 *
 * @since 0.1.0
 * @category Utils
 */
export const validate = (callback: Callback, answer: Answer): Effect.Effect<Answer, AnswerMismatch> =>
  Effect.fromResult(validateSync(callback, answer))
