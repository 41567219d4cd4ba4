import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type { Service, StoredSession } from "../SessionStore.js"
import { ResolutionConflict, SeqConflict } from "../SessionStore.js"

interface Log {
  readonly session: StoredSession
  readonly events: Array<TurnEvent>
  readonly resolved: Set<string>
  readonly pubsub: PubSub.PubSub<TurnEvent>
}

export const make: Effect.Effect<Service> = Effect.sync(() => {
  const logs = new Map<SessionId, Log>()
  const logOf = (sessionId: SessionId) => Option.fromNullable(logs.get(sessionId))

  const read = (sessionId: SessionId, from: number) =>
    Effect.sync(() =>
      logOf(sessionId).pipe(Option.match({ onNone: () => [], onSome: (log) => log.events.slice(from) }))
    )

  const service: Service = {
    createSession: (session) =>
      PubSub.unbounded<TurnEvent>().pipe(
        Effect.map((pubsub) => {
          if (!logs.has(session.sessionId)) {
            logs.set(session.sessionId, { session, events: [], resolved: new Set(), pubsub })
          }
        })
      ),
    getSession: (sessionId) => Effect.sync(() => Option.map(logOf(sessionId), (log) => log.session)),
    append: (sessionId, events) =>
      Effect.suspend((): Effect.Effect<void, SeqConflict | ResolutionConflict> => {
        const log = logs.get(sessionId)
        const actual = log?.events.length ?? 0
        if (log === undefined || events.length === 0) return Effect.void
        if (events[0].seq !== actual || events.some((event, i) => event.seq !== actual + i)) {
          return Effect.fail(new SeqConflict({ sessionId, expected: events[0].seq, actual }))
        }
        const resolutions = events.flatMap((event) => (event._tag === "CallbackResolved" ? [event.callbackId] : []))
        const twice = resolutions.find((id, i) => log.resolved.has(id) || resolutions.indexOf(id) !== i)
        if (twice !== undefined) return Effect.fail(new ResolutionConflict({ sessionId, callbackId: twice }))
        resolutions.forEach((id) => log.resolved.add(id))
        log.events.push(...events)
        return PubSub.publishAll(log.pubsub, events)
      }),
    read,
    tail: (sessionId, from) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const log = logs.get(sessionId)
        if (log === undefined) return Stream.empty
        // Subscribe before reading, so nothing appended in between is lost; skip what the read already gave.
        const subscription = yield* PubSub.subscribe(log.pubsub)
        const stored = log.events.slice(from)
        let next = Math.max(from, log.events.length)
        const live = Stream.fromQueue(subscription).pipe(
          Stream.filter((event) => {
            if (event.seq < next) return false
            next = event.seq + 1
            return true
          })
        )
        return Stream.concat(Stream.fromIterable(stored), live)
      }))
  }
  return service
})
