/**
 * A session in a component: its record (`useSession`), its events as they come (`useEvents`: the stored ones, then
 * live ones, over `Transport.events`, which resumes a dropped stream with `Last-Event-ID`; each event once, in order,
 * and the text of a message as it streams), and its turns made of them (`useTurns`, `turnsOf`): the user's input,
 * the assistant's messages, tool calls with their arguments and results, callbacks with who answered them (and
 * whether it was from here), subagents, the turn's state.
 *
 * @example
 * ```ts
 * import { Session } from "@parley/react"
 * import { createElement } from "react"
 *
 * const Transcript = (props: { readonly sessionId: string }) => {
 *   const { turns } = Session.useTurns(props.sessionId)
 *   return createElement(
 *     "ol",
 *     null,
 *     turns.map((turn) =>
 *       createElement(
 *         "li",
 *         { key: turn.turnId },
 *         createElement("p", null, turn.input),
 *         turn.items.map((item) =>
 *           item._tag === "Message" ? createElement("p", { key: item.messageId }, item.text) : null
 *         )
 *       )
 *     )
 *   )
 * }
 * ```
 *
 * @since 0.1.0
 */
import type { Answer } from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import type * as Ids from "@parley/core/Ids"
import type { LimitExceeded, SessionNotFound, TransportFailure } from "@parley/core/ParleyError"
import type { Principal } from "@parley/core/Principal"
import type { SessionInfo } from "@parley/core/Transport"
import { Transport } from "@parley/core/Transport"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type * as TurnState from "@parley/core/TurnState"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { useMemo } from "react"
import type * as Store from "./internal/store.js"
import { useFiber } from "./internal/useFiber.js"
import * as ParleyClient from "./ParleyClient.js"

// =============================================================================
// The session's record
// =============================================================================

/**
 * @since 0.1.0
 * @category Models
 */
export interface SessionState {
  readonly info: SessionInfo | undefined
  readonly loading: boolean
  readonly error: SessionNotFound | TransportFailure | LimitExceeded | undefined
}

/**
 * The session's record (agent, parent, creation time), or the typed error of getting it.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useSession = (sessionId: string): SessionState => {
  const client = ParleyClient.useClient()
  return useFiber<SessionState>(
    client,
    () => ({ info: undefined, loading: true, error: undefined }),
    (store) =>
      Effect.gen(function*() {
        const transport = yield* Transport
        return yield* transport.getSession(sessionId as Ids.SessionId)
      }).pipe(
        Effect.match({
          onSuccess: (info) => store.set({ info, loading: false, error: undefined }),
          onFailure: (error) => store.set({ info: undefined, loading: false, error })
        })
      ),
    [sessionId]
  )
}

// =============================================================================
// Its events
// =============================================================================

/**
 * A session's events: `events` are the stored ones (no `MessageDelta`), each once, in the order of the log;
 * `streaming` the text of each message still streaming, by message id (gone at its `MessageCompleted` or
 * `MessageAborted`). `status` is `loading` until the session is found, then `live`; `failed` with the typed `error`
 * (an unknown session, or a request that never reached the server; a stream that drops is resumed, not failed).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Events {
  readonly events: ReadonlyArray<TurnEvent>
  readonly streaming: ReadonlyMap<string, string>
  readonly status: "loading" | "live" | "failed"
  readonly error: SessionNotFound | TransportFailure | LimitExceeded | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface EventsOptions {
  /** The `seq` to start from (default 0: the whole log). */
  readonly from?: number | undefined
}

const noEvents: Events = { events: [], streaming: new Map(), status: "loading", error: undefined }

/**
 * Adds what came to the events: a stored event once (one whose `seq` is not past the last one's was seen already),
 * a delta to its message's streaming text.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const addEvents = (state: Events, arrived: ReadonlyArray<TurnEvent>): Events => {
  let events: Array<TurnEvent> | undefined
  let streaming: Map<string, string> | undefined
  const stored = () => (events ??= [...state.events])
  const texts = () => (streaming ??= new Map(state.streaming))
  for (const event of arrived) {
    if (event._tag === "MessageDelta") {
      texts().set(event.messageId, (texts().get(event.messageId) ?? "") + event.delta)
      continue
    }
    const all = events ?? state.events
    const last = all.length === 0 ? -1 : all[all.length - 1].seq
    if (event.seq <= last) continue
    stored().push(event)
    if (event._tag === "MessageCompleted" || event._tag === "MessageAborted") texts().delete(event.messageId)
  }
  return events === undefined && streaming === undefined
    ? state
    : { ...state, events: events ?? state.events, streaming: streaming ?? state.streaming }
}

const nextSeq = (events: ReadonlyArray<TurnEvent>, from: number) => from

const follow = (client: ParleyClient.ParleyClient, sessionId: string, from: number) => (store: Store.Store<Events>) =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const id = sessionId as Ids.SessionId
    // The stream of an unknown session would wait for it: the session is asked for first.
    yield* transport.getSession(id)
    if (store.get().status !== "live") store.update((state) => ({ ...state, status: "live" }))
    // Forked again on the same store (a second mount), it goes on after the last event it has.
    yield* transport.events(id, nextSeq(store.get().events, from)).pipe(
      Stream.runForEachArray((arrived) =>
        Effect.gen(function*() {
          store.update((state) => addEvents(state, arrived))
          if (arrived.some((event) => event._tag === "CallbackOpened" || event._tag === "CallbackResolved")) {
            yield* ParleyClient.inboxMayHaveChanged(client)
          }
        })
      )
    )
  }).pipe(
    Effect.catch((error) => Effect.sync(() => store.update((state) => ({ ...state, status: "failed", error }))))
  )

/**
 * The session's events, live. For a root session: its whole tree's (its subagents' too), as `Transport.events`
 * gives them.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useEvents = (sessionId: string, options?: EventsOptions): Events => {
  const client = ParleyClient.useClient()
  const from = options?.from ?? 0
  return useFiber(client, () => noEvents, follow(client, sessionId, from), [sessionId, from])
}

// =============================================================================
// Its turns
// =============================================================================

/**
 * What a turn is made of, in the order it happened.
 *
 * @since 0.1.0
 * @category Models
 */
export type Item =
  | {
    readonly _tag: "Message"
    readonly messageId: string
    readonly text: string
    /** The text is still streaming. */
    readonly streaming: boolean
  }
  | {
    readonly _tag: "ToolCall"
    readonly toolCallId: string
    readonly toolId: string
    readonly name: string
    readonly arguments: unknown
    /** Who let it run: a policy, a grant, an answer (none while undecided). */
    readonly decidedBy: Principal | undefined
    /** Its result, once it completed. */
    readonly result: { readonly isFailure: boolean; readonly value: unknown } | undefined
  }
  | {
    readonly _tag: "Callback"
    readonly callback: Callback
    /** How it was resolved (none while it is open). */
    readonly resolution: "answered" | "expired" | "turn_ended" | "cancelled" | undefined
    readonly answer: Answer | undefined
    readonly answeredBy: Principal | undefined
    /** The winning answer is one this client sent (its request id). */
    readonly answeredHere: boolean
  }
  | {
    readonly _tag: "Subagent"
    readonly childSessionId: string
    readonly childTurnId: string
    readonly agent: string
    readonly task: string
    readonly ended: boolean
  }

/**
 * A turn of the session or of one of its subagents (`sessionId` says which).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Turn {
  readonly sessionId: string
  readonly turnId: string
  readonly input: string
  readonly state: "queued" | "running" | "blocked" | "completed" | "failed" | "cancelled"
  readonly items: ReadonlyArray<Item>
  /** How it ended, once it did. */
  readonly final: TurnState.Final | undefined
}

interface Building {
  readonly sessionId: string
  readonly turnId: string
  input: string
  state: Turn["state"]
  items: Array<Item>
  final: TurnState.Final | undefined
}

/**
 * The turns the events tell, in the order they were queued: each with its items, a message's streaming text while it
 * streams (a model step's message shows once it has text: a step that only calls tools has none), and whether each callback's winning answer was one sent from here (`sentAnswers`: request ids by callback
 * id, as `Answer.useAnswer` records them).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const turnsOf = (
  events: ReadonlyArray<TurnEvent>,
  options?: {
    readonly streaming?: ReadonlyMap<string, string> | undefined
    readonly sentAnswers?: ReadonlyMap<string, string> | undefined
  }
): ReadonlyArray<Turn> => {
  const turns = new Map<string, Building>()
  const turnOf = (event: TurnEvent) => turns.get(event.turnId)
  const replace = (turn: Building, find: (item: Item) => boolean, f: (item: Item) => Item) => {
    const index = turn.items.findIndex(find)
    if (index !== -1) turn.items[index] = f(turn.items[index])
  }
  for (const event of events) {
    if (event._tag === "TurnQueued") {
      turns.set(event.turnId, {
        sessionId: event.sessionId,
        turnId: event.turnId,
        input: event.input,
        state: "queued",
        items: [],
        final: undefined
      })
      continue
    }
    const turn = turnOf(event)
    if (turn === undefined) continue
    switch (event._tag) {
      case "TurnStarted":
      case "CallbackResolved":
        if (turn.state === "queued" || turn.state === "blocked") turn.state = "running"
        break
      case "TurnBlocked":
        turn.state = "blocked"
        break
      case "TurnEnded":
        turn.state = event.state._tag === "Completed"
          ? "completed"
          : event.state._tag === "Failed"
          ? "failed"
          : "cancelled"
        turn.final = event.state
        break
    }
    switch (event._tag) {
      case "ModelStepStarted":
        turn.items.push({ _tag: "Message", messageId: event.messageId, text: "", streaming: true })
        break
      case "MessageCompleted":
        replace(turn, (item) => item._tag === "Message" && item.messageId === event.messageId, () => ({
          _tag: "Message",
          messageId: event.messageId,
          text: event.text,
          streaming: false
        }))
        break
      case "MessageAborted":
        turn.items = turn.items.filter((item) => !(item._tag === "Message" && item.messageId === event.messageId))
        break
      case "ToolCallStarted":
        turn.items.push({
          _tag: "ToolCall",
          toolCallId: event.toolCallId,
          toolId: event.toolId,
          name: event.name,
          arguments: event.arguments,
          decidedBy: event.decidedBy,
          result: undefined
        })
        break
      case "ToolCallCompleted":
        replace(turn, (item) => item._tag === "ToolCall" && item.toolCallId === event.toolCallId, (item) => ({
          ...item as Extract<Item, { _tag: "ToolCall" }>,
          result: { isFailure: event.isFailure, value: event.result }
        }))
        break
      case "CallbackOpened":
        turn.items.push({
          _tag: "Callback",
          callback: event.callback,
          resolution: undefined,
          answer: undefined,
          answeredBy: undefined,
          answeredHere: false
        })
        break
      case "CallbackResolved": {
        const sent = options?.sentAnswers?.get(event.callbackId)
        replace(turn, (item) => item._tag === "Callback" && item.callback.id === event.callbackId, (item) => ({
          ...item as Extract<Item, { _tag: "Callback" }>,
          resolution: event.resolution,
          answer: event.answer,
          answeredBy: event.answeredBy,
          answeredHere: sent !== undefined && sent === event.requestId
        }))
        break
      }
      case "SubagentStarted":
        turn.items.push({
          _tag: "Subagent",
          childSessionId: event.childSessionId,
          childTurnId: event.childTurnId,
          agent: event.agent,
          task: event.task,
          ended: false
        })
        break
      case "SubagentEnded":
        replace(turn, (item) => item._tag === "Subagent" && item.childSessionId === event.childSessionId, (item) => ({
          ...item as Extract<Item, { _tag: "Subagent" }>,
          ended: true
        }))
        break
    }
  }
  const streaming = options?.streaming
  return [...turns.values()].map((turn): Turn => ({
    ...turn,
    // A step's message shows once it has text: a step that only calls tools has none.
    items: turn.items.map((item) =>
      item._tag === "Message" && item.streaming ? { ...item, text: streaming?.get(item.messageId) ?? item.text } : item
    ).filter((item) => item._tag !== "Message" || item.text !== "")
  }))
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Turns extends Events {
  readonly turns: ReadonlyArray<Turn>
}

/**
 * The session's turns (`turnsOf` its events, live), with the events they are made of.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useTurns = (sessionId: string, options?: EventsOptions): Turns => {
  const client = ParleyClient.useClient()
  const events = useEvents(sessionId, options)
  const turns = useMemo(
    () => turnsOf(events.events, { streaming: events.streaming, sentAnswers: client.sentAnswers }),
    [events.events, events.streaming, client]
  )
  return { ...events, turns }
}
