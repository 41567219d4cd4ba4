/**
 * Who may see what: a session belongs to the tenant of its root session, and another tenant's session answers exactly
 * like an unknown one (the same `SessionNotFound`, made here in both cases: no existence oracle), before anything
 * else of the request is judged but its key, its path and its query (`SessionFirst`: a body that does not decode).
 */
import { SessionId } from "@parley/core/Ids"
import { SessionNotFound } from "@parley/core/ParleyError"
import type { TransportFailure } from "@parley/core/ParleyError"
import type { PayloadTooLarge, TooManyRequests } from "@parley/core/ProtocolApi"
import { SessionFirst, Tenant } from "@parley/core/ProtocolApi"
import * as Effect from "effect/Effect"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Served from "./served.js"
import type * as Sessions from "./sessions.js"

export interface Access {
  /** The root of a session's tree (itself for a root session). */
  readonly rootOf: (
    sessionId: SessionId
  ) => Effect.Effect<SessionId, SessionNotFound | TransportFailure | PayloadTooLarge | TooManyRequests>
  /** Fails with `SessionNotFound` unless the session's tree belongs to `tenant`; gives its root. */
  readonly owned: (
    tenant: string,
    sessionId: SessionId
  ) => Effect.Effect<SessionId, SessionNotFound | TransportFailure | PayloadTooLarge | TooManyRequests>
  /** Whether the session's tree belongs to `tenant` (no error for unknown sessions). */
  readonly isOwned: (
    tenant: string,
    sessionId: SessionId
  ) => Effect.Effect<boolean, TransportFailure | PayloadTooLarge | TooManyRequests>
  /** A root session this server just created: its next requests need not look its root up. */
  readonly created: (sessionId: SessionId) => void
}

/** The one `SessionNotFound` of the server, for unknown and foreign sessions alike. */
export const notFound = (sessionId: string) =>
  new SessionNotFound({ module: "ParleyServer", method: "session", sessionId })

export const make = (transport: Served.Served, sessions: Sessions.Service): Access => {
  /** Parents never change: a session's root is looked up once. */
  const roots = new Map<SessionId, SessionId>()
  const rootOf = (
    sessionId: SessionId
  ): Effect.Effect<SessionId, SessionNotFound | TransportFailure | PayloadTooLarge | TooManyRequests> =>
    Effect.suspend(() => {
      const known = roots.get(sessionId)
      if (known !== undefined) return Effect.succeed(known)
      return transport.getSession(sessionId).pipe(
        Effect.flatMap((info) =>
          info.parentSessionId === undefined ? Effect.succeed(sessionId) : rootOf(info.parentSessionId)
        ),
        Effect.tap((root) => Effect.sync(() => roots.set(sessionId, root)))
      )
    })
  const owned = (tenant: string, sessionId: SessionId) =>
    Effect.gen(function*() {
      const root = yield* Effect.catchTag(rootOf(sessionId), "SessionNotFound", () => Effect.fail(notFound(sessionId)))
      const owner = yield* sessions.tenantOf(root)
      if (Option.isNone(owner) || owner.value !== tenant) return yield* notFound(sessionId)
      return root
    })
  const isOwned = (tenant: string, sessionId: SessionId) =>
    owned(tenant, sessionId).pipe(
      Effect.as(true),
      Effect.catchTag("SessionNotFound", () => Effect.succeed(false))
    )
  return { rootOf, owned, isOwned, created: (sessionId) => void roots.set(sessionId, sessionId) }
}

const isSessionId = Schema.is(SessionId)

/**
 * `ProtocolApi.SessionFirst`: a body that does not decode is refused (400) only when the session of the path is the
 * tenant's; otherwise the request answers the server's one `SessionNotFound`, whatever its body.
 */
export const layerSessionFirst = (access: Access): Layer.Layer<SessionFirst> =>
  HttpApiMiddleware.layerSchemaErrorTransform(SessionFirst, (error) =>
    Effect.gen(function*() {
      if (error.kind !== "Payload") return yield* Effect.fail(error)
      const tenant = yield* Effect.serviceOption(Tenant)
      const sessionId = (yield* HttpRouter.RouteContext).params.sessionId
      if (Option.isNone(tenant) || !isSessionId(sessionId)) return yield* Effect.fail(error)
      if (!(yield* access.isOwned(tenant.value.id, sessionId))) return yield* notFound(sessionId)
      return yield* Effect.fail(error)
    }))
