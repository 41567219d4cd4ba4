/**
 * The narration of `npm run demo`: what Parley did, one readable line per callback and one per finished turn.
 *
 * ```
 *   » approval client.get_location {"precision":"city"} → approveReads: allow
 *   » sign_in gmail → by id: deny gmail
 *   » client_tool client.lookup_price {"product":"Atlas"} from researcher → lookupPrice: {"price":"1,200 EUR"}
 *   » assistant: Completed
 * ```
 *
 * A callback line says the kind, the tool id and the arguments (the sources, for a sign-in), which subagent asked
 * (when one did), who answered — the `answeredBy` of its `CallbackResolved`, read from the log: the name of a
 * handler, or `by id` — and the answer. It is printed when the answer wins, so a callback answered twice is told
 * once, by its winner.
 *
 * - `layer(runtime)` decorates the runtime's `Transport`: every answer goes through `transport.answer`, whoever sends
 *   it (a handler while `Turn.result` waits, or the program by id), and every turn ends with a `TurnEnded` event.
 * - `handlers({ approveReads, ... })` names the handlers (`CallbackHandler.named`), as `Tool.make`'s `handlerName`
 *   names a tool's handler: the log then records each answer's handler, and a line says which one answered.
 *
 * Lines start with `  » ` (so a reader, and the examples test, tell them from the guides' own output). They are
 * coloured when stdout is a terminal (`NO_COLOR` turns colours off, `FORCE_COLOR` on), plain otherwise.
 */
import type { Answer, Callback, ParleyError, TurnEvent, TurnState } from "@parley/core"
import { CallbackHandler, Principal, Transport } from "@parley/core"
import type { Cause } from "effect"
import { Console, Effect, Layer, Option, Queue, Stream } from "effect"

type SessionNotFound = ParleyError.SessionNotFound
type TransportFailure = ParleyError.TransportFailure

// ----------------------------------------------------------------------------
// Handler names
// ----------------------------------------------------------------------------

/**
 * Names each handler (the record's keys), in order: give the result to `CallbackHandler.layer`. The name is what the
 * log records as `answeredBy` for its answers (`CallbackHandler.named`); the lines read it from there.
 */
export const handlers = (
  named: { readonly [name: string]: CallbackHandler.Handlers | CallbackHandler.Service }
): ReadonlyArray<CallbackHandler.Service> =>
  Object.entries(named).map(([name, handler]) => CallbackHandler.named(name, handler))

// ----------------------------------------------------------------------------
// Lines
// ----------------------------------------------------------------------------

/** Whether to colour: a terminal, unless `NO_COLOR`; or `FORCE_COLOR` (not `0`). */
export const colours = (
  env: { readonly [name: string]: string | undefined } = process.env,
  isTTY: boolean = process.stdout.isTTY === true
): boolean => {
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return true
  return isTTY && (env.NO_COLOR ?? "") === ""
}

const paint = (on: boolean) => (code: number, text: string) => on ? `\x1b[${code}m${text}\x1b[0m` : text

/** The prefix of every narration line. */
export const prefix = "  » "

const json = (value: unknown): string => JSON.stringify(value) ?? String(value)

const subject = (callback: Callback.Callback): string =>
  callback._tag === "OpenSignIn"
    ? callback.requests.map((request) => request.source).join(", ")
    : `${callback.request.tool.id} ${json(callback.request.arguments)}`

const describeAnswer = (callback: Callback.Callback, answer: Answer.Answer): string => {
  switch (answer._tag) {
    case "AllowApproval":
      return "allow"
    case "DenyApproval":
      return answer.reason === undefined ? "deny" : `deny (${answer.reason})`
    case "ClientToolResult":
      return answer.isFailure
        ? `tool error: ${typeof answer.result === "string" ? answer.result : json(answer.result)}`
        : json(answer.result)
    case "SignInAnswer": {
      const source = (id: string) =>
        callback._tag === "OpenSignIn" ? callback.requests.find((request) => request.id === id)?.source ?? id : id
      return [
        answer.connected.length > 0 ? `connect ${answer.connectedIds.map(source).join(", ")}` : [],
        answer.denied.length > 0 ? `deny ${answer.denied.map(source).join(", ")}` : []
      ].flat().join("; ")
    }
  }
}

const kindColour: { readonly [kind in Callback.Kind]: number } = { approval: 33, client_tool: 36, sign_in: 35 }

/** One callback's line: kind, subject, the subagent that asked (if one did), who answered, the answer. */
export const callbackLine = (
  callback: Callback.Callback,
  answer: Answer.Answer,
  who: Principal.Principal | undefined,
  subagent: string | undefined,
  colour: boolean
): string => {
  const c = paint(colour)
  // Over HTTP the log holds the API key and, as the client's word, who answered: the line shows the latter.
  const claimed = who === undefined ? undefined : Principal.claimed(who)
  const by = claimed === undefined ? "by id" : Principal.describe(claimed)
  return prefix + [
    c(1, c(kindColour[callback.kind], callback.kind)),
    subject(callback),
    ...(subagent === undefined ? [] : [c(2, `from ${subagent}`)]),
    "→",
    `${claimed === undefined || claimed._tag === "Client" ? c(33, by) : c(32, by)}: ${describeAnswer(callback, answer)}`
  ].join(" ")
}

const stateColour: { readonly [tag in TurnState.TurnState["_tag"]]: number } = {
  Completed: 32,
  Blocked: 33,
  Failed: 31,
  Cancelled: 33
}

/** A finished turn's line: the agent and the final state (and why, for `Failed`). */
export const endLine = (agent: string, state: TurnState.TurnState, colour: boolean): string => {
  const c = paint(colour)
  const why = state._tag === "Failed" ? `: ${state.error.message}` : ""
  return `${prefix}${c(1, agent)}: ${c(stateColour[state._tag], state._tag)}${why}`
}

// ----------------------------------------------------------------------------
// The Transport decorator
// ----------------------------------------------------------------------------

const narrated = (transport: Transport.Service, colour: boolean): Transport.Service => {
  const ended = new Set<string>()
  const agentOf = (sessionId: Callback.Callback["sessionId"]) =>
    transport.getSession(sessionId).pipe(Effect.map((info) => info.agent), Effect.orElseSucceed(() => "?"))
  /** The callbacks answered through this transport: what their lines show (the log names who answered). */
  const asked = new Map<string, { readonly callback: Callback.Callback; readonly subagent: string | undefined }>()
  const told = new Set<string>()
  /** The line of an answered callback, once, from its `CallbackResolved`: the winning answer and its `answeredBy`. */
  const tell = (event: TurnEvent.TurnEvent) =>
    Effect.suspend(() => {
      if (event._tag !== "CallbackResolved" || event.answer === undefined || told.has(event.callbackId)) {
        return Effect.void
      }
      const entry = asked.get(event.callbackId)
      if (entry === undefined) return Effect.void
      told.add(event.callbackId)
      asked.delete(event.callbackId)
      return Console.log(callbackLine(entry.callback, event.answer, event.answeredBy, entry.subagent, colour))
    })
  /** The lines of answered callbacks, and of a turn that ended (once per turn), in the log's order. */
  const announce = (sessionId: Callback.Callback["sessionId"]) => (event: TurnEvent.TurnEvent) =>
    event._tag === "TurnEnded" && event.sessionId === sessionId && !ended.has(event.turnId)
      ? Effect.flatMap(
        Effect.sync(() => ended.add(event.turnId)),
        () => Effect.flatMap(agentOf(sessionId), (agent) => Console.log(endLine(agent, event.state, colour)))
      )
      : tell(event)
  const answer = (request: Transport.AnswerRequest) =>
    Effect.gen(function*() {
      const snapshot = yield* Effect.option(transport.snapshot(request.sessionId, request.turnId))
      const callback = Option.getOrUndefined(snapshot)?.callbacks.find((open) => open.id === request.callbackId)
      if (callback !== undefined) {
        const subagent = callback.sessionId === request.sessionId ? undefined : yield* agentOf(callback.sessionId)
        asked.set(callback.id, { callback, subagent })
      }
      yield* transport.answer(request)
      if (callback === undefined || Option.isNone(snapshot)) return
      // The answer is in the log: tell the answers stored since the snapshot, up to this one, in order (a reader of
      // the turn's events may have told them already; each is told once).
      yield* transport.events(request.sessionId, snapshot.value.cursor).pipe(
        Stream.takeUntil((event) => event._tag === "CallbackResolved" && event.callbackId === callback.id),
        Stream.runForEach(tell),
        Effect.ignore,
        // Read interruptibly: the stream's reader is a fiber of its own, which must stop when the stream ends.
        Effect.interruptible
      )
    })
  return {
    ...transport,
    // Once a handler decided, its answer is sent even if the wait ends meanwhile (a root turn may end while a handler
    // answers a subagent of an earlier turn): the same in-process as over HTTP, where answering is slower.
    answer: (request) => Effect.uninterruptible(answer(request)),
    events: (sessionId, from) => transport.events(sessionId, from).pipe(Stream.tap(announce(sessionId))),
    // What `Turn.result` reads: each batch is told before it is handed on, so the line comes before the result.
    subscribe: (sessionId, from) =>
      Effect.gen(function*() {
        const source = yield* transport.subscribe(sessionId, from)
        const relay = yield* Queue.unbounded<TurnEvent.TurnEvent, SessionNotFound | TransportFailure | Cause.Done>()
        const move: Effect.Effect<never, SessionNotFound | TransportFailure | Cause.Done> = Effect.flatMap(
          Queue.takeAll(source),
          (batch) =>
            Effect.forEach(batch, announce(sessionId), { discard: true }).pipe(
              Effect.andThen(Queue.offerAll(relay, batch)),
              Effect.andThen(move)
            )
        )
        // The source's end (`Cause.Done`) or failure ends the relay the same way.
        yield* Effect.forkScoped(Effect.catch(move, (error) => Queue.fail(relay, error)))
        return relay
      })
  }
}

/** The runtime's `Transport`, narrated. */
export const layer = <E, R>(runtime: Layer.Layer<Transport.Transport, E, R>): Layer.Layer<Transport.Transport, E, R> =>
  Layer.effect(Transport.Transport, Effect.map(Transport.Transport, (transport) => narrated(transport, colours())))
    .pipe(
      Layer.provide(runtime)
    )
