/**
 * The AI SDK's chat routes (`useChat` with `DefaultChatTransport({ api: "/ai-sdk/<agent>" })`), behind the server's
 * keys, tenants and limits (the `Authorization` middleware of the protocol):
 *
 * - `POST /ai-sdk/:agent`: the chat's `id` is a Parley session of the tenant running `agent`. When the last message is
 *   the user's, its text starts a turn (its message id the turn's request id: a retried POST starts one turn); when it
 *   is the assistant's, the approvals and tool outputs it proposes for the callbacks open in the session's turn are
 *   answered (`Transport.answer`, judged as every answer: a tool output that does not fit the tool's schema is a 422
 *   `AnswerMismatch` and answers nothing). Either way the response is that turn's UI message stream, until the turn
 *   ends or waits on callbacks.
 * - `GET /ai-sdk/:agent/:chatId/stream` (what `useChat`'s `resume` calls): the session's latest turn replayed from its
 *   start, then live, until it ends or waits on callbacks it did not wait on when the request came (a stream of a
 *   blocked turn waits for an answer from anywhere); 204 when the latest turn has ended (no stream to resume).
 */
import type { Answer } from "@parley/core/Answer"
import { AllowApproval, ClientToolResult, DenyApproval } from "@parley/core/Answer"
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
import type * as Served from "./served.js"
import * as TurnStream from "./turnStream.js"
import * as Ui from "./uiMessageStream.js"

// =============================================================================
// Routes
// =============================================================================

const anyRoute = [TransportFailure.pipe(HttpApiSchema.status(503)), PayloadTooLarge, TooManyRequests] as const
const streamErrors = [
  SessionNotFound.pipe(HttpApiSchema.status(404)),
  TurnNotFound.pipe(HttpApiSchema.status(404)),
  TooManyStreams,
  ...anyRoute
] as const

const UiMessageStream = HttpApiSchema.StreamSse({ data: Schema.Unknown, contentType: "text/event-stream" }).annotate({
  description: "The AI SDK's UI message stream: `data:` lines of UI message chunks (JSON), then `data: [DONE]`."
})

export class AiSdkGroup extends HttpApiGroup.make("aiSdk")
  .add(
    HttpApiEndpoint.post("chat", "/ai-sdk/:agent", {
      params: { agent: Schema.String },
      success: UiMessageStream,
      error: [
        HttpApiDecodeError,
        InvalidId.pipe(HttpApiSchema.status(400)),
        MessageTooLong,
        AnswerMismatch.pipe(HttpApiSchema.status(422)),
        NotAllowedToAnswer.pipe(HttpApiSchema.status(403)),
        ...streamErrors
      ]
    }).annotate(
      OpenApi.Description,
      "useChat's POST: the chat id is a session of `agent`; a user message starts a turn, an assistant message's " +
        "approvals and tool outputs answer the turn's open callbacks; the response streams the turn."
    ),
    HttpApiEndpoint.get("resume", "/ai-sdk/:agent/:chatId/stream", {
      params: { agent: Schema.String, chatId: Schema.String },
      success: [UiMessageStream, HttpApiSchema.NoContent],
      error: streamErrors
    }).annotate(OpenApi.Description, "useChat's resume: the session's latest turn, replayed then live; 204 if ended.")
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "The Vercel AI SDK's UI message stream protocol (useChat), over Parley's sessions.")
{}

export interface Options {
  readonly maxMessageLength: number
  readonly maxStreams: number
  readonly shutdown: Deferred.Deferred<void>
}

// =============================================================================
// Handlers
// =============================================================================

const badRequest = (message: string) => new HttpApiDecodeError({ issues: [{ path: [], message }], message })

const decodeChat = Schema.decodeUnknownEffect(Ui.ChatRequest)

const isSessionId = Schema.is(SessionId)

/** The response: the chunks of the followed turn, framed, the stream slot given back when it ends. */
const respond = (
  transport: Served.Served,
  follow: TurnStream.Follow,
  shutdown: Deferred.Deferred<void>,
  release: Effect.Effect<void>,
  continues?: ReadonlyArray<Callback>
) => {
  const translator = Ui.makeTranslator(follow.root, follow.turnId, continues)
  const frames = Stream.make(translator.start()).pipe(
    Stream.concat(Stream.map(TurnStream.follow(transport, follow, shutdown), translator.event)),
    Stream.map((chunks) => chunks.map(Ui.frame).join("")),
    Stream.catchCause(() => Stream.succeed(Ui.frame({ type: "error", errorText: "the stream was interrupted" }))),
    Stream.concat(Stream.succeed(Ui.done)),
    Stream.encodeText,
    Stream.ensuring(release)
  )
  return HttpServerResponse.stream(frames, { contentType: "text/event-stream", headers: Ui.headers })
}

/** The answers the last message proposes for the callbacks open in the root turn: only those, judged by the engine. */
const answersFor = (
  proposed: Ui.Proposed,
  open: ReadonlyArray<Callback>
): ReadonlyArray<{ readonly callbackId: CallbackId; readonly answer: Answer }> => {
  const out: Array<{ callbackId: CallbackId; answer: Answer }> = []
  for (const callback of open) {
    if (callback._tag === "OpenApproval") {
      const decision = proposed.approvals.find((approval) => approval.id === callback.id)
      if (decision === undefined) continue
      out.push({
        callbackId: callback.id,
        answer: decision.approved
          ? new AllowApproval({})
          : new DenyApproval(decision.reason === undefined ? {} : { reason: decision.reason })
      })
    } else if (callback._tag === "OpenClientToolCall") {
      const result = proposed.outputs.find((entry) => entry.toolCallId === callback.request.toolCallId)
      if (result === undefined) continue
      out.push({
        callbackId: callback.id,
        answer: new ClientToolResult({ isFailure: result.isFailure, result: result.output })
      })
    }
  }
  return out
}

export const group = (transport: Served.Served, access: Access, options: Options) => {
  const streams = TurnStream.makeStreamCounter(options.maxStreams)
  return HttpApiBuilder.group(ProtocolApi.add(AiSdkGroup), "aiSdk", (handlers) =>
    handlers
      .handleRaw("chat", ({ params, request }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          const body = yield* request.json.pipe(
            Effect.catch(() => Effect.fail(badRequest("the body is not JSON")))
          )
          const chat = yield* decodeChat(body).pipe(
            Effect.mapError((error) => badRequest(`not a useChat request: ${error.message}`))
          )
          if (!isSessionId(chat.id)) return yield* TurnStream.notFoundOf(chat.id)
          const root = yield* TurnStream.ownedSession(transport, access, tenant, chat.id, params.agent)
          const proposed = Ui.proposed(chat)
          const release = yield* streams.acquire(tenant.keyId)
          const answeredBy = new ApiKey({
            tenant: tenant.id,
            keyId: tenant.keyId,
            ...(tenant.roles === undefined || tenant.roles.length === 0 ? {} : { roles: tenant.roles }),
            onBehalfOf: new Client({})
          })
          const started = yield* Effect.gen(function*() {
            if (proposed.text.length > 0) {
              if (proposed.text.length > options.maxMessageLength) {
                return yield* new MessageTooLong({ limit: options.maxMessageLength, length: proposed.text.length })
              }
              const last = chat.messages.at(-1)!
              const ref = yield* transport.sendMessage(root, proposed.text, {
                requestId: /^[\x21-\x7E]{1,128}$/.test(last.id) ? `ai-sdk:${last.id}`.slice(0, 128) : undefined
              })
              return { turnId: ref.turnId, from: ref.cursor, continues: undefined }
            }
            const latest = yield* TurnStream.latestTurn(transport, root)
            if (Option.isNone(latest) || latest.value.ended) {
              return yield* badRequest("the chat's last message is neither the user's nor answers an open callback")
            }
            const turnId: TurnId = latest.value.turnId
            const now = yield* TurnStream.turnNow(transport, root, turnId)
            const answers = answersFor(proposed, now.callbacks)
            if (answers.length === 0) {
              return yield* badRequest("the chat's last message answers no callback open in the turn")
            }
            for (const entry of answers) {
              yield* transport.answer({
                sessionId: root,
                turnId,
                callbackId: entry.callbackId,
                answer: entry.answer,
                answeredBy
              }).pipe(
                // Answered meanwhile by someone else: the stream shows how it was resolved.
                Effect.catchIf(
                  (error) => error instanceof CallbackAlreadyAnswered || error instanceof CallbackNotOpen,
                  () => Effect.void
                )
              )
            }
            return { turnId, from: now.cursor, continues: now.callbacks }
          }).pipe(Effect.onError(() => release))
          return respond(
            transport,
            { root, turnId: started.turnId, from: started.from, endOnBlockFrom: started.from },
            options.shutdown,
            release,
            started.continues
          )
        }))
      .handleRaw("resume", ({ params }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          if (!isSessionId(params.chatId)) return yield* TurnStream.notFoundOf(params.chatId)
          const root = yield* TurnStream.ownedSession(transport, access, tenant, params.chatId, params.agent)
          const latest = yield* TurnStream.latestTurn(transport, root)
          if (Option.isNone(latest) || latest.value.ended) return HttpServerResponse.empty({ status: 204 })
          const release = yield* streams.acquire(tenant.keyId)
          return respond(
            transport,
            { root, turnId: latest.value.turnId, from: latest.value.from, endOnBlockFrom: latest.value.end },
            options.shutdown,
            release
          )
        })))
}
