/**
 * What waits for an answer: the open callbacks of every session of the key (the inbox), or of one session, each with
 * the JSON Schema of the answer it expects (`OpenCallback`). Read again every `refreshMillis` (default 3 s), at once
 * when an answer is sent from this client, and when a session followed here (`Session.useEvents`) opens or resolves
 * a callback.
 *
 * @example
 * ```ts
 * import { Inbox } from "@parley/react"
 * import { createElement } from "react"
 *
 * const Waiting = () => {
 *   const { open } = Inbox.useOpenCallbacks()
 *   return createElement("p", null, `${open.length} waiting for an answer`)
 * }
 * ```
 *
 * @since 0.1.0
 */
import type * as Callback from "@parley/core/Callback"
import type * as Ids from "@parley/core/Ids"
import type { LimitExceeded, TransportFailure } from "@parley/core/ParleyError"
import type { OpenCallback } from "@parley/core/Transport"
import { Transport } from "@parley/core/Transport"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Store from "./internal/store.js"
import { useFiber } from "./internal/useFiber.js"
import * as ParleyClient from "./ParleyClient.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface OpenCallbacks {
  /** Oldest first within a session's tree. */
  readonly open: ReadonlyArray<OpenCallback>
  /** `true` until the first read. */
  readonly loading: boolean
  /** The last read's failure (the list is the last one read); cleared by the next read that succeeds. */
  readonly error: TransportFailure | LimitExceeded | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** Only this session's own callbacks (not its subagents'). */
  readonly sessionId?: string | undefined
  /** Only this kind. */
  readonly kind?: Callback.Kind | undefined
  /** How often to read them again (default 3000 ms). */
  readonly refreshMillis?: number | undefined
}

const poll = (client: ParleyClient.ParleyClient, options: Options) => (store: Store.Store<OpenCallbacks>) =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const wake = yield* Queue.sliding<void>(1)
    const unsubscribe = client.inboxChanged.subscribe(() => Queue.offerUnsafe(wake, undefined))
    yield* Effect.addFinalizer(() => Effect.sync(unsubscribe))
    const read = transport.listOpen({
      sessionId: options.sessionId as Ids.SessionId | undefined,
      kind: options.kind
    }).pipe(
      Effect.match({
        onSuccess: (open) => store.set({ open, loading: false, error: undefined }),
        onFailure: (error) => store.update((state) => ({ ...state, loading: false, error }))
      })
    )
    for (;;) {
      yield* read
      yield* Queue.take(wake).pipe(Effect.timeoutOption(options.refreshMillis ?? 3000))
    }
  }).pipe(Effect.scoped)

/**
 * The open callbacks (of one session, of one kind, or all), kept up to date.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useOpenCallbacks = (options?: Options): OpenCallbacks => {
  const client = ParleyClient.useClient()
  const given = options ?? {}
  return useFiber(
    client,
    (): OpenCallbacks => ({ open: [], loading: true, error: undefined }),
    poll(client, given),
    [given.sessionId, given.kind, given.refreshMillis]
  )
}
