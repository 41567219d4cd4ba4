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
 * (when one did), who answered — the name of a handler, or `by id` — and the answer. It is printed when the answer
 * wins, so a callback answered twice is told once, by its winner.
 *
 * - `layer(runtime)` decorates the runtime's `Transport`: every answer goes through `transport.answer`, whoever sends
 *   it (a handler while `Turn.result` waits, or the program by id), and every turn ends with a `TurnEnded` event.
 * - `handlers({ approveReads, ... })` and `toolHandler(name, fn)` name the handlers, so that a line can say which one
 *   answered; an answer from no named handler was sent by id.
 *
 * Lines start with `  » ` (so a reader, and the examples test, tell them from the guides' own output). They are
 * coloured when stdout is a terminal (`NO_COLOR` turns colours off, `FORCE_COLOR` on), plain otherwise.
 */
import type { Callback, ParleyError, TurnEvent, TurnState } from "@parley/core"
import { Answer, CallbackHandler, Transport } from "@parley/core"
import type { ClientTool } from "@parley/tools"
import { Console, Effect, Layer, Mailbox, Stream } from "effect"

type SessionNotFound = ParleyError.SessionNotFound
type TransportFailure = ParleyError.TransportFailure

// ----------------------------------------------------------------------------
// Who answered
// ----------------------------------------------------------------------------

/** The handler that answered each callback, by callback id; a callback missing here was answered by id. */
const answeredBy = new Map<string, string>()

const remember = (callbackId: string, name: string) => Effect.sync(() => answeredBy.set(callbackId, name))

/** Names each handler (the record's keys), in order: give the result to `CallbackHandler.layer`. */
export const handlers = (
  named: { readonly [name: string]: CallbackHandler.Handlers | CallbackHandler.Service }
): ReadonlyArray<CallbackHandler.Service> =>
  Object.entries(named).map(([name, handler]) => {
    const service = CallbackHandler.make(handler)
    return {
      handle: (callback, context) =>
        Effect.tap(
          service.handle(callback, context),
          (decision) => decision._tag === "KeepCallbackOpen" ? Effect.void : remember(callback.id, name)
        )
    }
  })

/** Names the handler of a `Tool.make` tool. */
export const toolHandler = <P, S, F = never>(
  name: string,
  fn: ClientTool.Handler<P, S, F>
): ClientTool.Handler<P, S, F> =>
(params, callback) => {
  const result = fn(params, callback)
  if (!Effect.isEffect(result)) {
    if (!Answer.isKeepCallbackOpen(result)) answeredBy.set(callback.id, name)
    return result
  }
  return Effect.tap(result, (value) => Answer.isKeepCallbackOpen(value) ? Effect.void : remember(callback.id, name))
}

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
  who: string | undefined,
  subagent: string | undefined,
  colour: boolean
): string => {
  const c = paint(colour)
  return prefix + [
    c(1, c(kindColour[callback.kind], callback.kind)),
    subject(callback),
    ...(subagent === undefined ? [] : [c(2, `from ${subagent}`)]),
    "→",
    `${who === undefined ? c(33, "by id") : c(32, who)}: ${describeAnswer(callback, answer)}`
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
  /** The line of a turn that ended, once per turn. */
  const announce = (sessionId: Callback.Callback["sessionId"]) => (event: TurnEvent.TurnEvent) =>
    event._tag === "TurnEnded" && event.sessionId === sessionId && !ended.has(event.turnId)
      ? Effect.flatMap(
        Effect.sync(() => ended.add(event.turnId)),
        () => Effect.flatMap(agentOf(sessionId), (agent) => Console.log(endLine(agent, event.state, colour)))
      )
      : Effect.void
  // The lines of answers given at once come in the order the answers were given, not the order they returned in: the
  // same over HTTP (where concurrent answers race) as in-process.
  let tickets = 0
  let printed = 0
  const lines = new Map<number, string | undefined>()
  const settle = (ticket: number, line: string | undefined) =>
    Effect.suspend(() => {
      lines.set(ticket, line)
      const ready: Array<string> = []
      while (lines.has(printed)) {
        const next = lines.get(printed)
        lines.delete(printed)
        printed += 1
        if (next !== undefined) ready.push(next)
      }
      return Effect.forEach(ready, (text) => Console.log(text), { discard: true })
    })
  const answer = (request: Transport.AnswerRequest, ticket: number) =>
    Effect.gen(function*() {
      const open = yield* transport.snapshot(request.sessionId, request.turnId).pipe(
        Effect.map((snapshot) => snapshot.callbacks),
        Effect.orElseSucceed((): ReadonlyArray<Callback.Callback> => [])
      )
      const callback = open.find((candidate) => candidate.id === request.callbackId)
      const subagent = callback === undefined || callback.sessionId === request.sessionId
        ? undefined
        : yield* agentOf(callback.sessionId)
      // The line comes just before the answer is sent: before anything the answer causes, in-process as over HTTP
      // (where the events an answer causes may arrive before its reply). An answer that fails takes its line back
      // only if it was not printed yet.
      const who = callback === undefined ? undefined : answeredBy.get(callback.id)
      if (callback !== undefined) answeredBy.delete(callback.id)
      yield* settle(
        ticket,
        callback === undefined ? undefined : callbackLine(callback, request.answer, who, subagent, colour)
      )
      yield* transport.answer(request)
    })
  return {
    ...transport,
    answer: (request) =>
      Effect.suspend(() => {
        const ticket = tickets++
        // Once a handler decided, its answer is sent even if the wait ends meanwhile (a root turn may end while a
        // handler answers a subagent of an earlier turn): the same in-process as over HTTP, where answering is slower.
        return Effect.uninterruptible(answer(request, ticket)).pipe(
          Effect.onExit((exit) => (exit._tag === "Failure" ? settle(ticket, undefined) : Effect.void))
        )
      }),
    events: (sessionId, from) => transport.events(sessionId, from).pipe(Stream.tap(announce(sessionId))),
    // What `Turn.result` reads: each batch is told before it is handed on, so the line comes before the result.
    subscribe: (sessionId, from) =>
      Effect.gen(function*() {
        const source = yield* transport.subscribe(sessionId, from)
        const told = yield* Mailbox.make<TurnEvent.TurnEvent, SessionNotFound | TransportFailure>()
        const move: Effect.Effect<void, SessionNotFound | TransportFailure> = Effect.flatMap(
          source.takeAll,
          ([batch, done]) =>
            Effect.forEach(batch, announce(sessionId), { discard: true }).pipe(
              Effect.zipRight(told.offerAll(batch)),
              Effect.zipRight(done ? told.end : move)
            )
        )
        yield* Effect.forkScoped(Effect.catchAll(move, (error) => told.fail(error)))
        return told
      })
  }
}

/** The runtime's `Transport`, narrated. */
export const layer = <E, R>(runtime: Layer.Layer<Transport.Transport, E, R>): Layer.Layer<Transport.Transport, E, R> =>
  Layer.effect(Transport.Transport, Effect.map(Transport.Transport, (transport) => narrated(transport, colours())))
    .pipe(
      Layer.provide(runtime)
    )
