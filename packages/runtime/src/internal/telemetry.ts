/**
 * The engine's spans and metrics, written with Effect's own `Tracer` and `Metric` (no OpenTelemetry here: a program
 * exports them by providing a tracer, e.g. `@parley/telemetry`'s `ParleyTelemetry.layer`).
 *
 * Telemetry is on for a tree once a fiber that works on it runs under a tracer other than Effect's native one (a
 * program that provides none gets nothing, and pays one comparison per commit). The tree then keeps that tracer, and
 * the clock of that fiber. Every span is made by hand, started and ended where the engine already is (a commit, a
 * work item's start and report): no effect wraps what it measures, so telemetry adds no step to the runtime's work.
 *
 * - `parley.turn`: one span per turn per engine, from its `TurnQueued` (or from when this engine took it up) to its
 *   `TurnEnded` (or to when the tree leaves memory). The engine that accepts a turn records the span's context on the
 *   `TurnQueued`; an engine that takes the turn up later (after a restart, another process) links its span to it.
 * - `parley.model_step`, `parley.tool`: the work items, children of their turn's span, from their start to their
 *   report (or until the engine stops them).
 * - `parley.callback`: from `CallbackOpened` to `CallbackResolved`, a child of its turn's span.
 * - `parley.store.append`: each append, a child of the span of the first event's turn.
 *
 * Metrics (`metrics.ts`) are counted by the tree's owner only (a follower sees the same events): turns by final
 * state, model steps, tool runs, callback wait time, callbacks open.
 */
import type { CallbackId, TurnId } from "@parley/core/Ids"
import * as Principal from "@parley/core/Principal"
import type { TurnEvent } from "@parley/core/TurnEvent"
import { TraceContext } from "@parley/core/TurnEvent"
import type { Written } from "@parley/log/EventLog"
import * as TreeState from "@parley/log/TreeState"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Tracer from "effect/Tracer"
import type { Command } from "./commands.js"
import { callbacksOpen, callbackWait, modelSteps, toolRuns, turnsEndedIn } from "./metrics.js"

/** An append under way in a traced tree (`startAppend`): when it began, under which span, how many events. */
interface Appending {
  readonly at: bigint
  readonly parent: Tracer.AnySpan | undefined
  readonly events: number
}

/** What a traced tree keeps: its tracer and clock, and the spans it has open. */
export interface Traced {
  readonly tracer: Tracer.Tracer
  /**
   * The clock of the fiber that began tracing the tree (a test's `TestClock` included): spans read it directly, with
   * no effect (and no step of the runtime) to start or end one.
   */
  readonly clock: Clock.Clock
  /** The append under way, if any (a tree's appends are one at a time): `close` makes its span if cut short. */
  appending: Appending | undefined
  /** The spans of the work items running, by the work's key (`startWork`). */
  readonly work: Map<string, Tracer.Span>
  /** The clock's last reading (epoch milliseconds), and as a span's time (`now`). */
  lastMillis: number
  lastNanos: bigint
  /** Turn spans made before their `TurnQueued` was appended (it records their context), by span id. */
  readonly pending: Map<string, Tracer.Span>
  readonly turns: Map<TurnId, Tracer.Span>
  readonly callbacks: Map<CallbackId, Tracer.Span>
}

/**
 * The telemetry of a tree worked on by `fiber`: none when the fiber runs under Effect's native tracer (a program that
 * provides no tracer), else its tracer's and clock's.
 */
export const tracing = (fiber: Fiber.Fiber<unknown, unknown>): Traced | undefined => {
  // `Tracer.Tracer` is a reference whose default is the native tracer: a program that provides none runs under it.
  const tracer = fiber.getRef(Tracer.Tracer)
  if (tracer === Tracer.nativeTracer) return undefined
  return {
    tracer,
    clock: fiber.getRef(Clock.Clock),
    appending: undefined,
    work: new Map(),
    lastMillis: 0,
    lastNanos: 0n,
    pending: new Map(),
    turns: new Map(),
    callbacks: new Map()
  }
}

// =============================================================================
// Spans
// =============================================================================

const nanos = (millis: number) => BigInt(Math.round(millis)) * 1_000_000n

/**
 * The time of the tree's clock, as a span's time (nanoseconds). Most of a turn's spans start and end within the same
 * few milliseconds: the last conversion is kept.
 */
export const now = (traced: Traced): bigint => timeOf(traced, traced.clock.currentTimeMillisUnsafe())

/** `millis` (epoch milliseconds) as a span's time, the last conversion kept. */
const timeOf = (traced: Traced, millis: number): bigint => {
  if (millis !== traced.lastMillis) {
    traced.lastMillis = millis
    traced.lastNanos = nanos(millis)
  }
  return traced.lastNanos
}

/** The context a `TurnQueued` records (not validated again: a tracer's own ids). */
export const contextOf = (span: Tracer.Span) =>
  new TraceContext({ traceId: span.traceId, spanId: span.spanId }, { disableChecks: true })

/** The context of every span the engine starts: none of its own (a tracer's services are the fiber's). */
const noContext = Context.empty()

/** A span of the tree's tracer started at `at` (nanoseconds), under `parent`, with `attributes` and `links`. */
const startSpan = (
  traced: Traced,
  name: string,
  parent: Tracer.AnySpan | undefined,
  at: bigint,
  attributes: Record<string, unknown>,
  links: ReadonlyArray<Tracer.SpanLink> = []
): Tracer.Span => {
  const span = traced.tracer.span({
    name,
    parent: parent === undefined ? Option.none() : Option.some(parent),
    annotations: noContext,
    links: [...links],
    startTime: at,
    kind: "internal",
    root: false,
    // As Effect's own spans: a child of an unsampled span is not sampled either.
    sampled: parent === undefined ? true : parent.sampled
  })
  for (const key in attributes) span.attribute(key, attributes[key])
  return span
}

/** A turn span this engine starts (`sendMessage`), before its `TurnQueued` exists: recorded on it, then adopted. */
export const startTurn = (traced: Traced, fiber: Fiber.Fiber<unknown, unknown>, attributes: {
  readonly session: string
  readonly agent: string
}): Tracer.Span => {
  const parent = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  const span = startSpan(traced, "parley.turn", parent, now(traced), {
    "parley.session.id": attributes.session,
    "parley.agent.name": attributes.agent
  })
  traced.pending.set(span.spanId, span)
  return span
}

/** Ends a span with a successful exit at `at` (epoch milliseconds). */
const end = (traced: Traced, span: Tracer.Span, at: number) => span.end(timeOf(traced, at), Exit.void)

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
    span: Tracer.externalSpan({ traceId: turn.trace.traceId, spanId: turn.trace.spanId }),
    attributes: { "parley.link": "turn taken up" }
  }]
  const span = startSpan(traced, "parley.turn", parent, timeOf(traced, at), {
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
 * engine holds the tree's lease) in `fiber`'s context (its metric registry and attributes). `state` is the tree's state after them. Called where a
 * fiber runs (`Effect.withFiber`): the metrics are updated at once, with no effect of their own.
 */
export const observe = (
  traced: Traced,
  state: TreeState.TreeState,
  events: ReadonlyArray<TurnEvent>,
  owner: boolean,
  fiber: Fiber.Fiber<unknown, unknown>
): void => {
  // The owner counts the metrics in the fiber's context (what `Metric.update` does, without its effect).
  const labels = owner ? fiber.context : undefined
  for (const event of events) {
    const at = event.at.epochMilliseconds
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
        if (labels !== undefined) modelSteps.updateUnsafe(1, labels)
        break
      case "ToolExecutionStarted":
        if (labels !== undefined) toolRuns.updateUnsafe(1, labels)
        break
      case "CallbackOpened": {
        const callback = event.callback
        const parent = turnSpan(traced, state, callback.turnId, at)
        const span = startSpan(traced, "parley.callback", parent, timeOf(traced, at), {
          "parley.callback.id": callback.id,
          "parley.callback.kind": kindOf(callback)
        })
        if (callback._tag !== "OpenSignIn") span.attribute("parley.tool.id", callback.request.tool.id)
        traced.callbacks.set(callback.id, span)
        if (labels !== undefined) callbacksOpen.updateUnsafe(1, labels)
        break
      }
      case "CallbackResolved": {
        const record = TreeState.callback(state, event.callbackId)
        const waited = record === undefined ? undefined : at - record.callback.openedAt.epochMilliseconds
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
          end(traced, span, at)
        } else {
          // Answered here, opened elsewhere: the turn's span in this engine (linked to the first) shows it.
          turnSpan(traced, state, event.turnId, at)?.event("parley.callback.resolved", timeOf(traced, at), {
            "parley.callback.id": event.callbackId,
            "parley.callback.resolution": event.resolution,
            ...(event.answeredBy === undefined
              ? {}
              : { "parley.callback.answered_by": Principal.describe(event.answeredBy) })
          })
        }
        if (labels !== undefined) {
          callbacksOpen.updateUnsafe(-1, labels)
          if (waited !== undefined) callbackWait.updateUnsafe(waited, labels)
        }
        break
      }
      case "TurnEnded": {
        const span = traced.turns.get(event.turnId)
        if (span !== undefined) {
          traced.turns.delete(event.turnId)
          span.attribute("parley.turn.state", event.state._tag)
          span.attribute("parley.turn.steps", TreeState.turn(state, event.turnId)?.steps ?? 0)
          end(traced, span, at)
        }
        if (labels !== undefined) {
          turnsEndedIn(event.state._tag).updateUnsafe(1, labels)
        }
        break
      }
      default:
        break
    }
  }
}

/** Ends what is still open when the tree leaves memory: another load (or engine) takes its turns up, linked. */
export const close = (traced: Traced, at: number) => {
  if (traced.appending !== undefined) {
    appendSpan(traced, traced.appending).end(timeOf(traced, at), Exit.interrupt())
    traced.appending = undefined
  }
  for (const span of traced.work.values()) span.end(timeOf(traced, at), Exit.interrupt())
  traced.work.clear()
  for (const span of traced.callbacks.values()) {
    span.attribute("parley.callback.resolution", "elsewhere")
    end(traced, span, at)
  }
  for (const span of [...traced.turns.values(), ...traced.pending.values()]) {
    span.attribute("parley.turn.suspended", true)
    end(traced, span, at)
  }
  traced.callbacks.clear()
  traced.turns.clear()
  traced.pending.clear()
}

/**
 * Starts the span of a work item (`parley.model_step`, `parley.tool`), a child of its turn's, kept under the work's
 * key: the work ends it when it reports its result (`endWork`), the engine when it stops the work or the tree leaves
 * memory. No effect wraps the work: the span costs the runtime no step.
 */
export const startWork = (
  traced: Traced,
  key: string,
  name: string,
  parent: Tracer.Span | undefined,
  attributes: Record<string, unknown>
): Tracer.Span => {
  const span = startSpan(traced, name, parent, now(traced), attributes)
  traced.work.set(key, span)
  return span
}

/**
 * Makes `span` the parent of the spans the rest of the fiber starts (`effect/ai`'s span of the model call is a child
 * of the model step's, a tool's own spans children of its `parley.tool`). For a fiber of its own (the engine forks
 * each work item): the span is put in that fiber's context for good, not for a region, which spares the steps of
 * `Effect.withSpan` (span options read from the fiber's references, the context set and restored). (Not pinned to
 * the tree's tracer with `Effect.withTracer`: the work's fiber has the tracer of the one that started it.)
 */
export const parentOf = (span: Tracer.Span): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    fiber.setContext(Context.add(fiber.context, Tracer.ParentSpan, span))
    return Effect.void
  })

/** What a work item's result says of its run: a tool's outcome, and the span's exit. */
const outcomeOf = (
  result: Command | undefined
): { readonly outcome?: string; readonly exit: Exit.Exit<void, unknown> } => {
  switch (result?._tag) {
    case undefined:
      return { exit: Exit.interrupt() }
    case "ModelStepDone":
      return { exit: Exit.void }
    case "ToolFinished":
      return { outcome: result.isFailure ? "error" : "ok", exit: Exit.void }
    case "ToolNeedsSignIn":
      return { outcome: "sign_in", exit: Exit.void }
    case "ModelStepFailed":
    case "WorkFailed":
      return { outcome: "failed", exit: Exit.fail(result.error) }
    default:
      return { exit: Exit.void }
  }
}

/**
 * Ends the span of the work under `key` with its result (`undefined`: the work was stopped before it had one). A
 * tool's span says its outcome (`parley.tool.outcome`).
 */
export const endWork = (traced: Traced, key: string, result: Command | undefined): void => {
  const span = traced.work.get(key)
  if (span === undefined) return
  traced.work.delete(key)
  const { exit, outcome } = outcomeOf(result)
  if (outcome !== undefined && span.name === "parley.tool") span.attribute("parley.tool.outcome", outcome)
  span.end(now(traced), exit)
}

/**
 * Notes the start of an append (for `parley.store.append`): when, under the span of its first event's turn, how many
 * events. No span is made yet: nothing runs under it, and `endAppend` makes it once the store has answered, only if
 * the store wrote something.
 */
export const startAppend = (traced: Traced, events: ReadonlyArray<TurnEvent>): void => {
  const first = events[0]
  const parent = first._tag === "TurnQueued" && first.trace !== undefined
    ? traced.pending.get(first.trace.spanId) ?? traced.turns.get(first.turnId)
    : traced.turns.get(first.turnId)
  traced.appending = { at: now(traced), parent, events: events.length }
}

/**
 * The span of the append under way (`parley.store.append`, from its start to now), with its result: the bytes the
 * store wrote (`Written`), or the store's error. A store that wrote nothing — the memory store keeps the events as
 * values (`bytes: undefined`) — gets no span: its append is a few map updates, with no time or size worth a span.
 */
export const endAppend = (traced: Traced, result: Result.Result<Written, unknown>): void => {
  const appending = traced.appending
  if (appending === undefined) return
  traced.appending = undefined
  if (Result.isSuccess(result) && result.success.bytes === undefined) return
  const span = appendSpan(traced, appending)
  if (Result.isFailure(result)) return span.end(now(traced), Exit.fail(result.failure))
  span.attribute("parley.store.bytes", result.success.bytes)
  span.end(now(traced), Exit.void)
}

const appendSpan = (traced: Traced, appending: Appending): Tracer.Span =>
  startSpan(traced, "parley.store.append", appending.parent, appending.at, {
    "parley.store.events": appending.events
  })
