/**
 * Secrets of trees: a connector's credentials, kept under a name per tree beside the tree's log (the same database,
 * gone with the tree's rows), replaced whole. The driver keeps a value as it is given: `Credentials` (in
 * `@parley/runtime`) encrypts it first, so a driver only ever holds ciphertext.
 *
 * @example
 * ```ts
 * import type { Ids } from "@parley/core"
 * import { Secrets, SessionStore } from "@parley/log"
 * import { Effect } from "effect"
 *
 * const forget = (treeId: Ids.SessionId) => Effect.gen(function*() {
 *   const secrets = yield* Secrets.Secrets
 *   yield* secrets.delete(treeId, "gmail")
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { SessionId } from "@parley/core/Ids"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StoreError } from "./StoreError.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Keeps a secret of a tree under `name`, replacing the one it had. */
  readonly save: (treeId: SessionId, name: string, value: string) => Effect.Effect<void, StoreError>
  /** The secret of a tree under `name`, as it was saved. */
  readonly load: (treeId: SessionId, name: string) => Effect.Effect<Option.Option<string>, StoreError>
  /** Forgets the secret of a tree under `name`. */
  readonly delete: (treeId: SessionId, name: string) => Effect.Effect<void, StoreError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Secrets extends Context.Service<Secrets, Service>()("@parley/log/Secrets") {}
