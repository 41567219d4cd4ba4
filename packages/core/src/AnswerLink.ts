/**
 * Answer links: signed, single-use, expiring URLs that answer one open approval — one per answer (`allow`, `deny`) —
 * without an API key, optionally made for a named person (recorded as the answer's `answeredBy`, a
 * `Principal.Link`). A server with a links secret (`ParleyServer`'s `links`) makes them
 * (`POST /sessions/:sessionId/turns/:turnId/callbacks/:callbackId/links`) and gives them to webhooks on
 * `callback.opened`.
 *
 * Opening a link (`GET`) shows a small confirmation page and never answers; confirming it (the page's `POST`)
 * answers. A link that was used, has expired, was tampered with, was revoked (`POST /links/:linkId/revoke`) or is of
 * another tenant answers exactly like an unknown one; a link of a callback that was answered otherwise says who
 * answered it. A link is never written to the log or the server's logs in full: the log records its id.
 *
 * @example
 * ```ts
 * import { AnswerLink, ProtocolApi } from "@parley/core"
 * import { HttpApiClient } from "effect/http-api"
 * import { Effect } from "effect"
 *
 * const links = Effect.gen(function*() {
 *   const client = yield* HttpApiClient.make(ProtocolApi.ProtocolApi, { baseUrl: "http://127.0.0.1:8787" })
 *   return yield* client.links.create({
 *     params: { sessionId, turnId, callbackId },
 *     payload: new AnswerLink.CreateLinks({ person: "ada@example.com" })
 *   })
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { CallbackId } from "./Ids.js"
import { TypeId } from "./ParleyError.js"

/**
 * The answers a link gives.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const LinkAnswer = Schema.Literals(["allow", "deny"])

/**
 * @since 0.1.0
 * @category Schemas
 */
export type LinkAnswer = typeof LinkAnswer.Type

/**
 * What links to make: for a named person (default: anyone who has them), valid for `expiresIn` seconds (default
 * 24 hours; never past the callback's own deadline).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class CreateLinks extends Schema.Class<CreateLinks>("@parley/core/AnswerLink/CreateLinks")({
  person: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))),
  expiresIn: Schema.optionalKey(
    Schema.Number.check(Schema.isInt(), Schema.isBetween({ minimum: 60, maximum: 30 * 24 * 3600 }))
  )
}) {}

/**
 * One link: the answer it gives and its URL.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Link extends Schema.Class<Link>("@parley/core/AnswerLink/Link")({
  answer: LinkAnswer,
  url: Schema.String
}) {}

/**
 * The links of one callback: one per answer, under one id (revoking it revokes them all).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class AnswerLinks extends Schema.Class<AnswerLinks>("@parley/core/AnswerLink/AnswerLinks")({
  linkId: Schema.String,
  callbackId: CallbackId,
  person: Schema.optionalKey(Schema.String),
  expiresAt: Schema.String,
  links: Schema.Array(Link)
}) {}

/**
 * Links cannot be made: the server has no links secret, or the callback is no approval (client tool calls and sign-ins
 * are answered through the API).
 *
 * @since 0.1.0
 * @category Errors
 */
export class LinksUnavailable extends Schema.TaggedError<LinksUnavailable>("@parley/core/AnswerLink/LinksUnavailable")(
  "LinksUnavailable",
  {
    module: Schema.String,
    method: Schema.String,
    description: Schema.String
  }
) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${this.module}.${this.method}: no answer links: ${this.description}`
  }
}
