import type { CallbackId, SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type { OpenCallbackRow, Service, Snapshot, StoredTree } from "../SessionStore.js"
import { LeaseLost, ResolutionConflict, SeqConflict } from "../SessionStore.js"

interface Log {
  readonly tree: StoredTree
  readonly events: Array<TurnEvent>
  /** Turns queued and not ended. */
  openTurns: number
  owner: string | undefined
  epoch: number
  /** Subscribers of live events, created with the first tail and dropped with the last. */
  pubsub: PubSub.PubSub<TurnEvent> | undefined
  subscribers: number
  /** The latest snapshot of the tree's projection. */
  snapshot: Snapshot | undefined
}

/** Live-only events (streamed deltas) are never stored: they ride along the tails of this process. */
const isLiveOnly = (event: TurnEvent) => event._tag === "MessageDelta"

export const make: Effect.Effect<Service> = Effect.gen(function*() {
  const logs = new Map<SessionId, Log>()
  /** Every session id seen in a log, to the tree it belongs to. */
  const trees = new Map<SessionId, SessionId>()
  /** Callback ids resolved, per tree. */
  const resolved = new Set<string>()
  const changes = yield* PubSub.unbounded<{ readonly treeId: SessionId; readonly nextSeq: number }>()
  /** Callbacks opened and not resolved, in the order they opened. */
  const open = new Map<CallbackId, OpenCallbackRow>()
  /** Owners and when their heartbeat lapses (epoch millis). */
  const owners = new Map<string, number>()
  const isAlive = (owner: string | undefined, now: number) => owner !== undefined && (owners.get(owner) ?? 0) > now

  /** Subscribes to a log's live events; the log's PubSub lives while it has subscribers. */
  const subscribe = (log: Log) =>
    Effect.acquireRelease(
      Effect.suspend(() => {
        if (log.pubsub !== undefined) return Effect.succeed(log.pubsub)
        return Effect.map(PubSub.unbounded<TurnEvent>(), (pubsub) => {
          log.pubsub ??= pubsub
          return log.pubsub
        })
      }).pipe(Effect.tap(() => Effect.sync(() => log.subscribers++))),
      (pubsub) =>
        Effect.suspend(() => {
          log.subscribers--
          if (log.subscribers > 0 || log.pubsub !== pubsub) return Effect.void
          log.pubsub = undefined
          return PubSub.shutdown(pubsub)
        })
    ).pipe(Effect.flatMap(PubSub.subscribe))

  const service: Service = {
    createTree: (tree) =>
      Effect.sync(() => {
        if (logs.has(tree.treeId)) return
        logs.set(tree.treeId, {
          tree,
          events: [],
          openTurns: 0,
          owner: undefined,
          epoch: 0,
          pubsub: undefined,
          subscribers: 0,
          snapshot: undefined
        })
        trees.set(tree.treeId, tree.treeId)
      }),
    getTree: (treeId) => Effect.sync(() => Option.map(Option.fromNullable(logs.get(treeId)), (log) => log.tree)),
    treeOf: (sessionId) => Effect.sync(() => Option.fromNullable(trees.get(sessionId))),
    append: (treeId, expectedSeq, events, lease) =>
      Effect.suspend((): Effect.Effect<void, SeqConflict | ResolutionConflict | LeaseLost> => {
        const log = logs.get(treeId)
        const actual = log?.events.length ?? 0
        if (log === undefined || events.length === 0) return Effect.void
        if (lease !== undefined && (log.owner !== lease.owner || log.epoch !== lease.epoch)) {
          return Effect.fail(new LeaseLost({ treeId, owner: lease.owner, epoch: lease.epoch }))
        }
        if (expectedSeq !== actual || events.some((event, i) => event.seq !== actual + i)) {
          return Effect.fail(new SeqConflict({ treeId, expected: expectedSeq, actual }))
        }
        const resolutions: Array<string> = []
        for (const event of events) {
          if (event._tag !== "CallbackResolved") continue
          if (resolved.has(event.callbackId) || resolutions.includes(event.callbackId)) {
            return Effect.fail(new ResolutionConflict({ treeId, callbackId: event.callbackId }))
          }
          resolutions.push(event.callbackId)
        }
        for (const id of resolutions) resolved.add(id)
        for (const event of events) {
          log.events.push(event)
          if (!trees.has(event.sessionId)) trees.set(event.sessionId, treeId)
          if (event._tag === "TurnQueued") log.openTurns++
          else if (event._tag === "TurnEnded") log.openTurns--
          else if (event._tag === "CallbackOpened") {
            const { callback, seq, sessionId, turnId } = event
            open.set(callback.id, { treeId, sessionId, turnId, callbackId: callback.id, kind: callback.kind, seq })
          } else if (event._tag === "CallbackResolved") open.delete(event.callbackId)
        }
        const publish = log.pubsub === undefined ? Effect.void : PubSub.publishAll(log.pubsub, events)
        return Effect.zipRight(publish, PubSub.publish(changes, { treeId, nextSeq: log.events.length }))
      }),
    read: (treeId, from) => Effect.sync(() => logs.get(treeId)?.events.slice(from) ?? []),
    tail: (treeId, from) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const log = logs.get(treeId)
        if (log === undefined) return Stream.empty
        // Subscribe before reading, so nothing appended in between is lost; skip what the read already gave.
        const subscription = yield* subscribe(log)
        const stored = log.events.slice(from)
        let next = Math.max(from, log.events.length)
        const live = Stream.fromQueue(subscription).pipe(
          Stream.filter((event) => {
            if (isLiveOnly(event)) return event.seq >= from && event.seq < next
            if (event.seq !== next) return false
            next = event.seq + 1
            return true
          })
        )
        return Stream.concat(Stream.fromIterable(stored), live)
      })),
    publish: (treeId, events) =>
      Effect.suspend(() => {
        const pubsub = logs.get(treeId)?.pubsub
        return pubsub === undefined ? Effect.void : Effect.asVoid(PubSub.publishAll(pubsub, events))
      }),
    changes: Stream.fromPubSub(changes),
    heartbeat: (owner, ttl) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        owners.set(owner, now + Duration.toMillis(ttl))
      }),
    retire: (owner) => Effect.sync(() => owners.delete(owner)),
    claim: (treeId, owner) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const log = logs.get(treeId)
        if (log === undefined || (log.owner !== owner && isAlive(log.owner, now))) return Option.none()
        if (log.owner !== owner) {
          log.owner = owner
          log.epoch++
        }
        return Option.some({ owner, epoch: log.epoch })
      }),
    unfinished: (owner) =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) =>
          Array.from(logs.values()).flatMap((log) =>
            log.openTurns > 0 && (log.owner === owner || !isAlive(log.owner, now))
              ? [{ treeId: log.tree.treeId, owner: log.owner }]
              : []
          )
      ),
    listOpen: (filter) =>
      Effect.sync(() =>
        Array.from(open.values()).filter((row) =>
          (filter?.sessionId === undefined || row.sessionId === filter.sessionId) &&
          (filter?.kind === undefined || row.kind === filter.kind)
        )
      ),
    saveSnapshot: (treeId, snapshot) =>
      Effect.sync(() => {
        const log = logs.get(treeId)
        if (log === undefined || (log.snapshot !== undefined && log.snapshot.seq > snapshot.seq)) return
        log.snapshot = { seq: snapshot.seq, version: snapshot.version, state: snapshot.state }
      }),
    loadSnapshot: (treeId) => Effect.sync(() => Option.fromNullable(logs.get(treeId)?.snapshot))
  }
  return service
})
