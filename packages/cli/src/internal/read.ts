/**
 * The commands that read: `sessions list`, `sessions show <id>`, `callbacks list`, `events <session>`.
 */
import { Kind } from "@parley/core/Callback"
import { SessionId } from "@parley/core/Ids"
import { OpenCallback } from "@parley/core/Transport"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Connection from "./connection.js"
import { CliError } from "./errors.js"
import * as Format from "./format.js"

const sessionIdArg = Argument.String("session-id").pipe(
  Argument.withSchema(SessionId),
  Argument.withDescription("The session's id (ses_…, as sessions list shows).")
)

const list = Command.make("list", { ...Connection.options }, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    const page = yield* Connection.withApi(connection, (client) => client.sessions.list({ query: { limit: 100 } }))
    if (page.sessions.length === 0) return yield* Console.log("no sessions")
    yield* Console.log(Format.table(
      ["SESSION", "AGENT", "PARENT", "CREATED"],
      page.sessions.map((session) => [
        session.sessionId,
        session.agent,
        session.parentSessionId ?? "-",
        DateTime.formatIso(session.createdAt)
      ])
    ))
  })).pipe(
    Command.withDescription("The sessions of this key, newest first: id, agent, parent session, creation time."),
    Command.withShortDescription("The sessions of this key, newest first."),
    Command.withExamples([{ command: "parley sessions list" }])
  )

interface TurnRow {
  readonly turnId: string
  readonly input: string
  state: string
}

/** The turns of a log, in order, each with its state as the log says it. */
const turnsOf = (events: ReadonlyArray<TurnEvent>): ReadonlyArray<TurnRow> => {
  const turns = new Map<string, TurnRow>()
  for (const event of events) {
    if (event._tag === "TurnQueued") {
      turns.set(event.turnId, { turnId: event.turnId, input: event.input, state: "queued" })
    }
    const turn = turns.get(event.turnId)
    if (turn === undefined) continue
    if (event._tag === "TurnStarted" || event._tag === "CallbackResolved") turn.state = "running"
    if (event._tag === "TurnBlocked") turn.state = "blocked"
    if (event._tag === "TurnEnded") turn.state = event.state._tag
  }
  return [...turns.values()]
}

const show = Command.make(
  "show",
  { ...Connection.options, sessionId: sessionIdArg },
  (given) =>
    Effect.gen(function*() {
      const connection = yield* Connection.resolve(given)
      const info = yield* Connection.withTransport(connection, (transport) => transport.getSession(given.sessionId))
      const events = yield* Connection.storedEvents(connection, given.sessionId, 0)
      const open = yield* Connection.withTransport(connection, (transport) => transport.listOpen())
      const tree = new Set(events.map((event) => event.sessionId))
      yield* Console.log(
        `${Format.bold(info.sessionId)}  agent ${info.agent}  created ${DateTime.formatIso(info.createdAt)}${
          info.parentSessionId === undefined ? "" : `  parent ${info.parentSessionId}`
        }`
      )
      const turns = turnsOf(events.filter((event) => event.sessionId === info.sessionId))
      yield* Console.log("")
      yield* Console.log(
        turns.length === 0 ? "no turns" : Format.table(
          ["TURN", "STATE", "INPUT"],
          turns.map((turn) => [turn.turnId, turn.state, Format.shortJson(turn.input, 60)])
        )
      )
      const waiting = open.filter((entry) => tree.has(entry.callback.sessionId))
      yield* Console.log("")
      yield* Console.log(
        waiting.length === 0 ? "no open callbacks" : Format.callbackTable(waiting, Date.now())
      )
    })
).pipe(
  Command.withDescription("A session: its turns and their states, and the callbacks its tree waits on."),
  Command.withExamples([{ command: "parley sessions show ses_9f8e" }])
)

export const sessions = Command.make("sessions").pipe(
  Command.withDescription("The sessions of this key: list them, or show one's turns and what it waits on."),
  Command.withShortDescription("The sessions of this key."),
  Command.withExamples([{ command: "parley sessions list" }, { command: "parley sessions show ses_9f8e" }]),
  Command.withSubcommands([list, show])
)

const encodeOpen = Schema.encodeSync(Schema.Array(OpenCallback))

const callbacksList = Command.make("list", {
  ...Connection.options,
  session: Flag.String("session").pipe(
    Flag.withSchema(SessionId),
    Flag.withMetavar("SESSION-ID"),
    Flag.withDescription("Only this session's own callbacks (not its subagents')."),
    Flag.optional
  ),
  kind: Flag.Literals("kind", Kind.literals).pipe(
    Flag.withMetavar("KIND"),
    Flag.withDescription("Only callbacks of this kind."),
    Flag.optional
  ),
  json: Flag.Boolean("json").pipe(
    Flag.withDescription("Print them as JSON: each callback and the JSON Schema of the answer it expects."),
    Flag.withDefault(false)
  )
}, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    const open = yield* Connection.withTransport(connection, (transport) =>
      transport.listOpen({
        sessionId: Option.getOrUndefined(given.session),
        kind: Option.getOrUndefined(given.kind)
      }))
    if (given.json) return yield* Console.log(JSON.stringify(encodeOpen(open), null, 2))
    if (open.length === 0) return yield* Console.log("nothing waits for an answer")
    yield* Console.log(Format.callbackTable(open, Date.now()))
    yield* Console.log(
      Format.dim(`answer one: parley answer <ID> allow | deny | --result '<json>' | --connected <src>`)
    )
  })).pipe(
    Command.withDescription(
      "Everything that waits for an answer, across the sessions of this key: approvals, client tools, sign-ins."
    ),
    Command.withShortDescription("Everything that waits for an answer."),
    Command.withExamples([
      { command: "parley callbacks list" },
      { command: "parley callbacks list --kind approval --session ses_9f8e" },
      { command: "parley callbacks list --json", description: "for a program: with each answer's JSON Schema" }
    ])
  )

export const callbacks = Command.make("callbacks").pipe(
  Command.withDescription("The callbacks open across sessions: what waits for an answer (parley answer gives one)."),
  Command.withShortDescription("The callbacks open across sessions."),
  Command.withExamples([{ command: "parley callbacks list" }]),
  Command.withSubcommands([callbacksList])
)

/** Prints events: a line each, deltas joined into their message as they stream (on a terminal). */
const printer = () => {
  const depth = new Map<string, number>()
  const tty = process.stdout.isTTY === true
  let inMessage = false
  return (event: TurnEvent): Effect.Effect<void> =>
    Effect.sync(() => {
      if (event._tag === "SubagentStarted") depth.set(event.childSessionId, (depth.get(event.sessionId) ?? 0) + 1)
      if (event._tag === "MessageDelta") {
        if (!tty) return
        if (!inMessage) process.stdout.write(`${Format.dim("   …")} `)
        inMessage = true
        process.stdout.write(event.delta)
        return
      }
      if (inMessage) process.stdout.write("\n")
      inMessage = false
      process.stdout.write(`${Format.eventLine(event, depth.get(event.sessionId) ?? 0)}\n`)
    })
}

export const events = Command.make("events", {
  ...Connection.options,
  sessionId: sessionIdArg,
  from: Flag.Int("from").pipe(
    Flag.withMetavar("SEQ"),
    Flag.withDescription("Start at this seq, skipping the events before: resume where you stopped (default: 0)."),
    Flag.withDefault(0)
  ),
  follow: Flag.Boolean("follow").pipe(
    Flag.withAlias("f"),
    Flag.withDescription("Keep printing events as they come; reconnects when the server restarts (Ctrl-C stops)."),
    Flag.withDefault(false)
  )
}, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    if (given.from < 0) return yield* new CliError({ message: "--from must be 0 or more", exitCode: 2 })
    const print = printer()
    if (!given.follow) {
      const stored = yield* Connection.storedEvents(connection, given.sessionId, given.from)
      return yield* Effect.forEach(stored, print, { discard: true })
    }
    // The session must exist: the live stream would wait for it forever.
    yield* Connection.withTransport(connection, (transport) => transport.getSession(given.sessionId))
    if (process.stderr.isTTY === true) {
      yield* Console.error(Format.dim(`following ${given.sessionId} from ${given.from} (Ctrl-C stops)…`))
    }
    yield* Connection.withTransport(connection, (transport) =>
      transport.events(given.sessionId, given.from).pipe(Stream.runForEach(print)))
  })).pipe(
    Command.withDescription("A session's events, one line each: the stored ones, or --follow them live."),
    Command.withExamples([
      { command: "parley events ses_9f8e" },
      { command: "parley events ses_9f8e --from 12 --follow", description: "from seq 12 on, live" }
    ])
  )
