import { assert, describe, it } from "@effect/vitest"
import type { Ids } from "@parley/core"
import { Credentials, SessionStore } from "@parley/runtime"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"

const treeId = "ses_credentials" as Ids.SessionId
const key = Redacted.make("a test key of at least thirty-two characters")
const tokens = { access_token: "at-secret-1", refresh_token: "rt-secret-1", token_type: "Bearer" }

const withKey = (secret: string) =>
  Layer.effect(
    Credentials.Credentials,
    Effect.provideService(
      Effect.flatMap(Credentials.secretKey, Credentials.make),
      ConfigProvider.ConfigProvider,
      ConfigProvider.fromUnknown({ PARLEY_SECRET_KEY: secret })
    )
  )

describe("Credentials", () => {
  it.effect("the store holds ciphertext only; the credential reads back as set, and is removed", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.services
      const credentials = yield* Credentials.make(key)
      yield* credentials.set(treeId, "connector:mail", tokens)
      const raw = Option.getOrThrow(yield* store.secrets.load(treeId, "connector:mail"))
      assert.notInclude(raw, "at-secret-1")
      assert.notInclude(raw, "rt-secret-1")
      assert.notInclude(raw, "Bearer")
      assert.match(raw, /^v1\./)
      assert.deepStrictEqual(yield* credentials.get(treeId, "connector:mail"), Option.some(tokens))
      yield* credentials.remove(treeId, "connector:mail")
      assert.deepStrictEqual(yield* credentials.get(treeId, "connector:mail"), Option.none())
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("another key, or a row copied to another tree, does not decrypt: CredentialsError", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.services
      yield* (yield* Credentials.make(key)).set(treeId, "connector:mail", tokens)
      const other = yield* Credentials.make(Redacted.make("another key of at least thirty-two characters"))
      const wrongKey = yield* Effect.flip(other.get(treeId, "connector:mail"))
      assert.strictEqual(wrongKey._tag, "CredentialsError")
      assert.include(wrongKey.message, "does not decrypt with this PARLEY_SECRET_KEY")
      const raw = Option.getOrThrow(yield* store.secrets.load(treeId, "connector:mail"))
      yield* store.secrets.save("ses_other" as Ids.SessionId, "connector:mail", raw)
      const copied = yield* Effect.flip(
        (yield* Credentials.make(key)).get("ses_other" as Ids.SessionId, "connector:mail")
      )
      assert.strictEqual(copied._tag, "CredentialsError")
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("refuses to build without PARLEY_SECRET_KEY, or with a short one", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(
        Effect.provideService(
          Layer.build(Credentials.layerConfig),
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({})
        )
      )
      assert.include(String(missing), "PARLEY_SECRET_KEY")
      const short = yield* Effect.flip(Layer.build(withKey("too short")))
      assert.include(String(short), "at least 32 characters")
      const ok = yield* Layer.build(withKey("a key that is long enough for the layer to build"))
      assert.isDefined(ok)
    }).pipe(Effect.scoped, Effect.provide(SessionStore.layerMemory)))
})
