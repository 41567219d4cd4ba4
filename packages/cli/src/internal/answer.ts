/**
 * `parley answer <callback-id> allow [--arguments <json>] | deny [--reason] | --result <json> | --connected <source>
 * --denied <source>`, with `--remember` (approvals) and `--label`: the answer is built, then validated against the
 * callback's kind and the JSON Schema of the answer it expects (`OpenCallback.answerSchema`) before anything is sent.
 * A mismatch prints the one reason and how to answer that kind, and exits 2; `--schema` prints the JSON Schema (and
 * sends nothing). With no verdict on a terminal, it asks.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Answer from "@parley/core/Answer"
import { type SessionId, SessionId as SessionIdSchema } from "@parley/core/Ids"
import * as Inbox from "@parley/core/Inbox"
import type * as ProtocolApi from "@parley/core/ProtocolApi"
import type { OpenCallback } from "@parley/core/Transport"
import { Transport } from "@parley/core/Transport"
import { Ajv } from "ajv"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Prompt from "effect/cli/Prompt"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Connection from "./connection.js"
import { CliError } from "./errors.js"
import * as Format from "./format.js"

const usage = (message: string, hint?: string) => new CliError({ message, hint, exitCode: 2 })

const parseJson = (flag: string, text: string) =>
  Effect.try({
    try: (): unknown => JSON.parse(text),
    catch: (error) => usage(`${flag} is not JSON: ${error instanceof Error ? error.message : String(error)}`)
  })

const sources = (values: ReadonlyArray<string>) =>
  values.flatMap((value) => value.split(",")).map((value) => value.trim()).filter((value) => value !== "")

/** A sign-in answer names requests by id: the sources given become the ids of the requests for them. */
const signInAnswer = (open: OpenCallback, connected: ReadonlyArray<string>, denied: ReadonlyArray<string>) => {
  const callback = open.callback
  const requests = callback._tag === "OpenSignIn" ? callback.requests : []
  const idOf = (source: string) => requests.find((request) => request.source === source)?.id ?? source
  return new Answer.SignInAnswer({ connected: connected.map(idOf), denied: denied.map(idOf) })
}

interface Filters {
  readonly tool: Option.Option<string>
  readonly session: Option.Option<SessionId>
  readonly tree: Option.Option<SessionId>
  readonly kind: Option.Option<"approval" | "client_tool" | "sign_in">
  readonly olderThan: Option.Option<string>
  readonly dryRun: boolean
}

interface Given {
  readonly verdict: Option.Option<string>
  readonly reason: Option.Option<string>
  readonly arguments: Option.Option<string>
  readonly remember: Option.Option<Answer.Remember>
  readonly result: Option.Option<string>
  readonly failure: boolean
  readonly connected: ReadonlyArray<string>
  readonly denied: ReadonlyArray<string>
}

/**
 * The answer the options give, or (none given, on a terminal) the one a person picks. Without `open` (a batch: many
 * callbacks at once) a sign-in's sources and the terminal's question are refused: both need the one callback.
 */
const answerOf = (open: OpenCallback | undefined, given: Given): Effect.Effect<Answer.Answer, CliError> =>
  Effect.gen(function*() {
    const connected = sources(given.connected)
    const denied = sources(given.denied)
    const kinds = [
      Option.isSome(given.verdict),
      Option.isSome(given.result),
      connected.length + denied.length > 0
    ].filter((x) => x).length
    if (kinds > 1) {
      return yield* usage("give one verdict: allow | deny, --result <json>, or --connected / --denied")
    }
    const verdict = Option.getOrUndefined(given.verdict)
    if (Option.isSome(given.reason) && verdict !== "deny") return yield* usage("--reason goes with deny")
    if (Option.isSome(given.arguments) && verdict !== "allow") {
      return yield* usage("--arguments goes with allow: the call runs with the arguments given")
    }
    if (Option.isSome(given.remember) && verdict === undefined) {
      return yield* usage("--remember goes with allow or deny: an approval's answer")
    }
    if (verdict !== undefined) {
      // Only the fields given: an approval's `arguments`, even undefined, would be edited arguments.
      const remember = Option.isSome(given.remember) ? { remember: given.remember.value } : {}
      switch (verdict) {
        case "allow":
          return new Answer.AllowApproval({
            ...(Option.isSome(given.arguments)
              ? { arguments: yield* parseJson("--arguments", given.arguments.value) }
              : {}),
            ...remember
          })
        case "deny":
          return new Answer.DenyApproval({
            ...(Option.isSome(given.reason) ? { reason: given.reason.value } : {}),
            ...remember
          })
        default:
          return yield* usage(`unknown verdict "${verdict}": allow or deny`)
      }
    }
    if (Option.isSome(given.result)) {
      const result = yield* parseJson("--result", given.result.value)
      return new Answer.ClientToolResult({ isFailure: given.failure, result })
    }
    if (open === undefined) {
      return yield* usage(
        kinds === 1 ? "a sign-in is answered one at a time: give its callback id" : "no verdict given",
        "add allow | deny [--reason …] or --result '<json>' to answer every callback the filter matches"
      )
    }
    if (kinds === 1) return signInAnswer(open, connected, denied)
    if (process.stdin.isTTY !== true) {
      return yield* usage(
        "no verdict given",
        "add allow | deny [--reason …], --result '<json>', or --connected / --denied <source> (or run it on a terminal)"
      )
    }
    return yield* ask(open)
  })

/** Asks on the terminal: allow or deny, the result's JSON, or each source's decision. */
const ask = (open: OpenCallback): Effect.Effect<Answer.Answer, CliError, never> => {
  const callback = open.callback
  const prompt: Prompt.Prompt<Answer.Answer> = callback._tag === "OpenApproval"
    ? Prompt.Select({
      message: `${callback.request.tool.id} ${Format.shortJson(callback.request.arguments, 60)}`,
      choices: [
        { title: "allow", value: new Answer.AllowApproval() as Answer.Answer },
        { title: "deny", value: new Answer.DenyApproval({}) as Answer.Answer }
      ]
    })
    : callback._tag === "OpenClientToolCall"
    ? Prompt.map(
      Prompt.String({
        message: `the result of ${callback.request.tool.id} as JSON`,
        validate: (text) =>
          Result.match(Result.try(() => JSON.parse(text) as unknown), {
            onFailure: () => Effect.fail("not JSON"),
            onSuccess: () => Effect.succeed(text)
          })
      }),
      (text): Answer.Answer => new Answer.ClientToolResult({ isFailure: false, result: JSON.parse(text) as unknown })
    )
    : Prompt.map(
      Prompt.MultiSelect({
        message: "the sources to connect (the others are denied)",
        choices: callback.requests.map((request) => ({ title: request.source, value: request.id }))
      }),
      (connected): Answer.Answer =>
        new Answer.SignInAnswer({
          connected,
          denied: callback.requests.map((request) => request.id).filter((id) => !connected.includes(id))
        })
    )
  return Prompt.run(prompt).pipe(
    Effect.provide(NodeServices.layer),
    Effect.mapError(() => new CliError({ message: "cancelled: nothing was sent", exitCode: 1 }))
  )
}

const ajv = new Ajv({ strict: false, allErrors: false })
const encodeAnswer = Schema.encodeSync(Answer.Answer)

/** The one reason an answer does not fit the callback, or `undefined`. */
export const mismatch = (open: OpenCallback, answer: Answer.Answer): string | undefined => {
  const kind = Answer.validateSync(open.callback, answer)
  if (Result.isFailure(kind)) return kind.failure.reason
  const validate = ajv.compile(open.answerSchema as object)
  if (validate(encodeAnswer(answer))) return undefined
  const error = validate.errors?.[0]
  return error === undefined ? "the answer does not match" : `${error.instancePath || "the answer"} ${error.message}`
}

/** How to answer a callback of this kind: the hint of a mismatch. */
const howTo = (open: OpenCallback): string => {
  const callback = open.callback
  switch (callback._tag) {
    case "OpenApproval":
      return "answer an approval with allow [--arguments '<json>'] or deny [--reason …], and --remember to keep it"
    case "OpenClientToolCall":
      return `answer a client tool with --result '<json>', the result of ${callback.request.tool.id} (--failure: ` +
        "a tool error)"
    case "OpenSignIn":
      return `answer a sign-in with --connected / --denied <source> (${subject(open)})`
  }
}

const subject = (open: OpenCallback) => Format.subject(open.callback)

const callbackId = Argument.String("callback-id").pipe(
  Argument.withDescription(
    "The callback's id (cb_…, as callbacks list shows); with --tool, --session, --tree, --kind or --older-than, " +
      "none: the verdict comes first."
  ),
  Argument.optional
)

/** `--older-than`: `90`, `90s`, `15m`, `2h`, `1d`, in seconds. */
const secondsOf = (text: string): number | undefined => {
  const match = /^(\d+)\s*([smhd]?)$/.exec(text.trim())
  if (match === null) return undefined
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as "" | "s" | "m" | "h" | "d"]
  return Number(match[1]) * unit
}

/** Answers every open callback the filter matches through `POST /callbacks/answer`: a line per callback. */
const answerMany = (
  connection: Connection.Connection,
  given: Given & Filters & { readonly label: Option.Option<string> },
  verdict: Option.Option<string>
) =>
  Effect.gen(function*() {
    const olderThan = Option.map(given.olderThan, (text) => ({ text, seconds: secondsOf(text) }))
    if (Option.isSome(olderThan) && olderThan.value.seconds === undefined) {
      return yield* usage(`--older-than ${olderThan.value.text} is not a duration`, "say 90, 90s, 15m, 2h or 1d")
    }
    const answer = yield* answerOf(undefined, { ...given, verdict })
    const filter = {
      ...Option.match(given.tool, { onNone: () => ({}), onSome: (tool) => ({ tool }) }),
      ...Option.match(given.session, { onNone: () => ({}), onSome: (sessionId) => ({ sessionId }) }),
      ...Option.match(given.tree, { onNone: () => ({}), onSome: (treeId) => ({ treeId }) }),
      ...Option.match(given.kind, { onNone: () => ({}), onSome: (kind) => ({ kind }) }),
      ...(Option.isSome(olderThan) ? { olderThan: olderThan.value.seconds! } : {})
    }
    const report = yield* Connection.withApi(connection, (client) =>
      client.callbacks.answerMany({
        payload: {
          filter: filter as typeof ProtocolApi.CallbackFilter.Type,
          answer,
          ...(Option.isSome(given.label) ? { label: given.label.value } : {}),
          ...(given.dryRun ? { dryRun: true } : {})
        }
      }))
    if (report.results.length === 0) return yield* Console.log("no open callback matches")
    for (const line of report.results) {
      const what = `${line.callbackId} (${line.kind} ${line.subject}, session ${line.sessionId})`
      yield* Console.log(
        line.outcome === "refused"
          ? `refused  ${what}: ${line.reason ?? line.error ?? "refused"}`
          : `${line.outcome === "matched" ? "would answer" : "answered"} ${what}`
      )
    }
    const refused = report.results.filter((line) => line.outcome === "refused").length
    if (refused > 0) {
      return yield* new CliError({
        message: `${refused} of ${report.results.length} callbacks refused the answer`,
        exitCode: 1
      })
    }
  })
const verdict = Argument.String("allow|deny").pipe(
  Argument.withDescription("An approval's verdict: allow or deny."),
  Argument.optional
)

export const command = Command.make("answer", {
  ...Connection.options,
  callbackId,
  verdict,
  reason: Flag.String("reason").pipe(
    Flag.withMetavar("TEXT"),
    Flag.withDescription("With deny: why, as the model reads it."),
    Flag.optional
  ),
  arguments: Flag.String("arguments").pipe(
    Flag.withMetavar("JSON"),
    Flag.withDescription(
      "With allow: the call's arguments as you edited them, as JSON (checked against the tool's parameters); the " +
        "call runs with them."
    ),
    Flag.optional
  ),
  remember: Flag.Literals("remember", Answer.Remember.literals).pipe(
    Flag.withMetavar("SCOPE"),
    Flag.withDescription(
      "With allow or deny: answer later calls of the same tool so too, without asking: in this session, or in its " +
        "whole tree (subagents included). parley grants list shows them."
    ),
    Flag.optional
  ),
  result: Flag.String("result").pipe(
    Flag.withMetavar("JSON"),
    Flag.withDescription("A client tool's result, as JSON (checked against the tool's success schema)."),
    Flag.optional
  ),
  failure: Flag.Boolean("failure").pipe(
    Flag.withDescription("With --result: the result is a tool error the model sees."),
    Flag.withDefault(false)
  ),
  connected: Flag.String("connected").pipe(
    Flag.withMetavar("SOURCE"),
    Flag.withDescription("A sign-in's source to connect (repeat it, or separate with commas)."),
    Flag.atLeast(0)
  ),
  denied: Flag.String("denied").pipe(
    Flag.withMetavar("SOURCE"),
    Flag.withDescription("A sign-in's source to deny (repeat it, or separate with commas)."),
    Flag.atLeast(0)
  ),
  label: Flag.String("label").pipe(
    Flag.withMetavar("WHO"),
    Flag.withDescription(
      "Who answers, recorded with the answer (a name, an e-mail address): the session app shows \"answered by WHO\"."
    ),
    Flag.optional
  ),
  schema: Flag.Boolean("schema").pipe(
    Flag.withDescription("Print the JSON Schema of the answer the callback expects, and send nothing."),
    Flag.withDefault(false)
  ),
  tool: Flag.String("tool").pipe(
    Flag.withMetavar("TOOL"),
    Flag.withDescription(
      "Answer every open callback of this tool (its id or name; a sign-in's source) instead of one by id."
    ),
    Flag.optional
  ),
  session: Flag.String("session").pipe(
    Flag.withSchema(SessionIdSchema),
    Flag.withMetavar("SESSION"),
    Flag.withDescription("Answer every open callback of this session (ses_…) instead of one by id."),
    Flag.optional
  ),
  tree: Flag.String("tree").pipe(
    Flag.withSchema(SessionIdSchema),
    Flag.withMetavar("SESSION"),
    Flag.withDescription("Answer every open callback of this root session's tree, its subagents' too."),
    Flag.optional
  ),
  kind: Flag.Literals("kind", ["approval", "client_tool", "sign_in"]).pipe(
    Flag.withMetavar("KIND"),
    Flag.withDescription("Answer every open callback of this kind: approval, client_tool or sign_in."),
    Flag.optional
  ),
  olderThan: Flag.String("older-than").pipe(
    Flag.withMetavar("AGE"),
    Flag.withDescription("Answer every open callback that has waited at least this long: 90s, 15m, 2h, 1d."),
    Flag.optional
  ),
  dryRun: Flag.Boolean("dry-run").pipe(
    Flag.withDescription("With a filter: list the callbacks it matches, and send nothing."),
    Flag.withDefault(false)
  )
}, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    const filtered = [given.tool, given.session, given.tree, given.kind, given.olderThan].some(Option.isSome)
    if (filtered) {
      // A batch: the first word is the verdict (`parley answer allow --tool …`).
      if (Option.isSome(given.verdict)) {
        return yield* usage("with a filter, give no callback id: the verdict comes first")
      }
      return yield* answerMany(connection, given, given.callbackId)
    }
    if (given.dryRun) {
      return yield* usage("--dry-run goes with a filter (--tool, --session, --tree, --kind, --older-than)")
    }
    if (Option.isNone(given.callbackId)) {
      return yield* usage(
        "no callback id given",
        "`parley callbacks list` shows the open ones; --tool, --session, --tree, --kind or --older-than answer many"
      )
    }
    const id = given.callbackId.value
    yield* Connection.withTransport(connection, (transport) =>
      Effect.gen(function*() {
        const open = (yield* transport.listOpen()).find((entry) => entry.callback.id === id)
        if (open === undefined) {
          return yield* new CliError({
            message: `callback ${id} is not open: answered, expired or cancelled, or unknown to this key`,
            hint: "`parley callbacks list` shows the open ones",
            exitCode: 1
          })
        }
        if (given.schema) return yield* Console.log(JSON.stringify(open.answerSchema, null, 2))
        const answer = yield* answerOf(open, given)
        const reason = mismatch(open, answer)
        if (reason !== undefined) {
          return yield* new CliError({
            message: `nothing was sent: ${reason}`,
            hint: `${howTo(open)}; \`parley answer ${open.callback.id} --schema\` prints the answer it expects`,
            exitCode: 2
          })
        }
        yield* Inbox.answer(open, answer, { label: Option.getOrUndefined(given.label) }).pipe(
          Effect.provideService(Transport, transport)
        )
        yield* Console.log(`answered ${open.callback.id} (${open.callback.kind} ${subject(open)})`)
      }))
  })).pipe(
    Command.withDescription(
      "Answer an open callback by id: an approval, a client tool's result, a sign-in. The answer is checked " +
        "against the one the callback expects first: if it does not fit, nothing is sent. With a filter (--tool, " +
        "--session, --tree, --kind, --older-than) one answer goes to every open callback it matches, each judged " +
        "as if answered alone, a line each."
    ),
    Command.withShortDescription("Answer an open callback by id."),
    Command.withExamples([
      { command: "parley answer cb_1a2b allow" },
      { command: "parley answer cb_1a2b deny --reason \"not on a Friday\"" },
      {
        command: "parley answer cb_1a2b allow --arguments '{\"amount\":40}' --remember session --label alice",
        description: "allow with edited arguments, and later calls of the tool in this session"
      },
      { command: "parley answer cb_3c4d --result '{\"city\":\"Lyon\"}'", description: "a client tool's result" },
      { command: "parley answer cb_5e6f --connected gmail", description: "a sign-in" },
      { command: "parley answer cb_1a2b --schema", description: "the JSON Schema of the answer it expects" },
      {
        command: "parley answer allow --tool client.get_location --session ses_9f8e --label alice",
        description: "every open approval of the tool in the session: a line per callback"
      },
      {
        command: "parley answer deny --kind approval --older-than 1h --dry-run",
        description: "what would be denied: every approval waiting for an hour or more"
      }
    ])
  )
