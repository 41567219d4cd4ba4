/**
 * Credentials of a session tree (a connector's OAuth tokens, a sign-in in progress), kept in the store's `Secrets`
 * encrypted at rest: AES-256-GCM with a key derived from `PARLEY_SECRET_KEY`, bound to the tree and the name (a row
 * copied to another tree does not decrypt). The store only ever holds ciphertext; credentials never enter the event log
 * and are never logged. Without a key, the layer refuses to build.
 *
 * @example
 * ```ts
 * import { Credentials, SessionStore } from "@parley/runtime"
 * import { Layer } from "effect"
 *
 * // reads PARLEY_SECRET_KEY (at least 32 characters); fails with a ConfigError without it
 * const CredentialsLive = Credentials.layerConfig.pipe(Layer.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { SessionId } from "@parley/core/Ids"
import { Secrets } from "@parley/log/Secrets"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"

/**
 * A credential could not be read or kept: the store failed, or a stored value does not decrypt with this key (it was
 * written with another `PARLEY_SECRET_KEY`, or changed).
 *
 * @since 0.1.0
 * @category Errors
 */
export class CredentialsError
  extends Schema.TaggedError<CredentialsError>("@parley/runtime/Credentials/CredentialsError")(
    "CredentialsError",
    {
      module: Schema.String,
      method: Schema.String,
      description: Schema.String,
      cause: Schema.optional(Schema.Defect())
    }
  )
{
  override get message(): string {
    return `${this.module}.${this.method}: ${this.description}`
  }
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** The credential of `treeId` under `name`, decrypted, as it was set (JSON). */
  readonly get: (treeId: SessionId, name: string) => Effect.Effect<Option.Option<unknown>, CredentialsError>
  /** Sets the credential of `treeId` under `name` (any JSON value), encrypted before it reaches the store. */
  readonly set: (treeId: SessionId, name: string, value: unknown) => Effect.Effect<void, CredentialsError>
  readonly remove: (treeId: SessionId, name: string) => Effect.Effect<void, CredentialsError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Credentials extends Context.Service<Credentials, Service>()("@parley/runtime/Credentials") {}

const version = "v1"
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url")

/**
 * The credentials kept in the store's `Secrets` in context, encrypted with `secretKey` (at least 32 characters).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (secretKey: Redacted.Redacted<string>): Effect.Effect<Service, never, Secrets> =>
  Effect.gen(function*() {
    const secrets = yield* Secrets
    const key = Crypto.hkdfSync("sha256", Redacted.value(secretKey), "parley", "parley/credentials/v1", 32)
    const aad = (treeId: string, name: string) => Buffer.from(`${treeId}\u0000${name}`)
    const failure = (method: string, description: string) => (cause: unknown) =>
      new CredentialsError({ module: "Credentials", method, description, cause })

    const seal = (treeId: string, name: string, value: unknown) => {
      const iv = Crypto.randomBytes(12)
      const cipher = Crypto.createCipheriv("aes-256-gcm", Buffer.from(key), iv).setAAD(aad(treeId, name))
      const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()])
      return [version, base64(iv), base64(cipher.getAuthTag()), base64(body)].join(".")
    }
    const open = (treeId: string, name: string, sealed: string): unknown => {
      const [v, iv, tag, body] = sealed.split(".")
      if (v !== version || iv === undefined || tag === undefined || body === undefined) {
        throw new Error("not a sealed credential")
      }
      const decipher = Crypto.createDecipheriv("aes-256-gcm", Buffer.from(key), Buffer.from(iv, "base64url"))
        .setAAD(aad(treeId, name))
        .setAuthTag(Buffer.from(tag, "base64url"))
      return JSON.parse(Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString())
    }

    return {
      get: (treeId, name) =>
        secrets.load(treeId, name).pipe(
          Effect.mapError(failure("get", `could not read the credential ${name} of tree ${treeId}`)),
          Effect.flatMap(Option.match({
            onNone: () => Effect.succeedNone,
            onSome: (sealed) =>
              Effect.try({
                try: () => Option.some(open(treeId, name, sealed)),
                catch: failure(
                  "get",
                  `the credential ${name} of tree ${treeId} does not decrypt with this PARLEY_SECRET_KEY`
                )
              })
          }))
        ),
      set: (treeId, name, value) =>
        Effect.try({
          try: () => seal(treeId, name, value),
          catch: failure("set", `could not encrypt the credential ${name}`)
        }).pipe(
          Effect.flatMap((sealed) =>
            Effect.mapError(
              secrets.save(treeId, name, sealed),
              failure("set", `could not keep the credential ${name} of tree ${treeId}`)
            )
          )
        ),
      remove: (treeId, name) =>
        Effect.mapError(
          secrets.delete(treeId, name),
          failure("remove", `could not forget the credential ${name} of tree ${treeId}`)
        )
    } satisfies Service
  })

/**
 * The key from config: `PARLEY_SECRET_KEY`, at least 32 characters. Missing or short, it is a `ConfigError`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const secretKey: Config.Config<Redacted.Redacted<string>> = Config.schema(
  Schema.Redacted(Schema.String).check(
    Schema.makeFilter((key) =>
      Redacted.value(key).length >= 32 ||
      "PARLEY_SECRET_KEY must have at least 32 characters (e.g. `openssl rand -base64 32`)"
    )
  ),
  "PARLEY_SECRET_KEY"
)

/**
 * Credentials with the given key, over the store's `Secrets` in context.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (secretKey: Redacted.Redacted<string>): Layer.Layer<Credentials, never, Secrets> =>
  Layer.effect(Credentials, make(secretKey))

/**
 * Credentials with the key `PARLEY_SECRET_KEY` from config, over the store's `Secrets` in context. Refuses to build
 * without a key: tokens are never stored unencrypted.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig: Layer.Layer<Credentials, Config.ConfigError, Secrets> = Layer.effect(
  Credentials,
  Effect.flatMap(secretKey, make)
)
