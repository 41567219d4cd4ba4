/**
 * Assertions and lookups shared by the scenarios: bounded waits, the state of a given tag, events of a tag, a turn's
 * whole log.
 */
import { assert } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import type { Callback, Kind } from "@parley/core/Callback"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type { TurnState } from "@parley/core/TurnState"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"

/**
 * `effect`, failed (as a defect naming `what`) when it has not finished after `seconds` of real time: the engine
 * under test may hang, and a `TestClock` never moves by itself. 20 s by default: what a turn does here takes
 * milliseconds, but a loaded machine (a full suite on two cores) can stall a process for seconds.
 */
export const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 20): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    TestClock.withLive(Effect.sleep(Duration.seconds(seconds))).pipe(
      Effect.andThen(Effect.sync(() => assert.fail(`${what}: still waiting after ${seconds} s (real time)`)))
    )
  )

export const stateAs = <Tag extends TurnState["_tag"]>(
  state: TurnState,
  tag: Tag
): Extract<TurnState, { _tag: Tag }> => {
  assert.strictEqual(
    state._tag,
    tag,
    `the turn is ${state._tag}${state._tag === "Failed" ? ` (${state.error.message})` : ""}`
  )
  return state as Extract<TurnState, { _tag: Tag }>
}

export const ofTag = <Tag extends TurnEvent["_tag"]>(
  events: ReadonlyArray<TurnEvent>,
  tag: Tag
): ReadonlyArray<Extract<TurnEvent, { _tag: Tag }>> =>
  events.filter((event): event is Extract<TurnEvent, { _tag: Tag }> => event._tag === tag)

/** The whole log of an ended turn (`Turn.events` ends with `TurnEnded`). */
export const logOf = (turn: Turn.Turn) => Stream.runCollect(Turn.events(turn))

/** The turn a state belongs to, found by id as another process would. */
export const turnOf = (
  agent: Agent.Agent,
  state: { readonly sessionId: string; readonly turnId: Turn.Turn["turnId"] }
) => Effect.flatMap(Agent.session(agent, state.sessionId), (session) => Session.turn(session, state.turnId))

export const kinds = (callbacks: ReadonlyArray<Callback>): ReadonlyArray<Kind> =>
  callbacks.map((callback) => callback.kind)

/** The kinds of concurrent callbacks, in a stable order. */
export const sortedKinds = (callbacks: ReadonlyArray<Callback>): ReadonlyArray<Kind> => [...kinds(callbacks)].sort()

export const assertOneResolution = (
  events: ReadonlyArray<TurnEvent>,
  callbackId: string,
  resolution: "answered" | "expired" | "turn_ended" | "cancelled"
) => {
  const resolved = ofTag(events, "CallbackResolved").filter((event) => event.callbackId === callbackId)
  assert.strictEqual(resolved.length, 1, `one CallbackResolved for ${callbackId}`)
  assert.strictEqual(resolved[0].resolution, resolution)
  return resolved[0]
}

export const toolCompleted = (events: ReadonlyArray<TurnEvent>, name: string) => {
  const completed = ofTag(events, "ToolCallCompleted").filter((event) => event.name === name)
  assert.strictEqual(completed.length, 1, `one ToolCallCompleted for ${name}`)
  return completed[0]
}
