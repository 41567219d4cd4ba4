/**
 * Answer links: for an open callback, a signed, single-use, expiring URL per answer that a person can follow without
 * an API key — `allow` and `deny` for an approval, `answer` (a small form) for a client tool's result or a sign-in.
 *
 * - **Made through the API** (`POST /sessions/:sessionId/turns/:turnId/callbacks/:callbackId/links`, behind the
 *   tenant's key), optionally for a named person (recorded as the answer's `answeredBy`: `Principal.Link`), with an
 *   expiry (default 24 hours, at most 30 days); revoked by id (`DELETE /links/:linkId`).
 * - **The URL is the capability**: `/l/<id>.<signature>`, the signature an HMAC-SHA256 of the id under the server's
 *   links secret. The link's state (its callback, answer, person, expiry; open, used or revoked) is a row of the
 *   server's own table next to the sessions' (`parley_server_links`); the log and the request log only ever name the
 *   id, which opens nothing without the signature.
 * - **Opening it never answers**: `GET /l/…` shows a confirmation page (what is asked, the answer the link gives, the
 *   form when it needs one); only its form's `POST` answers. A used, expired, revoked, tampered or made-up link gets
 *   the same 404 page, byte for byte. A link whose callback someone else resolved says who answered it.
 * - **Single use**: the `POST` claims the link (open → used) before it answers, so two racing confirmations answer
 *   once; an answer the engine refuses (a result that does not fit the tool's schema) gives the claim back.
 * - The pages are self-contained (no script), sent with `Referrer-Policy: no-referrer`, `Cache-Control: no-store`,
 *   and a content security policy that forbids framing.
 */
import { AllowApproval, type Answer, ClientToolResult, DenyApproval, SignInAnswer } from "@parley/core/Answer"
import * as AnswerLink from "@parley/core/AnswerLink"
import type { Callback } from "@parley/core/Callback"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import {
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  NotAllowedToAnswer,
  TransportFailure
} from "@parley/core/ParleyError"
import { describe as describePrincipal, Link, type Principal } from "@parley/core/Principal"
import { ProtocolApi, Tenant } from "@parley/core/ProtocolApi"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as UrlParams from "effect/http/UrlParams"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as SqlClient from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import * as crypto from "node:crypto"
import type { Access } from "./access.js"
import type * as Served from "./served.js"

// =============================================================================
// Options
// =============================================================================

/** The server's `links` option. */
export interface Options {
  /** The key the links are signed with (at least 32 characters; keep it as secret as the API keys). */
  readonly secret: Redacted.Redacted<string> | string
  /** Where the links point (default: the origin of the request that made them, `http://<Host>`). */
  readonly baseUrl?: string | undefined
  /** How long a link lives unless its request says (default 24 hours). */
  readonly ttl?: Duration.Input | undefined
}

/** The longest a link may live. */
const maxTtl = Duration.days(30)

// =============================================================================
// The table
// =============================================================================

/** What a link answers, and with what. */
export type Kind = AnswerLink.LinkAnswer

export interface Row {
  readonly id: string
  readonly tenant: string
  /** The root session and turn the answer names, and the callback. */
  readonly sessionId: SessionId
  readonly turnId: TurnId
  readonly callbackId: CallbackId
  readonly kind: Kind
  readonly person: string | undefined
  /** Epoch millis. */
  readonly expiresAt: number
  readonly state: "open" | "used" | "revoked"
}

export interface Service {
  readonly insert: (rows: ReadonlyArray<Row>) => Effect.Effect<void, TransportFailure>
  /** `insert`, leaving the rows whose id is taken as they are (the links of a webhook's redelivery). */
  readonly insertMissing: (rows: ReadonlyArray<Row>) => Effect.Effect<void, TransportFailure>
  readonly get: (id: string) => Effect.Effect<Option.Option<Row>, TransportFailure>
  /** open → used; whether this call did it. */
  readonly claim: (id: string) => Effect.Effect<boolean, TransportFailure>
  /** used → open (the answer it was claimed for was refused). */
  readonly release: (id: string) => Effect.Effect<void, TransportFailure>
  /** open → revoked, for the tenant's own link; whether there was one. */
  readonly revoke: (tenant: string, id: string) => Effect.Effect<boolean, TransportFailure>
}

export class AnswerLinks extends Context.Service<AnswerLinks, Service>()("@parley/server/AnswerLinks") {}

const failure = (method: string) => (cause: unknown) =>
  new TransportFailure({
    module: "ParleyServer",
    method,
    description: `the links table failed: ${cause instanceof Error ? cause.message : String(cause)}`
  })

/** In memory: the links live as long as the layer (with an in-memory store). */
export const layerMemory: Layer.Layer<AnswerLinks> = Layer.sync(AnswerLinks, () => {
  const rows = new Map<string, Row>()
  const move = (id: string, from: Row["state"], to: Row["state"], tenant?: string) => {
    const row = rows.get(id)
    if (row === undefined || row.state !== from || (tenant !== undefined && row.tenant !== tenant)) return false
    rows.set(id, { ...row, state: to })
    return true
  }
  return {
    insert: (entries) => Effect.sync(() => entries.forEach((row) => rows.set(row.id, row))),
    insertMissing: (entries) => Effect.sync(() => entries.forEach((row) => rows.has(row.id) || rows.set(row.id, row))),
    get: (id) => Effect.sync(() => Option.fromNullishOr(rows.get(id))),
    claim: (id) => Effect.sync(() => move(id, "open", "used")),
    release: (id) => Effect.sync(() => void move(id, "used", "open")),
    revoke: (tenant, id) => Effect.sync(() => move(id, "open", "revoked", tenant))
  }
})

interface SqlRow {
  readonly id: string
  readonly tenant: string
  readonly session_id: string
  readonly turn_id: string
  readonly callback_id: string
  readonly kind: string
  readonly person: string | null
  readonly expires_at: number | string
  readonly state: string
}

const rowOf = (row: SqlRow): Row => ({
  id: row.id,
  tenant: row.tenant,
  sessionId: row.session_id as SessionId,
  turnId: row.turn_id as TurnId,
  callbackId: row.callback_id as CallbackId,
  kind: row.kind as Kind,
  person: row.person ?? undefined,
  expiresAt: Number(row.expires_at),
  state: row.state as Row["state"]
})

/** On the `SqlClient` in context (the store's database, beside `parley_server_sessions`): SQLite or PostgreSQL. */
export const layerSql: Layer.Layer<AnswerLinks, TransportFailure, SqlClient.SqlClient> = Layer.effect(
  AnswerLinks,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const create = sql`CREATE TABLE IF NOT EXISTS parley_server_links (
      id TEXT PRIMARY KEY,
      tenant TEXT NOT NULL,
      session_id TEXT NOT NULL,
      turn_id TEXT NOT NULL,
      callback_id TEXT NOT NULL,
      kind TEXT NOT NULL,
      person TEXT,
      expires_at BIGINT NOT NULL,
      state TEXT NOT NULL
    )`
    yield* sql.onDialectOrElse({
      // As for the sessions' table: servers that start together on a new database take turns.
      pg: () =>
        sql.withTransaction(
          Effect.andThen(sql`SELECT pg_advisory_xact_lock(hashtext('parley_server_links'))`, create)
        ),
      orElse: () => create
    }).pipe(Effect.mapError(failure("links")))
    const moved = (rows: ReadonlyArray<unknown>) => rows.length > 0
    const values = (rows: ReadonlyArray<Row>) =>
      sql.insert(rows.map((row): Record<string, unknown> => ({
        id: row.id,
        tenant: row.tenant,
        session_id: row.sessionId,
        turn_id: row.turnId,
        callback_id: row.callbackId,
        kind: row.kind,
        person: row.person ?? null,
        expires_at: row.expiresAt,
        state: row.state
      })) as [Record<string, unknown>, ...Array<Record<string, unknown>>])
    return {
      insert: (rows) =>
        rows.length === 0 ? Effect.void : sql`INSERT INTO parley_server_links ${values(rows)}`.pipe(
          Effect.asVoid,
          Effect.mapError(failure("createLinks"))
        ),
      insertMissing: (rows) =>
        rows.length === 0
          ? Effect.void
          : sql`INSERT INTO parley_server_links ${values(rows)} ON CONFLICT (id) DO NOTHING`.pipe(
            Effect.asVoid,
            Effect.mapError(failure("createLinks"))
          ),
      get: (id) =>
        sql<SqlRow>`SELECT * FROM parley_server_links WHERE id = ${id}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), rowOf)),
          Effect.mapError(failure("link"))
        ),
      claim: (id) =>
        sql`UPDATE parley_server_links SET state = 'used' WHERE id = ${id} AND state = 'open' RETURNING id`.pipe(
          Effect.map(moved),
          Effect.mapError(failure("useLink"))
        ),
      release: (id) =>
        sql`UPDATE parley_server_links SET state = 'open' WHERE id = ${id} AND state = 'used'`.pipe(
          Effect.asVoid,
          Effect.mapError(failure("useLink"))
        ),
      revoke: (tenant, id) =>
        sql`UPDATE parley_server_links SET state = 'revoked'
          WHERE id = ${id} AND tenant = ${tenant} AND state = 'open' RETURNING id`.pipe(
          Effect.map(moved),
          Effect.mapError(failure("revokeLink"))
        )
    }
  })
)

// =============================================================================
// Tokens
// =============================================================================

const secretOf = (options: Options) =>
  typeof options.secret === "string" ? options.secret : Redacted.value(options.secret)

const signature = (secret: string, id: string) =>
  crypto.createHmac("sha256", secret).update(`parley-answer-link:${id}`).digest("base64url")

/** The token of a link: its id and its signature. */
export const tokenOf = (secret: string, id: string) => `${id}.${signature(secret, id)}`

/** The id of a genuine token; `undefined` for anything else (compared in constant time). */
export const verify = (secret: string, token: string): string | undefined => {
  const dot = token.lastIndexOf(".")
  if (dot <= 0) return undefined
  const id = token.slice(0, dot)
  if (!/^lnk_[0-9a-f]{24}$/.test(id)) return undefined
  const given = Buffer.from(token.slice(dot + 1))
  const expected = Buffer.from(signature(secret, id))
  return given.length === expected.length && crypto.timingSafeEqual(given, expected) ? id : undefined
}

const newId = () => `lnk_${crypto.randomBytes(12).toString("hex")}`

// =============================================================================
// The API: making and revoking links
// =============================================================================

/** The kinds of link a callback can be answered by. */
const kindsOf = (callback: Callback): ReadonlyArray<Kind> =>
  callback._tag === "OpenApproval" ? ["allow", "deny"] : ["answer"]

/** The rows of new links for a callback (named by its root session and turn), one per kind. */
const rowsOf = (
  options: Options,
  at: Pick<Row, "tenant" | "sessionId" | "turnId" | "callbackId">,
  kinds: ReadonlyArray<Kind>,
  more: {
    readonly person?: string | undefined
    readonly expiresIn?: number | undefined
    readonly id: (kind: Kind) => string
    /** When the links' life starts, epoch millis (default: now). */
    readonly from?: number | undefined
  }
): ReadonlyArray<Row> => {
  const ttl = more.expiresIn === undefined
    ? Duration.min(Duration.fromInputUnsafe(options.ttl ?? "24 hours"), maxTtl)
    : Duration.seconds(more.expiresIn)
  const expiresAt = (more.from ?? Date.now()) + Duration.toMillis(ttl)
  return kinds.map((kind) => ({ ...at, id: more.id(kind), kind, person: more.person, expiresAt, state: "open" }))
}

/** The links as their maker gets them: with their URLs on `baseUrl` (the option's, else `origin`). */
const made = (options: Options, rows: ReadonlyArray<Row>, origin: string): Array<AnswerLink.Link> => {
  const base = (options.baseUrl ?? origin).replace(/\/+$/, "")
  const secret = secretOf(options)
  return rows.map((row) =>
    new AnswerLink.Link({
      id: row.id,
      answer: row.kind,
      url: `${base}/l/${tokenOf(secret, row.id)}`,
      expiresAt: new Date(row.expiresAt).toISOString(),
      ...(row.person === undefined ? {} : { person: row.person })
    })
  )
}

/**
 * The links a webhook's `callback.opened` carries: one per answer of the callback, their ids derived from the
 * callback (an HMAC under the links secret) and their life from when it opened, so that a redelivery carries the
 * same links, made once.
 */
export const forCallback = (
  links: Service,
  options: Options,
  tenant: string,
  callback: Callback,
  root: SessionId,
  origin: string
): Effect.Effect<ReadonlyArray<AnswerLink.Link>, TransportFailure> => {
  const secret = secretOf(options)
  const idOf = (kind: Kind) =>
    `lnk_${crypto.createHmac("sha256", secret).update(`parley-webhook-link:${callback.id}:${kind}`).digest("hex")}`
      .slice(0, 28)
  const rows = rowsOf(
    options,
    {
      tenant,
      sessionId: root,
      turnId: callback.rootTurnId ?? callback.turnId,
      callbackId: callback.id
    },
    kindsOf(callback),
    { id: idOf, from: callback.openedAt.epochMilliseconds }
  )
  return Effect.as(links.insertMissing(rows), made(options, rows, origin))
}

export const group = (transport: Served.Served, access: Access, links: Service, options: Options | undefined) =>
  HttpApiBuilder.group(ProtocolApi, "links", (handlers) =>
    handlers
      .handle("create", ({ params, payload, request }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          if (options === undefined) return yield* new AnswerLink.AnswerLinksOff()
          yield* access.owned(tenant.id, params.sessionId)
          const snapshot = yield* transport.snapshot(params.sessionId, params.turnId)
          const callback = snapshot.callbacks.find((open) => open.id === params.callbackId)
          if (callback === undefined) {
            return yield* new CallbackNotOpen({
              module: "ParleyServer",
              method: "createLinks",
              callbackId: params.callbackId
            })
          }
          const allowed = kindsOf(callback)
          const answers = payload.answers ?? allowed
          const wrong = answers.find((kind) => !allowed.includes(kind))
          if (wrong !== undefined) {
            return yield* new CallbackNotOpen({
              module: "ParleyServer",
              method: "createLinks",
              callbackId: params.callbackId,
              description: `a ${callback.kind} callback is answered by ${allowed.join(" or ")} links, not ${wrong}`
            })
          }
          const rows = rowsOf(
            options,
            {
              tenant: tenant.id,
              sessionId: params.sessionId,
              turnId: params.turnId,
              callbackId: params.callbackId
            },
            [...new Set(answers)],
            { person: payload.person, expiresIn: payload.expiresIn, id: newId }
          )
          yield* links.insert(rows)
          return new AnswerLink.Links({
            links: made(options, rows, `http://${request.headers["host"] ?? "127.0.0.1"}`)
          })
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          const revoked = yield* links.revoke(tenant.id, params.linkId)
          if (!revoked) return yield* new AnswerLink.LinkNotFound({ linkId: params.linkId })
        })))

// =============================================================================
// The pages
// =============================================================================

const escape = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (char) =>
      char === "&" ? "&amp;" : char === "<" ? "&lt;" : char === ">" ? "&gt;" : char === "\"" ? "&quot;" : "&#39;"
  )

const style = `body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.4rem}pre{background:#f3f4f6;padding:.75rem;border-radius:6px;overflow:auto}
button{font:inherit;padding:.5rem 1.25rem;border-radius:6px;border:1px solid #1b1f24;background:#1b1f24;color:#fff}
textarea{width:100%;min-height:8rem;font:14px ui-monospace,monospace}label{display:block;margin:.5rem 0}
.muted{color:#57606a}@media(prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}
pre{background:#161b22}button{background:#e6edf3;color:#0d1117;border-color:#e6edf3}.muted{color:#8b949e}}`

const page = (status: number, title: string, body: string) =>
  HttpServerResponse.text(
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
      `<meta name="viewport" content="width=device-width,initial-scale=1"><title>${escape(title)}</title>` +
      `<style>${style}</style></head><body><h1>${escape(title)}</h1>${body}</body></html>`,
    {
      status,
      contentType: "text/html; charset=utf-8",
      headers: {
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; " +
          "frame-ancestors 'none'; base-uri 'none'"
      }
    }
  )

/** The one page of every link that opens nothing: unknown, tampered, used, expired, revoked. */
const invalid = () =>
  page(404, "This link is not valid", `<p>It may have expired, been used already or been revoked.</p>`)

const what = (callback: Callback) =>
  callback._tag === "OpenSignIn"
    ? `<p>The agent asks to sign in to ${escape(callback.requests.map((request) => request.source).join(", "))}.</p>`
    : `<p>The agent ${callback._tag === "OpenApproval" ? "asks to call" : "asks you to run"} <strong>${
      escape(callback.request.tool.name)
    }</strong> with:</p><pre>${escape(JSON.stringify(callback.request.arguments, null, 2))}</pre>`

const title = (callback: Callback, kind: Kind) =>
  kind === "allow"
    ? `Allow ${callback._tag === "OpenSignIn" ? "the sign-in" : callback.request.tool.name}?`
    : kind === "deny"
    ? `Deny ${callback._tag === "OpenSignIn" ? "the sign-in" : callback.request.tool.name}?`
    : callback._tag === "OpenSignIn"
    ? "Sign in"
    : `Give the result of ${callback.request.tool.name}`

const form = (callback: Callback, kind: Kind, error?: string) => {
  const fields = kind === "allow"
    ? ""
    : kind === "deny"
    ? `<label>Reason (optional)<br><textarea name="reason" style="min-height:4rem"></textarea></label>`
    : callback._tag === "OpenSignIn"
    ? callback.requests.map((request) =>
      `<label><input type="checkbox" name="connected" value="${escape(request.id)}" checked> Connect ${
        escape(request.source)
      }</label>`
    ).join("")
    : `<label>The result, as JSON<br><textarea name="result">{}</textarea></label>`
  const button = kind === "allow" ? "Allow" : kind === "deny" ? "Deny" : "Send"
  return `${error === undefined ? "" : `<p role="alert"><strong>Not sent:</strong> ${escape(error)}</p>`}` +
    `<form method="post">${fields}<p><button type="submit">${button}</button></p></form>` +
    `<p class="muted">Opening this page answered nothing; the button does, once.</p>`
}

/** The answer a confirmed form gives; a message for a form that says nothing that fits. */
const answerOf = (callback: Callback, kind: Kind, fields: UrlParams.UrlParams): Answer | string => {
  if (kind === "allow") return new AllowApproval({})
  if (kind === "deny") {
    const reason = Option.getOrElse(UrlParams.getFirst(fields, "reason"), () => "").trim()
    return new DenyApproval(reason === "" ? {} : { reason })
  }
  if (callback._tag === "OpenSignIn") {
    const connected = UrlParams.getAll(fields, "connected")
    const ids = callback.requests.map((request) => request.id)
    return new SignInAnswer({
      connected: connected.filter((id) => ids.includes(id)),
      denied: ids.filter((id) => !connected.includes(id))
    })
  }
  const text = Option.getOrElse(UrlParams.getFirst(fields, "result"), () => "")
  try {
    return ClientToolResult.success(JSON.parse(text))
  } catch {
    return "the result is not JSON"
  }
}

/** Who resolved the callback, from the session's log (`undefined`: it is not resolved). */
const resolvedBy = (transport: Served.Served, row: Row) =>
  transport.events(row.sessionId, 0).pipe(
    Stream.filter((event) => event._tag === "CallbackResolved" && event.callbackId === row.callbackId),
    Stream.take(1),
    Stream.runHead,
    // A live stream of a session still running: read up to what is stored.
    Effect.timeoutOption("2 seconds"),
    Effect.map(Option.flatten)
  )

const resolvedPage = (principal: Principal | undefined, resolution: string) =>
  page(
    409,
    "Already answered",
    `<p>This request was ${escape(resolution)}${
      principal === undefined ? "" : ` by ${escape(describePrincipal(principal))}`
    }. Nothing was changed.</p>`
  )

/** The session app's routes for links: `GET /l/:token` (the confirmation page) and `POST /l/:token` (confirm). */
export const pages = (transport: Served.Served, links: Service, options: Options | undefined) =>
  HttpRouter.use((router) => {
    const secret = options === undefined ? undefined : secretOf(options)
    /** The link of the path's token, open and unexpired, with its callback if that is still open. */
    const lookup = Effect.gen(function*() {
      const token = (yield* HttpRouter.params).token ?? ""
      const id = secret === undefined ? undefined : verify(secret, token)
      if (id === undefined) return Option.none()
      const row = yield* links.get(id)
      if (Option.isNone(row) || row.value.state !== "open" || row.value.expiresAt <= Date.now()) return Option.none()
      const snapshot = yield* Effect.option(transport.snapshot(row.value.sessionId, row.value.turnId))
      const callback = Option.flatMap(
        snapshot,
        (turn) => Option.fromNullishOr(turn.callbacks.find((open) => open.id === row.value.callbackId))
      )
      return Option.some({ row: row.value, callback })
    })
    const resolved = (row: Row) =>
      Effect.map(resolvedBy(transport, row), (event) =>
        event._tag === "Some" && event.value._tag === "CallbackResolved"
          ? resolvedPage(event.value.answeredBy, event.value.resolution)
          : invalid())
    const show = Effect.gen(function*() {
      const found = yield* lookup
      if (Option.isNone(found)) return invalid()
      const { callback, row } = found.value
      if (Option.isNone(callback)) return yield* resolved(row)
      return page(200, title(callback.value, row.kind), what(callback.value) + form(callback.value, row.kind))
    })
    const confirm = Effect.gen(function*() {
      const found = yield* lookup
      if (Option.isNone(found)) return invalid()
      const { callback, row } = found.value
      if (Option.isNone(callback)) return yield* resolved(row)
      const request = yield* HttpServerRequest.HttpServerRequest
      const fields = yield* Effect.orElseSucceed(request.urlParamsBody, () => UrlParams.empty)
      const answer = answerOf(callback.value, row.kind, fields)
      const again = (error: string) =>
        page(422, title(callback.value, row.kind), what(callback.value) + form(callback.value, row.kind, error))
      if (typeof answer === "string") return again(answer)
      if (!(yield* links.claim(row.id))) return invalid()
      const answered = yield* transport.answer({
        sessionId: row.sessionId,
        turnId: row.turnId,
        callbackId: row.callbackId,
        answer,
        answeredBy: new Link({ tenant: row.tenant, linkId: row.id, person: row.person }),
        requestId: `link:${row.id}`
      }).pipe(Effect.result)
      if (answered._tag === "Success") {
        return page(200, "Done", `<p>Your answer was sent. You can close this page.</p>`)
      }
      const error = answered.failure
      if (error instanceof AnswerMismatch) {
        yield* links.release(row.id)
        return again(error.reason)
      }
      if (error instanceof CallbackAlreadyAnswered || error instanceof CallbackNotOpen) return yield* resolved(row)
      if (error instanceof NotAllowedToAnswer) {
        yield* links.release(row.id)
        return page(
          403,
          "Not yours to answer",
          `<p>This request may only be answered by ${
            escape(
              [
                ...(error.approvers.roles.length === 0
                  ? []
                  : [`someone with the role ${error.approvers.roles.join(" or ")}`]),
                ...error.approvers.principals
              ].join(", or ") || "nobody"
            )
          }. Nothing was sent.</p>`
        )
      }
      yield* links.release(row.id)
      return page(503, "Not sent", `<p>The server could not take the answer now. Try the link again later.</p>`)
    })
    const safe = <R>(effect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>) =>
      Effect.catch(
        effect,
        () => Effect.succeed(page(503, "Not sent", `<p>The server could not take the answer now.</p>`))
      )
    return Effect.all([
      router.add("GET", "/l/:token", safe(show)),
      router.add("POST", "/l/:token", safe(confirm))
    ])
  })
