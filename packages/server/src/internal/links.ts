/**
 * Answer links: signed, single-use, expiring URLs that answer one open approval without a key.
 *
 * A link is `<base>/links/<token>`; the token is `<claims>.<signature>`: the claims (base64url JSON: the link's id,
 * the tenant, the session, turn and callback, the answer, the person it was made for, when it expires) and
 * HMAC-SHA256 of them under the server's links secret. Nothing is stored when a link is made; what makes it
 * single-use is the log: the answer it gives carries the request id `link:<linkId>`, so a link whose callback was
 * resolved by it is spent, and one whose callback was resolved otherwise says who answered. Revocations are kept
 * (memory, or the tenants' SQL database).
 *
 * `GET /links/<token>` shows a confirmation page and never answers; the page's form `POST`s to the same URL, which
 * answers. A link that is spent, expired, tampered with, revoked, or of a session its tenant does not own answers
 * exactly like an unknown one (the same 404 page).
 */
import * as Answer from "@parley/core/Answer"
import * as AnswerLink from "@parley/core/AnswerLink"
import type * as Callback from "@parley/core/Callback"
import { type CallbackId, type SessionId, type TurnId } from "@parley/core/Ids"
import { CallbackNotOpen } from "@parley/core/ParleyError"
import { Link as LinkPrincipal } from "@parley/core/Principal"
import * as Principal from "@parley/core/Principal"
import { ProtocolApi, Tenant } from "@parley/core/ProtocolApi"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Stream from "effect/Stream"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import type { Access } from "./access.js"
import type * as Served from "./served.js"
import { storedEnd } from "./sse.js"

export interface Options {
  readonly secret: Redacted.Redacted<string> | string
  /** The server's public URL, the links' base (default: the request's own origin when made through the API). */
  readonly baseUrl?: string | undefined
}

interface Claims {
  readonly l: string
  readonly t: string
  readonly s: SessionId
  readonly u: TurnId
  readonly c: CallbackId
  readonly a: AnswerLink.LinkAnswer
  readonly p?: string | undefined
  /** Expires at, epoch millis. */
  readonly e: number
}

const b64 = (bytes: Buffer | string) => Buffer.from(bytes).toString("base64url")

export interface Links {
  readonly sign: (claims: Claims) => string
  readonly open: (token: string, now: number) => Claims | undefined
  readonly idFor: (callbackId: CallbackId, person: string | undefined) => string
}

export const make = (options: Options): Links => {
  const secret = typeof options.secret === "string" ? options.secret : Redacted.value(options.secret)
  const mac = (text: string) => createHmac("sha256", secret).update(`parley-link.${text}`).digest()
  return {
    sign: (claims) => {
      const body = b64(JSON.stringify(claims))
      return `${body}.${b64(mac(body))}`
    },
    open: (token, now) => {
      const dot = token.indexOf(".")
      if (dot <= 0) return undefined
      const body = token.slice(0, dot)
      const given = Buffer.from(token.slice(dot + 1), "base64url")
      const expected = mac(body)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
      try {
        const claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Claims
        if (typeof claims.e !== "number" || claims.e <= now) return undefined
        if (claims.a !== "allow" && claims.a !== "deny") return undefined
        return claims
      } catch {
        return undefined
      }
    },
    // The links a webhook carries are the same on every redelivery: their id is derived from the callback.
    idFor: (callbackId, person) =>
      `lnk_${
        createHmac("sha256", secret).update(`parley-link-id.${callbackId}.${person ?? ""}`).digest("hex").slice(0, 20)
      }`
  }
}

export const newLinkId = (): string => `lnk_${randomBytes(10).toString("hex")}`

export const requestIdOf = (linkId: string): string => `link:${linkId}`

/** The links of one callback: one URL per answer, under one id. */
export const linksOf = (
  links: Links,
  base: string,
  claims: Omit<Claims, "a">
): AnswerLink.AnswerLinks =>
  new AnswerLink.AnswerLinks({
    linkId: claims.l,
    callbackId: claims.c,
    ...(claims.p === undefined ? {} : { person: claims.p }),
    expiresAt: DateTime.formatIso(DateTime.makeUnsafe(claims.e)),
    links: (["allow", "deny"] as const).map((answer) =>
      new AnswerLink.Link({ answer, url: `${base.replace(/\/$/, "")}/links/${links.sign({ ...claims, a: answer })}` })
    )
  })

/** Revoked link ids (by tenant). */
export interface Revocations {
  readonly revoke: (tenant: string, linkId: string) => Effect.Effect<void>
  readonly isRevoked: (linkId: string) => Effect.Effect<boolean>
}

export const revocationsMemory = (): Revocations => {
  const revoked = new Set<string>()
  return {
    revoke: (_tenant, linkId) => Effect.sync(() => void revoked.add(linkId)),
    isRevoked: (linkId) => Effect.sync(() => revoked.has(linkId))
  }
}

/**
 * Revocations on the `SqlClient` given (the tenants' database: they outlive a restart). A failure to read them is a
 * revoked link (it answers as unknown), never a link that works.
 */
export const revocationsSql = (sql: SqlClient.SqlClient): Effect.Effect<Revocations, SqlError.SqlError> =>
  Effect.gen(function*() {
    const create = sql`CREATE TABLE IF NOT EXISTS parley_server_link_revocations (
      link_id TEXT PRIMARY KEY,
      tenant TEXT NOT NULL
    )`
    yield* sql.onDialectOrElse({
      pg: () =>
        sql.withTransaction(
          Effect.andThen(sql`SELECT pg_advisory_xact_lock(hashtext('parley_server_link_revocations'))`, create)
        ),
      orElse: () => create
    })
    return {
      revoke: (tenant, linkId) =>
        sql`INSERT INTO parley_server_link_revocations (link_id, tenant) VALUES (${linkId}, ${tenant})
          ON CONFLICT (link_id) DO NOTHING`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      isRevoked: (linkId) =>
        sql<{ readonly link_id: string }>`SELECT link_id FROM parley_server_link_revocations
          WHERE link_id = ${linkId}`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orElseSucceed(() => true)
        )
    }
  })

const defaultLifetime = 24 * 3600 * 1000

/** The routes of the API: make links for an open approval, revoke them. */
export const group = (
  transport: Served.Served,
  access: Access,
  links: Links | undefined,
  revocations: Revocations,
  baseUrl: string | undefined
) =>
  HttpApiBuilder.group(ProtocolApi, "links", (handlers) =>
    handlers
      .handle("create", ({ params, payload, request }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          if (links === undefined) {
            return yield* new AnswerLink.LinksUnavailable({
              module: "ParleyServer",
              method: "createLinks",
              description: "this server has no links secret (the links option)"
            })
          }
          const open = yield* transport.listOpen({ sessionId: params.sessionId })
          const found = open.find((entry) => entry.callback.id === params.callbackId)
          if (found === undefined || found.callback.turnId !== params.turnId) {
            return yield* notOpen(params.callbackId)
          }
          if (found.callback._tag !== "OpenApproval") {
            return yield* new AnswerLink.LinksUnavailable({
              module: "ParleyServer",
              method: "createLinks",
              description: `${params.callbackId} is a ${found.callback.kind}: links answer approvals only`
            })
          }
          const now = yield* Clock.currentTimeMillis
          const lifetime = payload.expiresIn === undefined ? defaultLifetime : payload.expiresIn * 1000
          const deadline = found.callback.expiresAt?.epochMilliseconds
          const expires = deadline === undefined ? now + lifetime : Math.min(deadline, now + lifetime)
          const base = baseUrl ?? originOf(request)
          return linksOf(links, base, {
            l: newLinkId(),
            t: tenant.id,
            s: params.sessionId,
            u: params.turnId,
            c: params.callbackId,
            p: payload.person,
            e: expires
          })
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* revocations.revoke(tenant.id, params.linkId)
        })))

const notOpen = (callbackId: CallbackId) =>
  Effect.fail(new CallbackNotOpen({ module: "ParleyServer", method: "createLinks", callbackId }))

const originOf = (request: HttpServerRequest.HttpServerRequest) => {
  const host = request.headers["host"] ?? "127.0.0.1"
  return `http://${host}`
}

// -----------------------------------------------------------------------------
// The pages (no key)
// -----------------------------------------------------------------------------

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const page = (status: number, title: string, body: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
      `<meta name="referrer" content="no-referrer"><title>${escape(title)}</title>` +
      `<style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}` +
      `pre{background:#f4f4f5;padding:.75rem;overflow:auto}button{font:inherit;padding:.5rem 1.25rem}</style>` +
      `</head><body><h1>${escape(title)}</h1>${body}</body></html>`,
    { status, contentType: "text/html; charset=utf-8", headers: { "cache-control": "no-store" } }
  )

/** What every spent, expired, tampered, revoked or foreign link answers: the page of an unknown link. */
const unknown = () => page(404, "This link is not valid", "<p>It may have expired, been used or been revoked.</p>")

/** The callback's resolution in the tree's stored log, if it has one. */
const resolutionOf = (transport: Served.Served, sessionId: SessionId, callbackId: CallbackId) =>
  Effect.gen(function*() {
    const end = yield* storedEnd(transport, sessionId)
    if (end === undefined) return Option.none<Extract<TurnEvent, { _tag: "CallbackResolved" }>>()
    const found = yield* transport.events(sessionId, 0).pipe(
      Stream.filter((event) => event._tag !== "MessageDelta"),
      Stream.takeUntil((event) => event.seq >= end - 1),
      Stream.filter((event): event is Extract<TurnEvent, { _tag: "CallbackResolved" }> =>
        event._tag === "CallbackResolved" && event.callbackId === callbackId
      ),
      Stream.runHead
    )
    return found
  })

const describeRequest = (callback: Callback.OpenApproval) =>
  `<p><code>${escape(callback.request.tool.id)}</code> with</p><pre>${
    escape(JSON.stringify(callback.request.arguments, null, 2))
  }</pre>`

type Looked =
  | { readonly _tag: "Page"; readonly page: HttpServerResponse.HttpServerResponse }
  | { readonly _tag: "Open"; readonly claims: Claims; readonly callback: Callback.OpenApproval }

const shown = (page: HttpServerResponse.HttpServerResponse): Looked => ({ _tag: "Page", page })

/** The pages of the links: `GET` shows, `POST` answers. */
export const pages = (
  transport: Served.Served,
  access: Access,
  links: Links,
  revocations: Revocations
) =>
  HttpRouter.use((router) => {
    /** The link's claims and its open approval, or the page it answers instead. */
    const look = (token: string): Effect.Effect<Looked> =>
      Effect.gen(function*() {
        const claims = links.open(token, yield* Clock.currentTimeMillis)
        if (claims === undefined) return shown(unknown())
        if (yield* revocations.isRevoked(claims.l)) return shown(unknown())
        if (!(yield* access.isOwned(claims.t, claims.s))) return shown(unknown())
        const open = yield* transport.listOpen({ sessionId: claims.s })
        const found = open.find((entry) => entry.callback.id === claims.c)
        if (found !== undefined && found.callback._tag === "OpenApproval" && found.callback.turnId === claims.u) {
          return { _tag: "Open", claims, callback: found.callback } as Looked
        }
        const resolved = yield* resolutionOf(transport, claims.s, claims.c)
        // Spent (answered through this link) or never this tree's: as unknown.
        if (Option.isNone(resolved) || resolved.value.requestId === requestIdOf(claims.l)) {
          return shown(unknown())
        }
        const by = resolved.value.answeredBy === undefined
          ? "nobody recorded"
          : Principal.describe(Principal.claimed(resolved.value.answeredBy))
        return shown(
          page(
            410,
            "Already answered",
            `<p>This approval was ${escape(resolved.value.resolution)}${
              resolved.value.answer === undefined ? "" : ` (${escape(resolved.value.answer._tag)})`
            } by ${escape(by)}.</p>`
          )
        )
      }).pipe(Effect.catch(() => Effect.succeed(shown(unknown()))))

    // (A wildcard route: a token is longer than the router's longest path parameter.)
    const tokenOf = (request: HttpServerRequest.HttpServerRequest) => {
      const path = new URL(request.url, "http://x").pathname
      return path.startsWith("/links/") ? decodeURIComponent(path.slice("/links/".length)) : ""
    }

    return Effect.all([
      router.add("GET", "/links/*", (request) =>
        Effect.gen(function*() {
          const found = yield* look(tokenOf(request))
          if (found._tag === "Page") return found.page
          const { callback, claims } = found
          const verb = claims.a === "allow" ? "Allow" : "Deny"
          return page(
            200,
            `${verb} this call?`,
            describeRequest(callback) +
              (claims.p === undefined ? "" : `<p>This link is for ${escape(claims.p)}.</p>`) +
              `<form method="post"><button type="submit">${verb}</button></form>`
          )
        })),
      router.add("POST", "/links/*", (request) =>
        Effect.gen(function*() {
          const found = yield* look(tokenOf(request))
          if (found._tag === "Page") return found.page
          const { claims } = found
          const answered = yield* transport.answer({
            sessionId: claims.s,
            turnId: claims.u,
            callbackId: claims.c,
            answer: claims.a === "allow" ? new Answer.AllowApproval() : new Answer.DenyApproval({}),
            answeredBy: new LinkPrincipal({ tenant: claims.t, linkId: claims.l, person: claims.p }),
            requestId: requestIdOf(claims.l)
          }).pipe(Effect.result)
          if (answered._tag === "Failure") {
            // Answered meanwhile by someone else (or expired): the page says so.
            const again = yield* look(tokenOf(request))
            return again._tag === "Page" ? again.page : unknown()
          }
          return page(
            200,
            claims.a === "allow" ? "Allowed" : "Denied",
            `<p>Your answer was recorded${claims.p === undefined ? "" : ` for ${escape(claims.p)}`}.</p>`
          )
        }))
    ])
  })
