/**
 * A value that changes, and who to tell: what `useSyncExternalStore` reads. Every hook's state lives in one, filled
 * by a fiber of the client's runtime; React renders whatever it holds now.
 */
export interface Store<A> {
  readonly get: () => A
  readonly set: (value: A) => void
  readonly update: (f: (value: A) => A) => void
  readonly subscribe: (listener: () => void) => () => void
}

export const make = <A>(initial: A): Store<A> => {
  let value = initial
  const listeners = new Set<() => void>()
  const set = (next: A) => {
    if (Object.is(next, value)) return
    value = next
    for (const listener of [...listeners]) listener()
  }
  return {
    get: () => value,
    set,
    update: (f) => set(f(value)),
    subscribe: (listener) => {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    }
  }
}
