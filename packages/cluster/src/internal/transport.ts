/**
 * The `Transport` of a cluster process: what changes a tree goes to the runner that holds its shard, through the
 * `Tree` entity's client (on the wall clock: a send to a shard being moved is retried in real time); everything else
 * — creating a session, reading its turns, events, grants, open callbacks — is answered here, by this process's engine
 * from the log, as a follower would. A message that did not get through is sent again every 100 ms, for 60 s at
 * most, until the tree's shard moved to a runner that takes it: refused by a runner that is stopping
 * (`RunnerStopping`: nothing decided), interrupted there (its entity stopped: a shard moved, the runner drained —
 * `@effect/cluster` answers a volatile message's caller with the interruption), or not written to the runner's socket
 * (a runner just killed: the cluster answers that with the socket's defect, where it retries a persisted message).
 * Every command is idempotent in the log: sending one again is safe even when the first was decided.
 */
import { Answer as AnswerSchema } from "@parley/core/Answer"
import * as Ids from "@parley/core/Ids"
import { SessionNotFound, TransportFailure } from "@parley/core/ParleyError"
import { Principal } from "@parley/core/Principal"
import type * as Transport from "@parley/core/Transport"
import type * as SessionStore from "@parley/log/SessionStore"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type {
  AlreadyProcessingMessage,
  EntityNotAssignedToRunner,
  MailboxFull,
  PersistenceError
} from "effect/cluster/ClusterError"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Socket from "effect/socket/Socket"
import type { RunnerStopping, Tree } from "../TreeEntity.js"

type Client = Effect.Success<typeof Tree.client>

const decodeSessionId = Schema.decodeUnknownResult(Ids.SessionId)
const encodeAnswer = Schema.encodeUnknownResult(AnswerSchema)
const encodePrincipal = Schema.encodeUnknownResult(Principal)

/**
 * A value as JSON carries it to the runner: `undefined` for what JSON has no form of (`undefined`, a function, a
 * bigint, a cycle) — the field is left out, and the runner's engine refuses its absence as it would the value.
 */
const asJson = (value: unknown): Schema.Json | undefined => {
  try {
    const text = JSON.stringify(value)
    return text === undefined ? undefined : JSON.parse(text) as Schema.Json
  } catch {
    return undefined
  }
}

/** What crosses to the runner: the encoded form when the value is one, else the value itself (the runner refuses it). */
const encoded = <A>(encode: (value: unknown) => Result.Result<A, unknown>, value: unknown) =>
  Result.getOrElse(encode(value), () => value)

/** The fields as JSON carries them (those it has no form of left out). */
const jsonFields = <K extends string>(fields: Record<K, unknown>): { [key in K]?: Schema.Json } => {
  const out: { [key in K]?: Schema.Json } = {}
  for (const key in fields) {
    const value = asJson(fields[key])
    if (value !== undefined) out[key] = value
  }
  return out
}

const failure = (method: string, error: { readonly message: string }) =>
  new TransportFailure({ module: "ClusterRuntime", method, description: error.message, cause: error })

/** A message that did not get through: interrupted on the runner, or not written to its socket. */
class Undelivered extends Data.TaggedError("Undelivered")<{ readonly cause: Cause.Cause<unknown> }> {
  override get message() {
    return `the message did not get through to the tree's runner: ${Cause.pretty(this.cause)}`
  }
}

/** Sent again: refused by a stopping runner, or not delivered. */
const isResent = (error: unknown): error is RunnerStopping | Undelivered =>
  typeof error === "object" && error !== null && "_tag" in error &&
  (error._tag === "RunnerStopping" || error._tag === "Undelivered")

/**
 * The send's interruption by the runner (this fiber's own interruption never reaches a handler) and a socket's defect
 * as `Undelivered`.
 */
const undelivered = <A, E>(send: Effect.Effect<A, E>): Effect.Effect<A, E | Undelivered> =>
  Effect.catchCause(send, (cause) =>
    Cause.hasInterruptsOnly(cause) ||
      Result.match(Cause.findDefect(cause), { onFailure: () => false, onSuccess: Socket.isSocketError })
      ? Effect.fail<E | Undelivered>(new Undelivered({ cause }))
      : Effect.failCause(cause))

/**
 * The cluster's own failures to deliver (a full mailbox, storage, this process shutting down), as the transport's.
 */
const clusterErrors = new Set<string>([
  "MailboxFull",
  "AlreadyProcessingMessage",
  "PersistenceError",
  "EntityNotAssignedToRunner"
])

/** What the cluster answers instead of the tree's runner. */
type ClusterError = MailboxFull | AlreadyProcessingMessage | PersistenceError | EntityNotAssignedToRunner

export const make = (options: {
  /** This process's engine: creates sessions, answers reads. */
  readonly local: Transport.Service
  readonly store: SessionStore.Services
  readonly client: Client
  /** The wall clock the cluster's sends run on. */
  readonly wallClock: Clock.Clock
}): Transport.Service => {
  const { client, local, store, wallClock } = options

  /** The tree a session belongs to: its entity's id. */
  const treeOf = (method: string, sessionId: unknown) => {
    const id = decodeSessionId(sessionId)
    if (Result.isFailure(id)) {
      return Effect.fail(new SessionNotFound({ module: "ClusterRuntime", method, sessionId: String(sessionId) }))
    }
    return store.eventLog.treeOf(id.success).pipe(
      Effect.mapError((error) => failure(method, error)),
      Effect.flatMap(Option.match({
        onNone: () => Effect.fail(new SessionNotFound({ module: "ClusterRuntime", method, sessionId: id.success })),
        onSome: (treeId) => Effect.succeed({ treeId, sessionId: id.success })
      }))
    )
  }

  /**
   * A message to the tree's runner, on the wall clock: sent again while it does not get through; the cluster's
   * failures to deliver it are `TransportFailure`s.
   */
  const routed = <A, E>(
    method: string,
    send: Effect.Effect<A, E | RunnerStopping | ClusterError>
  ): Effect.Effect<A, Exclude<E, RunnerStopping> | TransportFailure> =>
    Effect.retry(
      undelivered(send),
      { while: isResent, schedule: Schedule.spaced("100 millis").pipe(Schedule.upTo({ duration: "60 seconds" })) }
    ).pipe(
      Effect.provideService(Clock.Clock, wallClock),
      Effect.catchIf(
        (error): error is ClusterError | RunnerStopping | Undelivered =>
          isResent(error) ||
          typeof error === "object" && error !== null && "_tag" in error && clusterErrors.has(String(error._tag)),
        (error) => Effect.fail(failure(method, error))
      )
    ) as Effect.Effect<A, Exclude<E, RunnerStopping> | TransportFailure>

  return {
    createSession: local.createSession,
    getSession: local.getSession,
    getTurn: local.getTurn,
    events: local.events,
    subscribe: local.subscribe,
    snapshot: local.snapshot,
    grants: local.grants,
    listOpen: local.listOpen,
    sendMessage: (sessionId, input, sendOptions) =>
      Effect.gen(function*() {
        // Checked first (a malformed id sends nothing); one made up when none is given: a send the cluster repeats
        // (its runner died before replying) queues one turn.
        const requestId = sendOptions?.requestId === undefined
          ? yield* Ids.newRequestId
          : yield* Ids.requestId(sendOptions.requestId)
        const { treeId } = yield* treeOf("sendMessage", sessionId)
        return yield* routed(
          "sendMessage",
          client(treeId).SendMessage({ sessionId, input: String(input), requestId })
        )
      }),
    answer: (request) =>
      Effect.gen(function*() {
        const fields = (typeof request === "object" && request !== null ? request : {}) as Partial<
          Transport.AnswerRequest
        >
        // As for a send: an answer the cluster delivers twice (its runner died before replying) wins once and is
        // accepted both times, not reported as already answered the second time.
        const requestId = fields.requestId === undefined
          ? yield* Ids.newRequestId
          : yield* Ids.requestId(fields.requestId)
        const { sessionId, treeId } = yield* treeOf("answer", fields.sessionId)
        return yield* routed(
          "answer",
          client(treeId).Answer({
            sessionId,
            requestId,
            ...jsonFields({
              turnId: fields.turnId,
              callbackId: fields.callbackId,
              answer: encoded(encodeAnswer, fields.answer),
              answeredBy: encoded(encodePrincipal, fields.answeredBy)
            })
          })
        )
      }),
    revokeGrant: (request) =>
      Effect.gen(function*() {
        const { sessionId, treeId } = yield* treeOf("revokeGrant", request.sessionId)
        return yield* routed(
          "revokeGrant",
          client(treeId).RevokeGrant({
            sessionId,
            grantId: String(request.grantId),
            ...jsonFields({
              revokedBy: encoded(encodePrincipal, request.revokedBy)
            })
          })
        )
      }),
    cancel: (sessionId) =>
      Effect.gen(function*() {
        const { sessionId: id, treeId } = yield* treeOf("cancel", sessionId)
        return yield* routed("cancel", client(treeId).Cancel({ sessionId: id }))
      })
  }
}
