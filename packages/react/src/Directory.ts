/**
 * What a session app lists and starts: the agents the server offers (`useAgents`), the sessions of the key with a
 * title, their agent, their time and their state (`useSessions`), a new session of an agent (`useStartSession`), a
 * message sent to a session (`useSendMessage`: one turn however often the connection drops), the grants in force for
 * a session and their revocation (`useGrants`). Each resolves with a `Result` of the server's typed error, never
 * rejects.
 *
 * A session's title and state are read from its own log (`?live=false`: the stored events, then the stream ends): the
 * title is its first message, the state its last turn's (`running`, `waiting` for an answer, `completed`, `failed`,
 * `cancelled`) or `idle` before the first.
 *
 * @example
 * ```ts
 * import { Directory } from "@parley/react"
 * import { createElement } from "react"
 *
 * const Sessions = () => {
 *   const { sessions } = Directory.useSessions()
 *   return createElement(
 *     "ul",
 *     null,
 *     sessions.map((entry) => createElement("li", { key: entry.info.sessionId }, `${entry.title} · ${entry.state}`))
 *   )
 * }
 * ```
 *
 * @since 0.1.0
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type * as Ids from "@parley/core/Ids"
import type { ParleyError } from "@parley/core/ParleyError"
import { isParleyError, TransportFailure } from "@parley/core/ParleyError"
import type { SessionInfo, TurnRef } from "@parley/core/Transport"
import { Transport } from "@parley/core/Transport"
import type { ApprovalGranted, TurnEvent } from "@parley/core/TurnEvent"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import { useCallback, useRef, useState } from "react"
import type * as Store from "./internal/store.js"
import { useFiber } from "./internal/useFiber.js"
import * as ParleyClient from "./ParleyClient.js"

/**
 * A request's typed error: the server's (`ParleyError`), or `TransportFailure` when it never reached it.
 *
 * @since 0.1.0
 * @category Models
 */
export type RequestError = ParleyError

/** Any failure of the protocol's client, as one of core's typed errors (one that never reached the server too). */
const typed = (method: string) => <A, R>(effect: Effect.Effect<A, unknown, R>): Effect.Effect<A, RequestError, R> =>
  effect.pipe(
    Effect.mapError((error): RequestError =>
      isParleyError(error) ? error as RequestError : new TransportFailure({
        module: "@parley/react",
        method,
        description: error instanceof Error ? error.message : String(error)
      })
    )
  )

const run = <A, E>(client: ParleyClient.ParleyClient, effect: Effect.Effect<A, E, ParleyClient.Services>) =>
  client.runtime.runPromise(Effect.result(effect))

// =============================================================================
// Agents
// =============================================================================

/**
 * @since 0.1.0
 * @category Models
 */
export interface Agents {
  readonly agents: ReadonlyArray<AgentSpec>
  readonly loading: boolean
  readonly error: RequestError | undefined
}

/**
 * The agents the server offers (read once, and again while the read fails).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useAgents = (): Agents => {
  const client = ParleyClient.useClient()
  return useFiber<Agents>(
    client,
    () => ({ agents: [], loading: true, error: undefined }),
    (store) =>
      Effect.gen(function*() {
        const api = yield* ParleyClient.Api
        for (;;) {
          const result = yield* Effect.result(typed("agents")(api.agents.list()))
          if (Result.isSuccess(result)) return store.set({ agents: result.success, loading: false, error: undefined })
          store.update((state) => ({ ...state, loading: false, error: result.failure }))
          yield* Effect.sleep("1 second")
        }
      }),
    []
  )
}

/**
 * The example prompts of an agent, from its description: each quoted phrase after `Try:` (`Try: "Deploy the api";
 * "Roll back"`), with the description before it as what it does.
 *
 * @since 0.1.0
 * @category Utils
 */
export const describe = (agent: AgentSpec): { readonly summary: string; readonly examples: ReadonlyArray<string> } => {
  const description = agent.description ?? ""
  const at = description.search(/\bTry:/)
  if (at < 0) return { summary: description.trim(), examples: [] }
  const examples = [...description.slice(at).matchAll(/"([^"]+)"|“([^”]+)”/g)].map((match) => match[1] ?? match[2])
  return { summary: description.slice(0, at).trim(), examples }
}

// =============================================================================
// Sessions
// =============================================================================

/**
 * @since 0.1.0
 * @category Models
 */
export type SessionState = "idle" | "running" | "waiting" | "completed" | "failed" | "cancelled"

/**
 * @since 0.1.0
 * @category Models
 */
export interface SessionEntry {
  readonly info: SessionInfo
  /** Its first message (none yet: empty). */
  readonly title: string
  readonly state: SessionState
  /** When its last event happened (its creation, before any). */
  readonly lastActivity: Date
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Sessions {
  /** Root sessions, newest first. */
  readonly sessions: ReadonlyArray<SessionEntry>
  /** The root of each session listed (subagents' too): where a subagent's callback is shown. */
  readonly rootOf: ReadonlyMap<string, string>
  readonly loading: boolean
  readonly error: RequestError | undefined
}

/**
 * A session's title, state and last activity, from its events.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const summarize = (info: SessionInfo, events: ReadonlyArray<TurnEvent>): SessionEntry => {
  let title = ""
  let state: SessionState = "idle"
  let lastActivity = new Date(info.createdAt.epochMilliseconds)
  for (const event of events) {
    if (event.sessionId !== info.sessionId) continue
    lastActivity = new Date(event.at.epochMilliseconds)
    switch (event._tag) {
      case "TurnQueued":
        if (title === "" && event.cause === undefined) title = event.input
        state = "running"
        break
      case "TurnEnded":
        state = event.state._tag === "Completed"
          ? "completed"
          : event.state._tag === "Failed"
          ? "failed"
          : event.state._tag === "Cancelled"
          ? "cancelled"
          : "waiting"
        break
      case "CallbackOpened":
        state = "waiting"
        break
      case "CallbackResolved":
        state = "running"
        break
    }
  }
  return { info, title, state, lastActivity }
}

const readSessions = (limit: number) => (store: Store.Store<Sessions>) =>
  Effect.gen(function*() {
    const api = yield* ParleyClient.Api
    const page = yield* typed("sessions")(api.sessions.list({ query: { limit } }))
    const parents = new Map(
      page.sessions.map((info) => [info.sessionId as string, info.parentSessionId as string | undefined])
    )
    const rootOf = new Map<string, string>()
    for (const info of page.sessions) {
      let root: string = info.sessionId
      for (let depth = 0; depth < 32 && parents.get(root) !== undefined; depth++) root = parents.get(root)!
      rootOf.set(info.sessionId, root)
    }
    const roots = page.sessions.filter((info) => info.parentSessionId === undefined)
    const sessions = yield* Effect.forEach(roots, (info) =>
      typed("sessions")(
        api.events.stream({ params: { sessionId: info.sessionId }, query: { live: "false" }, headers: {} }).pipe(
          Effect.flatMap(Stream.runCollect),
          Effect.map((events) => summarize(info, Array.from(events)))
        )
      ).pipe(Effect.orElseSucceed(() => summarize(info, []))), { concurrency: 4 })
    store.set({ sessions, rootOf, loading: false, error: undefined })
  }).pipe(
    Effect.catch((error: RequestError) =>
      Effect.sync(() => store.update((state) => ({ ...state, loading: false, error })))
    )
  )

/**
 * @since 0.1.0
 * @category Models
 */
export interface SessionsOptions {
  /** At most this many (default 20, at most 100). */
  readonly limit?: number | undefined
  /**
   * How often to read them again (default 5000 ms); sooner (at most once a second) when a session is started, a
   * message sent or a callback opened, resolved or answered here.
   */
  readonly refreshMillis?: number | undefined
}

/**
 * The key's root sessions, newest first, each with its title, agent, time and state, kept up to date.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useSessions = (options?: SessionsOptions): Sessions => {
  const client = ParleyClient.useClient()
  const limit = options?.limit ?? 20
  const refresh = options?.refreshMillis ?? 5000
  return useFiber<Sessions>(
    client,
    () => ({ sessions: [], rootOf: new Map(), loading: true, error: undefined }),
    (store) =>
      Effect.gen(function*() {
        const wake = yield* Queue.sliding<void>(1)
        const unsubscribe = client.inboxChanged.subscribe(() => Queue.offerUnsafe(wake, undefined))
        yield* Effect.addFinalizer(() => Effect.sync(unsubscribe))
        for (;;) {
          yield* readSessions(limit)(store)
          // Read at most once a second however often they may have changed (each read reads every session's log).
          yield* Effect.sleep(Math.min(1000, refresh))
          yield* Queue.take(wake).pipe(Effect.timeoutOption(refresh))
        }
      }).pipe(Effect.scoped),
    [limit, refresh]
  )
}

// =============================================================================
// Starting a session, sending a message
// =============================================================================

/**
 * @since 0.1.0
 * @category Models
 */
export interface Action<Args extends ReadonlyArray<unknown>, A> {
  readonly run: (...args: Args) => Promise<Result.Result<A, RequestError>>
  readonly pending: boolean
  /** The last call's error (cleared by the next call). */
  readonly error: RequestError | undefined
}

const useAction = <Args extends ReadonlyArray<unknown>, A>(
  f: (...args: Args) => Effect.Effect<A, RequestError, ParleyClient.Services>
): Action<Args, A> => {
  const client = ParleyClient.useClient()
  const [state, setState] = useState<{ readonly pending: number; readonly error: RequestError | undefined }>({
    pending: 0,
    error: undefined
  })
  const latest = useRef(f)
  latest.current = f
  const runIt = useCallback(async (...args: Args) => {
    setState((current) => ({ pending: current.pending + 1, error: undefined }))
    const result = await run(
      client,
      latest.current(...args).pipe(Effect.ensuring(ParleyClient.inboxMayHaveChanged(client)))
    )
    setState((current) => ({
      pending: current.pending - 1,
      error: Result.isFailure(result) ? result.failure : current.error
    }))
    return result
  }, [client])
  return { run: runIt, pending: state.pending > 0, error: state.error }
}

/**
 * Starts a session of one of the server's agents (`run(agent)`: the `AgentSpec` `useAgents` gave).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useStartSession = (): Action<[agent: AgentSpec], SessionInfo> =>
  useAction((agent: AgentSpec) =>
    Effect.gen(function*() {
      const transport = yield* Transport
      return yield* transport.createSession(agent)
    })
  )

/**
 * Sends a message to a session (`run(sessionId, input)`), starting a turn. The same text sent again to the same
 * session after a failure carries the same request id: the server queues it once.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useSendMessage = (): Action<[sessionId: string, input: string], TurnRef> => {
  const last = useRef<{ readonly sessionId: string; readonly input: string; readonly requestId: string }>(undefined)
  return useAction((sessionId: string, input: string) =>
    Effect.gen(function*() {
      const transport = yield* Transport
      const previous = last.current
      const requestId = previous !== undefined && previous.sessionId === sessionId && previous.input === input
        ? previous.requestId
        : `send_${crypto.randomUUID()}`
      last.current = { sessionId, input, requestId }
      const turn = yield* transport.sendMessage(sessionId as Ids.SessionId, input, { requestId })
      last.current = undefined
      return turn
    })
  )
}

// =============================================================================
// Grants
// =============================================================================

/**
 * @since 0.1.0
 * @category Models
 */
export interface Grants {
  readonly grants: ReadonlyArray<ApprovalGranted>
  readonly loading: boolean
  readonly error: RequestError | undefined
  /** Revokes one: calls of its tool ask again. The list is read again. */
  readonly revoke: (grantId: string) => Promise<Result.Result<void, RequestError>>
}

/**
 * The grants in force for a session (its tree's, for a root), read again when its callbacks change, and their
 * revocation.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useGrants = (sessionId: string): Grants => {
  const client = ParleyClient.useClient()
  const state = useFiber<Omit<Grants, "revoke">>(
    client,
    () => ({ grants: [], loading: true, error: undefined }),
    (store) =>
      Effect.gen(function*() {
        const transport = yield* Transport
        const wake = yield* Queue.sliding<void>(1)
        const unsubscribe = client.inboxChanged.subscribe(() => Queue.offerUnsafe(wake, undefined))
        yield* Effect.addFinalizer(() => Effect.sync(unsubscribe))
        for (;;) {
          yield* transport.grants(sessionId as Ids.SessionId).pipe(
            Effect.match({
              onSuccess: (grants) => store.set({ grants, loading: false, error: undefined }),
              onFailure: (error) => store.update((current) => ({ ...current, loading: false, error }))
            })
          )
          yield* Queue.take(wake).pipe(Effect.timeoutOption(10_000))
        }
      }).pipe(Effect.scoped),
    [sessionId]
  )
  const revoke = useCallback(
    (grantId: string) =>
      run(
        client,
        Effect.gen(function*() {
          const transport = yield* Transport
          yield* transport.revokeGrant({ sessionId: sessionId as Ids.SessionId, grantId })
        }).pipe(Effect.ensuring(ParleyClient.inboxMayHaveChanged(client)))
      ),
    [client, sessionId]
  )
  return { ...state, revoke }
}
