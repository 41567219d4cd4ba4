/**
 * The handlers of `ProtocolApi`'s JSON routes over the `Transport`: every lookup is scoped to the request's tenant.
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { Callback } from "@parley/core/Callback"
import type { SessionId } from "@parley/core/Ids"
import * as Ids from "@parley/core/Ids"
import { AgentInvalid, type TransportFailure } from "@parley/core/ParleyError"
import { ApiKey, Client, Handler } from "@parley/core/Principal"
import {
  type AnswerManyLine as AnswerManyLineSchema,
  type CallbackFilter,
  MessageTooLong,
  ProtocolApi,
  SessionPage,
  Tenant
} from "@parley/core/ProtocolApi"
import type { ToolSpec } from "@parley/core/ToolSpec"
import type { TurnSnapshot } from "@parley/core/Transport"
import type * as RuntimeTools from "@parley/runtime/RuntimeTools"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { Access } from "./access.js"
import { notFound } from "./access.js"
import * as Agents from "./agents.js"
import type * as Served from "./served.js"
import type * as Sessions from "./sessions.js"

export interface Limits {
  readonly maxMessageLength: number
}

/** Any `SessionNotFound` of a request becomes the server's one (as for a foreign session). */
const uniform = <A, E extends { readonly _tag: string }, R>(sessionId: SessionId, effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, { readonly _tag: "SessionNotFound" }> => error._tag === "SessionNotFound",
    () => Effect.fail(notFound(sessionId))
  )

export const agents = (list: ReadonlyArray<AgentSpec>) =>
  HttpApiBuilder.group(ProtocolApi, "agents", (handlers) => handlers.handle("list", () => Effect.succeed(list)))

/** The tools of an agent and of its subagents, at any depth. */
const toolsOf = (agent: AgentSpec): ReadonlyArray<ToolSpec> => [...agent.tools, ...agent.subagents.flatMap(toolsOf)]

/**
 * A client's definition may mark a tool `runsIn: "runtime"` only if this server runs it: else each call would end in
 * a failure result, long after the mistake. (`provided` is `None` for a server over a `Transport` it did not build.)
 */
const checkRuntimeTools = (agent: AgentSpec, provided: Option.Option<RuntimeTools.Service>) => {
  if (Option.isNone(provided)) return Effect.void
  const missing = toolsOf(agent).filter((spec) =>
    spec.runsIn === "runtime" && Option.isNone(provided.value.get(spec.id))
  )
  return missing.length === 0 ? Effect.void : Effect.fail(
    new AgentInvalid({
      module: "ParleyServer",
      method: "createSession",
      agent: agent.name,
      issues: missing.map((spec) =>
        `tool ${spec.name} (${spec.id}) is marked to run in the runtime, and this server has no handler for it ` +
        "(give it to the server's tools, or leave runsIn unset so the client answers its calls)"
      )
    })
  )
}

export const sessions = (
  transport: Served.Served,
  tenants: Sessions.Service,
  access: Access,
  runtimeTools: Option.Option<RuntimeTools.Service>,
  ownership: Agents.Ownership
) =>
  HttpApiBuilder.group(ProtocolApi, "sessions", (handlers) =>
    handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          const agent = yield* Agents.resolve(ownership, payload)
          yield* checkRuntimeTools(agent, runtimeTools)
          const info = yield* transport.createSession(agent)
          yield* tenants.register(tenant.id, info)
          access.created(info.sessionId)
          return info
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          const page = yield* tenants.list(tenant.id, query.limit ?? 20, query.cursor)
          return new SessionPage(
            page.next === undefined ? { sessions: page.sessions } : { sessions: page.sessions, next: page.next }
          )
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          return yield* uniform(params.sessionId, transport.getSession(params.sessionId))
        }))
      .handle("cancel", ({ params }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          yield* uniform(params.sessionId, transport.cancel(params.sessionId))
        }))
      .handle("grants", ({ params }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          return yield* uniform(params.sessionId, transport.grants(params.sessionId))
        }))
      .handle("revokeGrant", ({ params, query }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          const revokedBy = new ApiKey({
            tenant: tenant.id,
            keyId: tenant.keyId,
            onBehalfOf: new Client({ label: query.label })
          })
          yield* uniform(params.sessionId, transport.revokeGrant({ ...params, revokedBy }))
        })))

/** Waits until the turn ended or is blocked, or `timeout` passed: the snapshot then. */
const waitFor = (
  transport: Served.Served,
  sessionId: SessionId,
  turnId: TurnSnapshot["turn"]["turnId"],
  timeout: Duration.Duration
) =>
  Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(timeout)
    while (true) {
      const snapshot = yield* transport.snapshot(sessionId, turnId)
      const left = deadline - Date.now()
      if (snapshot.state !== undefined || left <= 0) return snapshot
      // Anything stored after the snapshot: look again.
      yield* transport.events(sessionId, snapshot.cursor).pipe(
        Stream.filter((event) => event._tag !== "MessageDelta"),
        Stream.take(1),
        Stream.runDrain,
        Effect.timeoutOption(Duration.millis(left))
      )
    }
  })

/**
 * The turn routes. `stopping` completes when the server starts to stop: a long-poll (`wait`) then answers at once,
 * with the turn as it stands.
 */
export const turns = (transport: Served.Served, access: Access, limits: Limits, stopping: Effect.Effect<void>) =>
  HttpApiBuilder.group(ProtocolApi, "turns", (handlers) =>
    handlers
      .handle("send", ({ params, payload }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          if (payload.input.length > limits.maxMessageLength) {
            return yield* new MessageTooLong({ limit: limits.maxMessageLength, length: payload.input.length })
          }
          // A retried POST carries the same request id: the engine answers the turn the first one queued.
          const requestId = payload.requestId === undefined ? undefined : yield* Ids.requestId(payload.requestId)
          return yield* uniform(params.sessionId, transport.sendMessage(params.sessionId, payload.input, { requestId }))
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          return yield* uniform(params.sessionId, transport.snapshot(params.sessionId, params.turnId))
        }))
      .handle("wait", ({ params, query }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          const timeout = Duration.seconds(query.timeout ?? 30)
          return yield* uniform(
            params.sessionId,
            Effect.raceFirst(
              waitFor(transport, params.sessionId, params.turnId, timeout),
              Effect.andThen(stopping, transport.snapshot(params.sessionId, params.turnId))
            )
          )
        })))

type AnswerManyLine = typeof AnswerManyLineSchema.Type

/** What a callback asks about, in a report line: its tool's id, or a sign-in's sources. */
const subjectOf = (callback: Callback) =>
  callback._tag === "OpenSignIn"
    ? callback.requests.map((request) => request.source).join(", ")
    : callback.request.tool.id

/** Whether `filter` matches the callback (its root session `root`, at `now` in epoch millis). */
const matches = (filter: typeof CallbackFilter.Type, callback: Callback, root: SessionId, now: number) =>
  (filter.kind === undefined || callback.kind === filter.kind) &&
  (filter.sessionId === undefined || callback.sessionId === filter.sessionId) &&
  (filter.treeId === undefined || root === filter.treeId) &&
  (filter.olderThan === undefined || now - callback.openedAt.epochMilliseconds >= filter.olderThan * 1000) &&
  (filter.tool === undefined || (callback._tag === "OpenSignIn"
    ? callback.requests.some((request) => request.source === filter.tool)
    : callback.request.tool.id === filter.tool || callback.request.tool.name === filter.tool))

export const callbacks = (transport: Served.Served, access: Access) => {
  /** The tenant's open callbacks (of one session, of one kind), each with its root session. */
  const openOf = (tenant: string, filter: { readonly sessionId?: SessionId; readonly kind?: Callback["kind"] }) =>
    Effect.gen(function*() {
      if (filter.sessionId !== undefined && !(yield* access.isOwned(tenant, filter.sessionId))) return []
      const open = yield* transport.listOpen({ sessionId: filter.sessionId, kind: filter.kind })
      const mine = new Map<SessionId, boolean>()
      return yield* Effect.filter(open, (entry) => {
        const sessionId = entry.callback.sessionId
        const known = mine.get(sessionId)
        if (known !== undefined) return Effect.succeed(known)
        return Effect.tap(
          access.isOwned(tenant, sessionId),
          (owned) => Effect.sync(() => mine.set(sessionId, owned))
        )
      })
    })
  return HttpApiBuilder.group(ProtocolApi, "callbacks", (handlers) =>
    handlers
      .handle("listOpen", ({ query }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          return yield* openOf(tenant.id, query)
        }))
      .handle("answerMany", ({ payload }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          const { filter } = payload
          const open = yield* openOf(tenant.id, { sessionId: filter.sessionId, kind: filter.kind })
          const now = Date.now()
          const chosen: Array<{ readonly callback: Callback; readonly root: SessionId }> = []
          for (const entry of open) {
            const root = yield* Effect.orElseSucceed(access.rootOf(entry.callback.sessionId), () => undefined)
            if (root !== undefined && matches(filter, entry.callback, root, now)) {
              chosen.push({ callback: entry.callback, root })
            }
          }
          const answeredBy = new ApiKey({
            tenant: tenant.id,
            keyId: tenant.keyId,
            ...(tenant.roles === undefined || tenant.roles.length === 0 ? {} : { roles: tenant.roles }),
            onBehalfOf: new Client({ label: payload.label })
          })
          // One request's answer per callback, one tree at a time in the order they opened; the trees side by side.
          const trees = new Map<SessionId, Array<{ readonly callback: Callback; readonly root: SessionId }>>()
          for (const entry of chosen) {
            const ofTree = trees.get(entry.root)
            if (ofTree === undefined) trees.set(entry.root, [entry])
            else ofTree.push(entry)
          }
          const lines = yield* Effect.forEach(
            trees.values(),
            (entries) =>
              Effect.forEach(entries, ({ callback, root }): Effect.Effect<AnswerManyLine, TransportFailure> => {
                const line = {
                  callbackId: callback.id,
                  sessionId: callback.sessionId,
                  turnId: callback.turnId,
                  kind: callback.kind,
                  subject: subjectOf(callback)
                }
                if (payload.dryRun === true) return Effect.succeed({ ...line, outcome: "matched" as const })
                return transport.answer({
                  sessionId: root,
                  turnId: callback.rootTurnId ?? callback.turnId,
                  callbackId: callback.id,
                  answer: payload.answer,
                  answeredBy
                }).pipe(
                  Effect.as({ ...line, outcome: "answered" as const }),
                  Effect.catchIf(
                    (error) => error._tag !== "TransportFailure",
                    (error) =>
                      Effect.succeed({
                        ...line,
                        outcome: "refused" as const,
                        error: error._tag,
                        reason: "reason" in error && typeof error.reason === "string" ? error.reason : error.message
                      })
                  )
                )
              }),
            { concurrency: 8 }
          )
          return { results: lines.flat() }
        }))
      .handle("answer", ({ params, payload, query }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          yield* access.owned(tenant.id, params.sessionId)
          // Who answered is the key the request was authenticated with; what the client says is kept as its claim.
          const answeredBy = new ApiKey({
            tenant: tenant.id,
            keyId: tenant.keyId,
            ...(tenant.roles === undefined || tenant.roles.length === 0 ? {} : { roles: tenant.roles }),
            onBehalfOf: query.handler !== undefined
              ? new Handler({ name: query.handler })
              : new Client({ label: query.label })
          })
          yield* uniform(
            params.sessionId,
            transport.answer({ ...params, answer: payload, answeredBy, requestId: query.requestId })
          )
        })))
}

/**
 * Where a stream starts: right after the `Last-Event-ID` header's `seq` (`ProtocolApi.LastEventId` checked it: digits
 * or nothing), else `?from=`, else the first event. An empty or blank header is no header: event 0 is not skipped.
 */
export const resumeFrom = (lastEventId: string | undefined, from: number | undefined): number => {
  const last = lastEventId?.trim() ?? ""
  return last === "" ? from ?? 0 : Number(last) + 1
}
