/**
 * What waits for an answer across the key's sessions, read once for the whole page (`Inbox.useOpenCallbacks`) and
 * shared: the inbox lists it, the cards read the answer schema of their callback from it.
 */
import type { Transport } from "@parley/core"
import { Inbox } from "@parley/react"
import type { ReactNode } from "react"
import { createContext, useContext } from "react"

const WaitingContext = createContext<Inbox.OpenCallbacks>({ open: [], loading: true, error: undefined })

export const Provider = (props: { readonly children: ReactNode }): ReactNode => (
  <WaitingContext.Provider value={Inbox.useOpenCallbacks()}>{props.children}</WaitingContext.Provider>
)

export const useWaiting = (): Inbox.OpenCallbacks => useContext(WaitingContext)

export const useOpen = (callbackId: string): Transport.OpenCallback | undefined =>
  useWaiting().open.find((entry) => entry.callback.id === callbackId)
