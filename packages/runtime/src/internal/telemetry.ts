/**
 * The engine's spans and metrics, written with Effect's own `Tracer` and `Metric` (no OpenTelemetry here: a program
 * exports them by providing a tracer, e.g. `@parley/telemetry`'s `ParleyTelemetry.layer`).
 *
 * Telemetry is on for a tree once a fiber that works on it runs under a tracer other than Effect's native one (a
 * program that provides none gets nothing, and pays one comparison per commit). The tree then keeps that tracer:
 *
 * - `parley.turn`: one span per turn per engine, from its `TurnQueued` (or from when this engine took it up) to its
 *   `TurnEnded` (or to when the tree leaves memory). The engine that accepts a turn records the span's context on the
 *   `TurnQueued`; an engine that takes the turn up later (after a restart, another process) links its span to it.
 * - `parley.model_step`, `parley.tool`: the work items, children of their turn's span.
 * - `parley.callback`: from `CallbackOpened` to `CallbackResolved`, a child of its turn's span.
 * - `parley.store.append`: each append, a child of the span of the first event's turn.
 *
 * Metrics (`metrics.ts`) are counted by the tree's owner only (a follower sees the same events): turns by final state, model steps,
 * tool runs, callback wait time, callbacks open.
 */
import type { CallbackId, TurnId } from "@parley/core/Ids"
import * as Principal from "@parley/core/Principal"
import type { TurnEvent } from "@parley/core/TurnEvent"
import { TraceContext } from "@parley/core/TurnEvent"
import * as TreeState from "@parley/log/TreeState"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import { callbacksOpen, callbackWait, count, modelSteps, toolRuns, turnsEndedIn, type Update } from "./metrics.js"

/** Effect's native tracer: the one a program that provides no tracer runs under. */
const nativeTracer = Context.get(DefaultServices.liveServices, Tracer.Tracer)

/** The tracer a fiber runs under, unless it is the native one. */
export const tracerOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Tracer.Tracer | undefined => {
  const tracer = fiber.currentTracer
  return tracer === nativeTracer ? undefined : tracer
}

/** What a traced tree keeps: its tracer and the spans it has open. */
export interface Traced {
  readonly tracer: Tracer.Tracer
  /** Turn spans made before their `TurnQueued` was appended (it records their context), by span id. */
  readonly pending: Map<string, Tracer.Span>
  readonly turns: Map<TurnId, Tracer.Span>
  readonly callbacks: Map<CallbackId, Tracer.Span>
}

export const make = (tracer: Tracer.Tracer): Traced => ({
  tracer,
  pending: new Map(),
  turns: new Map(),
  callbacks: new Map()
})

// =============================================================================
// Spans
// =============================================================================

const nanos = (millis: number) => BigInt(Math.round(millis)) * 1_000_000n

/** The time of the fiber's clock, as a span's time (nanoseconds). */
export const nowOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): bigint =>
  nanos(Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis())

export const contextOf = (span: Tracer.Span) => new TraceContext({ traceId: span.traceId, spanId: span.spanId })

/** A span of the tree's tracer started at `at` (nanoseconds), under `parent`, with `attributes` and `links`. */
const startSpan = (
  traced: Traced,
  name: string,
  parent: Tracer.AnySpan | undefined,
  at: bigint,
  attributes: Record<string, unknown>,
  links: ReadonlyArray<Tracer.SpanLink> = []
): Tracer.Span => {
  const span = traced.tracer.span(
    name,
    parent === undefined ? Option.none() : Option.some(parent),
    Context.empty(),
    links,
    at,
    "internal"
  )
  for (const key in attributes) span.attribute(key, attributes[key])
  return span
}

/** A turn span this engine starts (`sendMessage`), before its `TurnQueued` exists: recorded on it, then adopted. */
export const startTurn = (traced: Traced, fiber: Fiber.RuntimeFiber<unknown, unknown>, attributes: {
  readonly session: string
  readonly agent: string
}): Tracer.Span => {
  const span = startSpan(traced, "parley.turn", fiber.currentSpan, nowOf(fiber), {
    "parley.session.id": attributes.session,
    "parley.agent.name": attributes.agent
  })
  traced.pending.set(span.spanId, span)
  return span
}

/** Ends a span with a successful exit at `at` (epoch milliseconds). */
const end = (span: Tracer.Span, at: number) => span.end(nanos(at), Exit.void)

/**
 * The span of a turn in this engine: the one open, or one started now — linked to the span its `TurnQueued` names
 * (another engine's, or this one's before the tree left memory), a child of its parent session's turn span.
 */
export const turnSpan = (traced: Traced, state: TreeState.TreeState, turnId: TurnId, at: number) => {
  const open = traced.turns.get(turnId)
  if (open !== undefined) return open
  const turn = TreeState.turn(state, turnId)
  if (turn === undefined || turn.status === "ended") return undefined
  const parent = turn.cause === undefined ? undefined : traced.turns.get(turn.cause.turnId)
  const links: Array<Tracer.SpanLink> = turn.trace === undefined ? [] : [{
    _tag: "SpanLink",
    span: Tracer.externalSpan({ traceId: turn.trace.traceId, spanId: turn.trace.spanId }),
    attributes: { "parley.link": "turn taken up" }
  }]
  const span = startSpan(traced, "parley.turn", parent, nanos(at), {
    "parley.session.id": turn.sessionId,
    "parley.turn.id": turnId
  }, links)
  const session = TreeState.session(state, turn.sessionId)
  if (session !== undefined) span.attribute("parley.agent.name", session.agent.name)
  if (links.length > 0) span.attribute("parley.turn.resumed", true)
  traced.turns.set(turnId, span)
  return span
}

const kindOf = (callback: TreeState.CallbackRecord["callback"]) =>
  callback._tag === "OpenApproval" ? "approval" : callback._tag === "OpenClientToolCall" ? "client_tool" : "sign_in"

/**
 * Takes committed events in: opens and ends the turn and callback spans, and counts the metrics (when `owner`: the
 * engine holds the tree's lease). `state` is the tree's state after them.
 */
export const observe = (
  traced: Traced,
  state: TreeState.TreeState,
  events: ReadonlyArray<TurnEvent>,
  owner: boolean
): Effect.Effect<void> => {
  const metrics: Array<Update> = []
  for (const event of events) {
    const at = event.at.epochMillis
    switch (event._tag) {
      case "TurnQueued": {
        const pending = event.trace === undefined ? undefined : traced.pending.get(event.trace.spanId)
        if (pending !== undefined) {
          traced.pending.delete(pending.spanId)
          pending.attribute("parley.turn.id", event.turnId)
          traced.turns.set(event.turnId, pending)
        } else if (event.trace === undefined) {
          turnSpan(traced, state, event.turnId, at)
        }
        break
      }
      case "ModelStepStarted":
        if (owner) metrics.push([modelSteps, 1])
        break
      case "ToolExecutionStarted":
        if (owner) metrics.push([toolRuns, 1])
        break
      case "CallbackOpened": {
        const callback = event.callback
        const parent = turnSpan(traced, state, callback.turnId, at)
        const span = startSpan(traced, "parley.callback", parent, nanos(at), {
          "parley.callback.id": callback.id,
          "parley.callback.kind": kindOf(callback)
        })
        if (callback._tag !== "OpenSignIn") span.attribute("parley.tool.id", callback.request.tool.id)
        span.attribute("parley.session.id", callback.sessionId)
        traced.callbacks.set(callback.id, span)
        if (owner) metrics.push([callbacksOpen, 1])
        break
      }
      case "CallbackResolved": {
        const record = TreeState.callback(state, event.callbackId)
        const waited = record === undefined ? undefined : at - record.callback.openedAt.epochMillis
        const span = traced.callbacks.get(event.callbackId)
        if (span !== undefined) {
          traced.callbacks.delete(event.callbackId)
          span.attribute("parley.callback.resolution", event.resolution)
          if (waited !== undefined) span.attribute("parley.callback.wait_ms", waited)
          if (event.answer !== undefined) span.attribute("parley.callback.answer", event.answer._tag)
          if (event.answeredBy !== undefined) {
            span.attribute("parley.callback.answered_by", Principal.describe(event.answeredBy))
            span.attribute("parley.callback.answered_by.kind", event.answeredBy._tag)
          }
          end(span, at)
        } else {
          // Answered here, opened elsewhere: the turn's span in this engine (linked to the first) shows it.
          turnSpan(traced, state, event.turnId, at)?.event("parley.callback.resolved", nanos(at), {
            "parley.callback.id": event.callbackId,
            "parley.callback.resolution": event.resolution,
            ...(event.answeredBy === undefined
              ? {}
              : { "parley.callback.answered_by": Principal.describe(event.answeredBy) })
          })
        }
        if (owner) {
          metrics.push([callbacksOpen, -1])
          if (waited !== undefined) metrics.push([callbackWait, waited])
        }
        break
      }
      case "TurnEnded": {
        const span = traced.turns.get(event.turnId)
        if (span !== undefined) {
          traced.turns.delete(event.turnId)
          span.attribute("parley.turn.state", event.state._tag)
          span.attribute("parley.turn.steps", TreeState.turn(state, event.turnId)?.steps ?? 0)
          end(span, at)
        }
        if (owner) {
          metrics.push([turnsEndedIn(event.state._tag), 1])
        }
        break
      }
      default:
        break
    }
  }
  return metrics.length === 0 ? Effect.void : count(metrics)
}

/** Ends what is still open when the tree leaves memory: another load (or engine) takes its turns up, linked. */
export const close = (traced: Traced, at: number) => {
  for (const span of traced.callbacks.values()) {
    span.attribute("parley.callback.resolution", "elsewhere")
    end(span, at)
  }
  for (const span of [...traced.turns.values(), ...traced.pending.values()]) {
    span.attribute("parley.turn.suspended", true)
    end(span, at)
  }
  traced.callbacks.clear()
  traced.turns.clear()
  traced.pending.clear()
}

/**
 * Runs `f` in a span made by hand (`parley.tool`): nothing under it needs it as a parent, and leaving the fiber's
 * context alone spares the fiber references' bookkeeping a span in context costs. `f` may set attributes on it.
 */
export const manual = <A, E, R>(
  traced: Traced,
  parent: Tracer.Span | undefined,
  name: string,
  attributes: Record<string, unknown>,
  f: (span: Tracer.Span) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const span = startSpan(traced, name, parent, nowOf(fiber), attributes)
    return Effect.onExit(f(span), (exit) => Effect.sync(() => span.end(nowOf(fiber), exit)))
  })

/**
 * Runs a work item in a span (`parley.model_step`), a child of its turn's, and the span of its fiber's context:
 * `@effect/ai`'s span of the model call is its child. `effect` must be the whole body of a fiber of its own (the
 * engine forks each work item): the span is put in that fiber's context for good, not for a region, which spares
 * the steps of `Effect.withSpan` (span options read from fiber references, the context set and restored). (Not pinned
 * to the tree's tracer with `Effect.withTracer`: that costs every join of the work's fibers a comparison of fiber
 * references; the work's fiber has the tracer of the one that started it.)
 */
export const work = <A, E, R>(
  traced: Traced,
  parent: Tracer.Span | undefined,
  name: string,
  attributes: Record<string, unknown>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const span = startSpan(traced, name, parent, nowOf(fiber), attributes)
    return FiberRef.update(FiberRef.currentContext, (context) => Context.add(context, Tracer.ParentSpan, span)).pipe(
      Effect.zipRight(Effect.onExit(effect, (exit) => Effect.sync(() => span.end(nowOf(fiber), exit))))
    )
  })

/**
 * About how many bytes `value` takes as JSON text: strings by their length, numbers as 8, a date as 24, the keys and
 * punctuation of objects and arrays. `JSON.stringify` would be exact but costs as much as the rest of the telemetry
 * of a turn together (it goes through every value's `toJSON`).
 */
const sizeOf = (value: unknown, depth: number): number => {
  switch (typeof value) {
    case "string":
      return value.length + 2
    case "number":
      return 8
    case "boolean":
      return 5
    case "object": {
      if (value === null) return 4
      if (depth > 16) return 0
      if (Array.isArray(value)) {
        let size = 2
        for (const item of value) size += sizeOf(item, depth + 1) + 1
        return size
      }
      if ("epochMillis" in value && typeof value.epochMillis === "number") return 24
      let size = 2
      for (const key in value) {
        const field = (value as Record<string, unknown>)[key]
        if (field !== undefined && typeof field !== "function") size += key.length + 4 + sizeOf(field, depth + 1)
      }
      return size
    }
    default:
      return 0
  }
}

/**
 * An append in a span, a child of the span of its first event's turn: how many events, and about how many bytes they
 * take as JSON text (what a SQL store writes, give or take its columns).
 */
export const append = <A, E, R>(
  traced: Traced,
  events: ReadonlyArray<TurnEvent>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  // Made by hand, not with `Effect.withSpan`: nothing runs under it, and leaving the fiber's context alone spares the
  // fiber references' bookkeeping a span in context costs.
  Effect.withFiberRuntime((fiber) => {
    const first = events[0]
    const parent = first._tag === "TurnQueued" && first.trace !== undefined
      ? traced.pending.get(first.trace.spanId) ?? traced.turns.get(first.turnId)
      : traced.turns.get(first.turnId)
    let bytes = 0
    for (const event of events) bytes += sizeOf(event, 0)
    const span = startSpan(traced, "parley.store.append", parent, nowOf(fiber), {
      "parley.store.events": events.length,
      "parley.store.bytes": bytes
    })
    // The span ends in the append's own continuations, not with `Effect.onExit` (its masks cost steps of the
    // runtime): appends run where the tree's mailbox is processed, uninterruptibly, so one of them always runs.
    return Effect.matchCauseEffect(effect, {
      onFailure: (cause) => {
        span.end(nowOf(fiber), Exit.failCause(cause))
        return Effect.failCause(cause)
      },
      onSuccess: (value) => {
        span.end(nowOf(fiber), Exit.void)
        return Effect.succeed(value)
      }
    })
  })
