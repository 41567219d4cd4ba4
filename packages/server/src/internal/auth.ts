/**
 * Bearer API keys: each belongs to a tenant. A key is compared with every known key in constant time (SHA-256 digests
 * compared with `timingSafeEqual`, all of them, no early exit), and never logged: logs name a key by `keyId`, a short
 * digest prefix.
 */
import { Authorization, Tenant, Unauthorized } from "@parley/core/ProtocolApi"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHash, timingSafeEqual } from "node:crypto"
import { CurrentRequest } from "./requestLog.js"

export interface ApiKey {
  readonly key: Redacted.Redacted<string>
  readonly tenant: string
}

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/** A short, non-secret name of a key: the first 8 hex digits of its digest. */
export const keyIdOf = (key: string) => `key_${digest(`parley-key-id:${key}`).toString("hex").slice(0, 8)}`

interface Known {
  readonly digest: Buffer
  readonly tenant: string
  readonly keyId: string
}

/** Finds the key's tenant; looks at every key whatever the outcome. */
export const matcher = (keys: ReadonlyArray<ApiKey>) => {
  const known: ReadonlyArray<Known> = keys.map((entry) => {
    const key = Redacted.value(entry.key)
    return { digest: digest(key), tenant: entry.tenant, keyId: keyIdOf(key) }
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
    return at <= 0
      ? { key: Redacted.make(part), tenant: "default" }
      : { key: Redacted.make(part.slice(0, at)), tenant: part.slice(at + 1) }
  })

/** The `Authorization` middleware of `ProtocolApi` over a set of keys. */
export const layer = (keys: ReadonlyArray<ApiKey>): Layer.Layer<Authorization> =>
  Layer.sync(Authorization, () => {
    const match = matcher(keys)
    return Authorization.of({
      bearer: (httpEffect, { credential }) =>
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
          return yield* Effect.provideService(httpEffect, Tenant, Tenant.of({ id: found.tenant, keyId: found.keyId }))
        })
    })
  })
