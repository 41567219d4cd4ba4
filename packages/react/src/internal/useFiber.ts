/**
 * The hooks' common shape: a store whose state a fiber of the client's runtime keeps up to date while the component
 * is mounted (forked by an effect, interrupted when the component unmounts or its inputs change), read with
 * `useSyncExternalStore`. A fiber may be forked again on the same store (React's StrictMode mounts twice): `run`
 * goes on from the state the store holds, it does not start over.
 */
import type * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { useEffect, useMemo, useSyncExternalStore } from "react"
import type * as ParleyClient from "../ParleyClient.js"
import * as Store from "./store.js"

export const useFiber = <S>(
  client: ParleyClient.ParleyClient,
  initial: () => S,
  run: (store: Store.Store<S>) => Effect.Effect<void, never, ParleyClient.Services>,
  inputs: ReadonlyArray<unknown>
): S => {
  // A new store when the inputs change: the state of one session is never shown for another.
  const store = useMemo(() => Store.make(initial()), [client, ...inputs])
  useEffect(() => {
    const fiber = client.runtime.runFork(run(store))
    return () => void client.runtime.runFork(Fiber.interrupt(fiber))
  }, [store])
  return useSyncExternalStore(store.subscribe, store.get, store.get)
}
