/**
 * Whether the server answers: `Connecting` until a first response, `Connected` while requests get answers,
 * `Unreachable` while they never reach it (the network, a server that is down or restarting: the event streams keep
 * reconnecting, and the state turns `Connected` by itself when one gets through), `KeyRefused` when the server answers
 * 401 (another key is needed). Every request of the client tells it: the event streams, the inbox's polls, answers.
 *
 * @example
 * ```ts
 * import { Connection } from "@parley/react"
 * import { createElement } from "react"
 *
 * const Banner = () => {
 *   const connection = Connection.useConnection()
 *   return connection._tag === "Unreachable"
 *     ? createElement("p", { role: "alert" }, "The server is unreachable: trying again…")
 *     : null
 * }
 * ```
 *
 * @since 0.1.0
 */
import { useSyncExternalStore } from "react"
import * as ParleyClient from "./ParleyClient.js"

/**
 * @since 0.1.0
 * @category Models
 */
export type State =
  | { readonly _tag: "Connecting" }
  | { readonly _tag: "Connected"; readonly since: number }
  | { readonly _tag: "Unreachable"; readonly since: number; readonly reason: string }
  | { readonly _tag: "KeyRefused"; readonly since: number }

/**
 * The connection's state, re-rendering when it changes.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useConnection = (): State => {
  const client = ParleyClient.useClient()
  return useSyncExternalStore(client.connection.subscribe, client.connection.get, client.connection.get)
}
