/**
 * The AG-UI route (`@ag-ui/client`'s `HttpAgent({ url: "/ag-ui/<agent>" })`, CopilotKit), behind the server's keys,
 * tenants and limits: `POST /ag-ui/:agent` takes a `RunAgentInput` (decoded with Effect's `AgUiSchema`) whose
 * `threadId` is a Parley session of the tenant running `agent`, and answers with the run's AG-UI events (see
 * `agUiEvents.ts`). What the run does, in this order:
 *
 * 1. `resume` entries answer the interrupts they name (callbacks open in the session's turn; judged by the engine:
 *    a result that does not fit is a 422 `AnswerMismatch` and nothing is answered after it);
 * 2. else `tool` messages answer the open client tool calls they name (frontend tools);
 * 3. else the last message, the user's, starts a turn (its id the turn's request id: a retried run starts one turn).
 *
 * The run then streams that turn until it ends or waits on callbacks again.
 */
import { AllowApproval, type Answer, ClientToolResult, DenyApproval, SignInAnswer } from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import type { CallbackId, TurnId } from "@parley/core/Ids"
import { SessionId } from "@parley/core/Ids"
import {
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  InvalidId,
  NotAllowedToAnswer,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "@parley/core/ParleyError"
import { ApiKey, Client } from "@parley/core/Principal"
import {
  Authorization,
  HttpApiDecodeError,
  MessageTooLong,
  PayloadTooLarge,
  ProtocolApi,
  Tenant,
  TooManyRequests,
  TooManyStreams
} from "@parley/core/ProtocolApi"
import type { SubagentStarted } from "@parley/core/TurnEvent"
import * as AgUiSchema from "effect/ai/AgUiSchema"
import type * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Access } from "./access.js"
import * as Events from "./agUiEvents.js"
import type * as Served from "./served.js"
import * as TurnStream from "./turnStream.js"

// =============================================================================
// Route
// =============================================================================

const anyRoute = [TransportFailure.pipe(HttpApiSchema.status(503)), PayloadTooLarge, TooManyRequests] as const

export class AgUiGroup extends HttpApiGroup.make("agUi")
  .add(
    HttpApiEndpoint.post("run", "/ag-ui/:agent", {
      params: { agent: Schema.String },
      success: HttpApiSchema.StreamSse({ data: Schema.Unknown, contentType: "text/event-stream" }).annotate({
        description: "AG-UI events (JSON `data:` lines): RUN_STARTED … RUN_FINISHED (with interrupts) or RUN_ERROR."
      }),
      error: [
        HttpApiDecodeError,
        InvalidId.pipe(HttpApiSchema.status(400)),
        MessageTooLong,
        AnswerMismatch.pipe(HttpApiSchema.status(422)),
        NotAllowedToAnswer.pipe(HttpApiSchema.status(403)),
        SessionNotFound.pipe(HttpApiSchema.status(404)),
        TurnNotFound.pipe(HttpApiSchema.status(404)),
        TooManyStreams,
        ...anyRoute
      ]
    }).annotate(
      OpenApi.Description,
      "An AG-UI run: the thread is a session of `agent`; resume entries or tool messages answer its open callbacks, " +
        "else the user's message starts a turn; the response streams the turn as AG-UI events."
    )
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "AG-UI (RunAgentInput in, AG-UI events out), over Parley's sessions.")
{}

export interface Options {
  readonly maxMessageLength: number
  readonly maxStreams: number
  readonly shutdown: Deferred.Deferred<void>
}

// =============================================================================
// Answers
// =============================================================================

const badRequest = (message: string) => new HttpApiDecodeError({ issues: [{ path: [], message }], message })

const Decision = Schema.Struct({ approved: Schema.Boolean, reason: Schema.optionalKey(Schema.String) })
const decodeDecision = Schema.decodeUnknownOption(Decision)
const decodeSignIn = Schema.decodeUnknownOption(Schema.Struct({
  connected: Schema.optionalKey(Schema.Array(Schema.String)),
  denied: Schema.optionalKey(Schema.Array(Schema.String))
}))

/** The answer a resume entry gives a callback; a payload that says nothing usable is a 400. */
const fromResume = (callback: Callback, entry: AgUiSchema.ResumeEntry): Effect.Effect<Answer, HttpApiDecodeError> => {
  switch (callback._tag) {
    case "OpenApproval": {
      if (entry.status === "cancelled") return Effect.succeed(new DenyApproval({ reason: "cancelled" }))
      const decision = decodeDecision(entry.payload)
      if (Option.isNone(decision)) {
        return Effect.fail(badRequest(`resume ${entry.interruptId}: an approval's payload is { approved, reason? }`))
      }
      return Effect.succeed(
        decision.value.approved
          ? new AllowApproval({})
          : new DenyApproval(decision.value.reason === undefined ? {} : { reason: decision.value.reason })
      )
    }
    case "OpenClientToolCall":
      return Effect.succeed(
        entry.status === "cancelled"
          ? ClientToolResult.failure("cancelled by the client")
          : ClientToolResult.success(entry.payload)
      )
    case "OpenSignIn": {
      const sources = callback.requests.map((request) => request.id)
      if (entry.status === "cancelled") return Effect.succeed(new SignInAnswer({ connected: [], denied: sources }))
      const answer = decodeSignIn(entry.payload)
      if (Option.isNone(answer)) {
        return Effect.fail(badRequest(`resume ${entry.interruptId}: a sign-in's payload is { connected, denied }`))
      }
      return Effect.succeed(
        new SignInAnswer({ connected: answer.value.connected ?? [], denied: answer.value.denied ?? [] })
      )
    }
  }
}

const parseContent = (content: string): unknown => {
  try {
    return JSON.parse(content)
  } catch {
    return content
  }
}

const contentText = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.flatMap((part) =>
      typeof part === "object" && part !== null && part.type === "text" && typeof part.text === "string"
        ? [part.text]
        : []
    ).join("\n")
    : ""

// =============================================================================
// Handler
// =============================================================================

/**
 * The subagents of the turn started in its stored events from `from` (its `TurnQueued`) to `to` (the `seq` the next
 * event gets) and not ended there, in the order they started: a run that continues the turn starts their segments.
 */
const workingSubagents = (transport: Served.Served, root: SessionId, from: number, to: number) =>
  transport.events(root, from).pipe(
    Stream.takeUntil((event) => event.seq >= to - 1),
    Stream.filter((event) => event.seq < to),
    Stream.runFold(() => new Map<string, SubagentStarted>(), (working, event) => {
      if (event._tag === "SubagentStarted") working.set(event.childSessionId, event)
      if (event._tag === "SubagentEnded") working.delete(event.childSessionId)
      return working
    }),
    Effect.map((working) => [...working.values()])
  )

const decodeInput = Schema.decodeUnknownEffect(AgUiSchema.RunAgentInput)
const isSessionId = Schema.is(SessionId)

export const group = (transport: Served.Served, access: Access, options: Options) => {
  const streams = TurnStream.makeStreamCounter(options.maxStreams)
  return HttpApiBuilder.group(
    ProtocolApi.add(AgUiGroup),
    "agUi",
    (handlers) =>
      handlers.handleRaw("run", ({ params, request }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          const body = yield* request.json.pipe(Effect.catch(() => Effect.fail(badRequest("the body is not JSON"))))
          const input = yield* decodeInput(body).pipe(
            Effect.mapError((error) => badRequest(`not a RunAgentInput: ${error.message}`))
          )
          if (!isSessionId(input.threadId)) return yield* TurnStream.notFoundOf(input.threadId)
          const root = yield* TurnStream.ownedSession(transport, access, tenant, input.threadId, params.agent)
          const release = yield* streams.acquire(tenant.keyId)
          const answeredBy = new ApiKey({
            tenant: tenant.id,
            keyId: tenant.keyId,
            ...(tenant.roles === undefined || tenant.roles.length === 0 ? {} : { roles: tenant.roles }),
            onBehalfOf: new Client({})
          })
          const started = yield* Effect.gen(function*() {
            const latest = yield* TurnStream.latestTurn(transport, root)
            const running = Option.filter(latest, (turn) => !turn.ended)
            if (Option.isSome(running)) {
              const turnId: TurnId = running.value.turnId
              const now = yield* TurnStream.turnNow(transport, root, turnId)
              const answers: Array<{ callbackId: CallbackId; answer: Answer }> = []
              for (const entry of input.resume ?? []) {
                const callback = now.callbacks.find((open) => open.id === entry.interruptId)
                if (callback === undefined) continue
                answers.push({ callbackId: callback.id, answer: yield* fromResume(callback, entry) })
              }
              if (answers.length === 0) {
                for (const message of input.messages) {
                  if (message.role !== "tool") continue
                  const callback = now.callbacks.find((open) =>
                    open._tag === "OpenClientToolCall" && open.request.toolCallId === message.toolCallId
                  )
                  if (callback === undefined) continue
                  const content = contentText(message.content)
                  answers.push({
                    callbackId: callback.id,
                    answer: message.error === undefined
                      ? ClientToolResult.success(parseContent(content))
                      : ClientToolResult.failure(message.error)
                  })
                }
              }
              if (answers.length > 0) {
                for (const entry of answers) {
                  yield* transport.answer({ sessionId: root, turnId, ...entry, answeredBy }).pipe(
                    Effect.catchIf(
                      (error) => error instanceof CallbackAlreadyAnswered || error instanceof CallbackNotOpen,
                      () => Effect.void
                    )
                  )
                }
                const working = yield* workingSubagents(transport, root, running.value.from, now.cursor)
                return { turnId, from: now.cursor, open: now.callbacks, working }
              }
            }
            const last = input.messages.at(-1)
            const text = last?.role === "user" ? contentText(last.content) : ""
            if (text.length === 0) {
              return yield* badRequest("the run neither answers an open callback nor ends with the user's message")
            }
            if (text.length > options.maxMessageLength) {
              return yield* new MessageTooLong({ limit: options.maxMessageLength, length: text.length })
            }
            const ref = yield* transport.sendMessage(root, text, {
              requestId: /^[\x21-\x7E]{1,120}$/.test(last!.id) ? `ag-ui:${last!.id}` : undefined
            })
            return { turnId: ref.turnId, from: ref.cursor, open: [] as ReadonlyArray<Callback>, working: [] }
          }).pipe(Effect.onError(() => release))
          const translator = Events.makeTranslator(input, root, started.turnId, started.open, started.working)
          const follow = { root, turnId: started.turnId, from: started.from, endOnBlockFrom: started.from }
          const frames = Stream.make(translator.start()).pipe(
            Stream.concat(Stream.map(TurnStream.follow(transport, follow, options.shutdown), translator.event)),
            Stream.map((events) => events.map(Events.frame).join("")),
            Stream.catchCause(() =>
              Stream.succeed(Events.frame({ type: "RUN_ERROR", message: "the run was interrupted" }))
            ),
            Stream.encodeText,
            Stream.ensuring(release)
          )
          return HttpServerResponse.stream(frames, {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
          })
        }))
  )
}
