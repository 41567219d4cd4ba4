/**
 * Answer links: for an open callback, signed, single-use, expiring URLs that answer it without an API key — `allow`
 * and `deny` for an approval, `answer` (a small form) for a client tool's result or a sign-in — optionally made for a
 * named person (recorded as the answer's `answeredBy`, a `Principal.Link`). A server with a links secret
 * (`ParleyServer`'s `links`) makes them (`POST /sessions/:sessionId/turns/:turnId/callbacks/:callbackId/links`,
 * `CreateLinks` in, `Links` out) and gives them to webhooks on `callback.opened`.
 *
 * Opening a link (`GET /l/<id>.<signature>`) shows a small confirmation page and never answers; confirming it (the
 * page's `POST`) answers, once. A link that was used, has expired, was revoked (`DELETE /links/:linkId`), was
 * tampered with or is made up answers exactly like an unknown one; a link of a callback that was answered otherwise
 * says who answered it. A link is never written to the log or the server's logs in full: they record its id, which
 * opens nothing without the signature.
 *
 * @example
 * ```ts
 * import { AnswerLink, ProtocolApi } from "@parley/core"
 * import type { Ids } from "@parley/core"
 * import { Effect } from "effect"
 * import { HttpApiClient } from "effect/http-api"
 *
 * declare const at: { sessionId: Ids.SessionId; turnId: Ids.TurnId; callbackId: Ids.CallbackId }
 *
 * const links = Effect.gen(function*() {
 *   const client = yield* HttpApiClient.make(ProtocolApi.ProtocolApi, { baseUrl: "http://127.0.0.1:8787" })
 *   return yield* client.links.create({
 *     params: at,
 *     payload: new AnswerLink.CreateLinks({ person: "ada@example.com", expiresIn: 3600 })
 *   })
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * The answer a link gives: an approval's `allow` or `deny`, or `answer` (a form: a client tool's result, a sign-in's
 * sources).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const LinkAnswer = Schema.Literals(["allow", "deny", "answer"])

/**
 * @since 0.1.0
 * @category Schemas
 */
export type LinkAnswer = typeof LinkAnswer.Type

/**
 * What links to make: which answers (default: `allow` and `deny` for an approval, `answer` otherwise), for a named
 * person (default: anyone who holds them), valid for `expiresIn` seconds (default: the server's, 24 hours; at most
 * 30 days).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class CreateLinks extends Schema.Class<CreateLinks>("@parley/core/AnswerLink/CreateLinks")({
  answers: Schema.optionalKey(Schema.Array(LinkAnswer).check(Schema.isMinLength(1))),
  person: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))),
  expiresIn: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 30 * 24 * 3600 })))
}) {}

/**
 * One link: its id (what revokes it and what the log records), the answer it gives, its URL (the capability: shown
 * only to whoever made it, or to the webhook that carries it) and when it expires.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Link extends Schema.Class<Link>("@parley/core/AnswerLink/Link")({
  id: Schema.String,
  answer: LinkAnswer,
  url: Schema.String,
  expiresAt: Schema.String,
  person: Schema.optionalKey(Schema.String)
}) {}

/**
 * The links made for one callback: one per answer.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Links extends Schema.Class<Links>("@parley/core/AnswerLink/Links")({
  links: Schema.Array(Link)
}) {}

/**
 * The server makes no answer links: it has no links secret (501).
 *
 * @since 0.1.0
 * @category Errors
 */
export class AnswerLinksOff extends Schema.TaggedError<AnswerLinksOff>("@parley/core/AnswerLink/AnswerLinksOff")(
  "AnswerLinksOff",
  {},
  { httpApiStatus: 501 }
) {
  override get message(): string {
    return "this server makes no answer links: it has no links secret (the server's `links` option)"
  }
}

/**
 * No open link of this tenant has this id: unknown, another tenant's, used, expired or revoked alike (404).
 *
 * @since 0.1.0
 * @category Errors
 */
export class LinkNotFound extends Schema.TaggedError<LinkNotFound>("@parley/core/AnswerLink/LinkNotFound")(
  "LinkNotFound",
  { linkId: Schema.String },
  { httpApiStatus: 404 }
) {
  override get message(): string {
    return `no open link ${this.linkId}`
  }
}
