/**
 * Which tenant owns which root session: the server's own table next to the store's (`parley_server_sessions`), in
 * memory or on the same SQL database. It also pages a tenant's sessions, newest first (the `Transport` port lists
 * none).
 */
import type { SessionId } from "@parley/core/Ids"
import { TransportFailure } from "@parley/core/ParleyError"
import { SessionInfo } from "@parley/core/Transport"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SqlClient from "effect/sql/SqlClient"

export interface Page {
  readonly sessions: ReadonlyArray<SessionInfo>
  readonly next: string | undefined
}

export interface Service {
  readonly register: (tenant: string, info: SessionInfo) => Effect.Effect<void, TransportFailure>
  readonly tenantOf: (sessionId: SessionId) => Effect.Effect<Option.Option<string>, TransportFailure>
  readonly list: (tenant: string, limit: number, cursor: string | undefined) => Effect.Effect<Page, TransportFailure>
}

export class SessionTenants extends Context.Service<SessionTenants, Service>()("@parley/server/SessionTenants") {}

const failure = (method: string) => (cause: unknown) =>
  new TransportFailure({
    module: "ParleyServer",
    method,
    description: `the sessions table failed: ${cause instanceof Error ? cause.message : String(cause)}`
  })

/** A page cursor: the last session's creation time and id. */
const parseCursor = (cursor: string | undefined): readonly [number, string] | undefined => {
  if (cursor === undefined) return undefined
  const at = cursor.indexOf(":")
  const millis = Number(cursor.slice(0, at))
  return at > 0 && Number.isSafeInteger(millis) ? [millis, cursor.slice(at + 1)] : undefined
}

const pageOf = (rows: ReadonlyArray<SessionInfo>, limit: number): Page => {
  const sessions = rows.slice(0, limit)
  const last = sessions[sessions.length - 1]
  return {
    sessions,
    next: rows.length > limit && last !== undefined
      ? `${DateTime.toEpochMillis(last.createdAt)}:${last.sessionId}`
      : undefined
  }
}

const newestFirst = (a: SessionInfo, b: SessionInfo) => {
  const byTime = DateTime.toEpochMillis(b.createdAt) - DateTime.toEpochMillis(a.createdAt)
  return byTime !== 0 ? byTime : a.sessionId < b.sessionId ? 1 : a.sessionId > b.sessionId ? -1 : 0
}

const before = (info: SessionInfo, cursor: readonly [number, string] | undefined) => {
  if (cursor === undefined) return true
  const millis = DateTime.toEpochMillis(info.createdAt)
  return millis < cursor[0] || (millis === cursor[0] && info.sessionId < cursor[1])
}

/** In memory: the sessions live as long as the layer (with an in-memory store). */
export const layerMemory: Layer.Layer<SessionTenants> = Layer.sync(SessionTenants, () => {
  const owners = new Map<SessionId, { readonly tenant: string; readonly info: SessionInfo }>()
  return {
    register: (tenant, info) => Effect.sync(() => void owners.set(info.sessionId, { tenant, info })),
    tenantOf: (sessionId) => Effect.sync(() => Option.fromNullishOr(owners.get(sessionId)?.tenant)),
    list: (tenant, limit, cursor) =>
      Effect.sync(() => {
        const after = parseCursor(cursor)
        const rows = Array.from(owners.values())
          .filter((entry) => entry.tenant === tenant && before(entry.info, after))
          .map((entry) => entry.info)
          .sort(newestFirst)
        return pageOf(rows.slice(0, limit + 1), limit)
      })
  }
})

interface Row {
  readonly session_id: string
  readonly tenant: string
  readonly agent: string
  readonly created_at: number | string
}

const infoOf = (row: Row) =>
  new SessionInfo({
    sessionId: row.session_id as SessionId,
    agent: row.agent,
    createdAt: DateTime.makeUnsafe(Number(row.created_at))
  })

/** On the `SqlClient` in context (the store's database): SQLite or PostgreSQL. */
export const layerSql: Layer.Layer<SessionTenants, TransportFailure, SqlClient.SqlClient> = Layer.effect(
  SessionTenants,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const create = Effect.andThen(
      sql`CREATE TABLE IF NOT EXISTS parley_server_sessions (
        session_id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        agent TEXT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
      sql`CREATE INDEX IF NOT EXISTS parley_server_sessions_by_tenant
        ON parley_server_sessions (tenant, created_at DESC, session_id DESC)`
    )
    yield* sql.onDialectOrElse({
      sqlite: () => Effect.andThen(sql`PRAGMA busy_timeout = 10000`, create),
      // Servers that start together on a new database would race: PostgreSQL's `IF NOT EXISTS` is no lock (the
      // loser fails on the catalog's unique index). One at a time, under a lock held until the transaction ends.
      pg: () =>
        sql.withTransaction(
          Effect.andThen(sql`SELECT pg_advisory_xact_lock(hashtext('parley_server_sessions'))`, create)
        ),
      orElse: () => create
    })
    const cache = new Map<SessionId, string>()
    const service: Service = {
      register: (tenant, info) =>
        sql`INSERT INTO parley_server_sessions ${
          sql.insert({
            session_id: info.sessionId,
            tenant,
            agent: info.agent,
            created_at: DateTime.toEpochMillis(info.createdAt)
          })
        }`.pipe(
          Effect.tap(() => Effect.sync(() => cache.set(info.sessionId, tenant))),
          Effect.asVoid,
          Effect.mapError(failure("register"))
        ),
      tenantOf: (sessionId) =>
        Effect.suspend(() => {
          const known = cache.get(sessionId)
          if (known !== undefined) return Effect.succeed(Option.some(known))
          return sql<{ readonly tenant: string }>`SELECT tenant FROM parley_server_sessions
            WHERE session_id = ${sessionId}`.pipe(
            Effect.map((rows) => {
              const row = rows[0]
              if (row === undefined) return Option.none<string>()
              cache.set(sessionId, row.tenant)
              return Option.some(row.tenant)
            }),
            Effect.mapError(failure("tenantOf"))
          )
        }),
      list: (tenant, limit, cursor) => {
        const after = parseCursor(cursor)
        const rows = after === undefined
          ? sql<Row>`SELECT * FROM parley_server_sessions WHERE tenant = ${tenant}
              ORDER BY created_at DESC, session_id DESC LIMIT ${limit + 1}`
          : sql<Row>`SELECT * FROM parley_server_sessions WHERE tenant = ${tenant}
              AND (created_at < ${after[0]} OR (created_at = ${after[0]} AND session_id < ${after[1]}))
              ORDER BY created_at DESC, session_id DESC LIMIT ${limit + 1}`
        return rows.pipe(
          Effect.map((found) => pageOf(found.map(infoOf), limit)),
          Effect.mapError(failure("list"))
        )
      }
    }
    return service
  }).pipe(Effect.mapError(failure("layerSql")))
)
