/**
 * Bearer API keys: each belongs to a tenant. A key is compared with every known key in constant time (SHA-256 digests
 * compared with `timingSafeEqual`, all of them, no early exit), and never logged: logs name a key by `keyId`, a short
 * digest prefix. Each key is held to the server's limits on requests: so many in flight at once, so many sessions
 * started a minute (429 `TooManyRequests` with `Retry-After`, before the handler runs).
 */
import { Authorization, Tenant, TooManyRequests, Unauthorized } from "@parley/core/ProtocolApi"
import * as Effect from "effect/Effect"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHash, timingSafeEqual } from "node:crypto"
import { CurrentRequest } from "./requestLog.js"

export interface ApiKey {
  readonly key: Redacted.Redacted<string>
  readonly tenant: string
  readonly roles?: ReadonlyArray<string> | undefined
}

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/** A short, non-secret name of a key: the first 8 hex digits of its digest. */
export const keyIdOf = (key: string) => `key_${digest(`parley-key-id:${key}`).toString("hex").slice(0, 8)}`

interface Known {
  readonly digest: Buffer
  readonly tenant: string
  readonly keyId: string
  readonly roles: ReadonlyArray<string>
}

/** Finds the key's tenant; looks at every key whatever the outcome. */
export const matcher = (keys: ReadonlyArray<ApiKey>) => {
  const known: ReadonlyArray<Known> = keys.map((entry) => {
    const key = Redacted.value(entry.key)
    return { digest: digest(key), tenant: entry.tenant, keyId: keyIdOf(key), roles: entry.roles ?? [] }
  })
  return (presented: string): Known | undefined => {
    const candidate = digest(presented)
    let found: Known | undefined
    for (const entry of known) {
      if (timingSafeEqual(candidate, entry.digest) && presented.length > 0) found = entry
    }
    return found
  }
}

/** Parses `key:tenant,key2:tenant2` (`PARLEY_API_KEYS`). */
export const parseKeys = (text: string): ReadonlyArray<ApiKey> =>
  text.split(",").map((part) => part.trim()).filter((part) => part.length > 0).map((part) => {
    const at = part.lastIndexOf(":")
    if (at <= 0) return { key: Redacted.make(part), tenant: "default" }
    // `tenant#role+role`: the key's roles follow its tenant
    const [tenant, roles] = part.slice(at + 1).split("#", 2)
    const listed = (roles ?? "").split("+").map((role) => role.trim()).filter((role) => role.length > 0)
    return { key: Redacted.make(part.slice(0, at)), tenant, ...(listed.length === 0 ? {} : { roles: listed }) }
  })

// =============================================================================
// Limits per key
// =============================================================================

/** What one key may ask of the server at once, and a minute. */
export interface Limits {
  /** Requests in flight at once (their handlers running: a long poll counts while it waits). */
  readonly maxRequests: number
  /** Sessions started in any 60 seconds. */
  readonly sessionsPerMinute: number
}

const minute = 60_000

/** The requests in flight and the recent session starts of every key (this process's). */
const makeCounters = (limits: Limits) => {
  const inFlight = new Map<string, number>()
  const starts = new Map<string, Array<number>>()
  return {
    /** Takes a request slot of `keyId`, or says why not. */
    enter: (keyId: string, startsSession: boolean, now: number): TooManyRequests | undefined => {
      const current = inFlight.get(keyId) ?? 0
      if (current >= limits.maxRequests) {
        return new TooManyRequests({ what: "requests", limit: limits.maxRequests, retryAfter: 1 })
      }
      if (startsSession) {
        const recent = (starts.get(keyId) ?? []).filter((at) => now - at < minute)
        if (recent.length >= limits.sessionsPerMinute) {
          starts.set(keyId, recent)
          const retryAfter = Math.max(1, Math.ceil((recent[0] + minute - now) / 1000))
          return new TooManyRequests({ what: "sessions", limit: limits.sessionsPerMinute, retryAfter })
        }
        recent.push(now)
        starts.set(keyId, recent)
      }
      inFlight.set(keyId, current + 1)
      return undefined
    },
    leave: (keyId: string) => {
      const left = (inFlight.get(keyId) ?? 1) - 1
      if (left <= 0) inFlight.delete(keyId)
      else inFlight.set(keyId, left)
    }
  }
}

/** A 429 with the seconds to wait in `Retry-After` (the body says the same). */
const tooMany = (error: TooManyRequests) =>
  HttpServerResponse.jsonUnsafe(error, { status: 429, headers: { "retry-after": String(error.retryAfter) } })

/** The `Authorization` middleware of `ProtocolApi` over a set of keys, each held to `limits`. */
export const layer = (keys: ReadonlyArray<ApiKey>, limits: Limits): Layer.Layer<Authorization> =>
  Layer.sync(Authorization, () => {
    const match = matcher(keys)
    const counters = makeCounters(limits)
    return Authorization.of({
      bearer: (httpEffect, { credential, endpoint, group }) =>
        Effect.gen(function*() {
          const found = match(Redacted.value(credential))
          if (found === undefined) {
            return yield* new Unauthorized({ description: "a valid API key is required (Authorization: Bearer …)" })
          }
          const request = yield* Effect.serviceOption(CurrentRequest)
          if (Option.isSome(request)) {
            request.value.tenant = found.tenant
            request.value.keyId = found.keyId
          }
          const startsSession = group.identifier === "sessions" && endpoint.identifier === "create"
          const refused = counters.enter(found.keyId, startsSession, Date.now())
          if (refused !== undefined) return tooMany(refused)
          return yield* Effect.provideService(
            httpEffect,
            Tenant,
            Tenant.of({ id: found.tenant, keyId: found.keyId, roles: found.roles })
          )
            .pipe(Effect.ensuring(Effect.sync(() => counters.leave(found.keyId))))
        })
    })
  })
