import type { CallbackId, SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Fanout from "../Fanout.js"
import type { Change, Lease, OpenCallbackRow, Service, Snapshot, StoredTree } from "../SessionStore.js"
import type { StoreError } from "../StoreError.js"
import { LeaseLost, ResolutionConflict, SeqConflict } from "../StoreError.js"

interface Log {
  readonly tree: StoredTree
  readonly events: Array<TurnEvent>
  /** Turns queued and not ended. */
  openTurns: number
  /** Its last append ended with `TurnBlocked`: it waits on callbacks only. */
  paused: boolean
  owner: string | undefined
  epoch: number
  /** The latest snapshot of the tree's projection. */
  snapshot: Snapshot | undefined
}

export const make: Effect.Effect<Service> = Effect.sync(() => {
  const logs = new Map<SessionId, Log>()
  /** Every session id seen in a log, to the tree it belongs to. */
  const trees = new Map<SessionId, SessionId>()
  /** Callback ids resolved, per tree. */
  const resolved = new Set<string>()
  /** The mailboxes of the readers of `changes`. */
  const watchers = new Set<Mailbox.Mailbox<Change, StoreError>>()
  /** Callbacks opened and not resolved, in the order they opened. */
  const open = new Map<CallbackId, OpenCallbackRow>()
  /** When the open callbacks that have a deadline expire (epoch millis). */
  const expiries = new Map<CallbackId, number>()
  /** Owners and when their heartbeat lapses (epoch millis). */
  const owners = new Map<string, number>()
  /** Secrets of trees by tree and name: ciphertext, as `Credentials` gives it. */
  const secrets = new Map<string, string>()
  const isAlive = (owner: string | undefined, now: number) => owner !== undefined && (owners.get(owner) ?? 0) > now

  // The subscribers of trees' events: the fan-out every store shares (`Fanout`).
  const fanout = Fanout.make({
    read: (treeId, from) => Effect.sync(() => logs.get(treeId)?.events.slice(from) ?? []),
    exists: (treeId) => Effect.sync(() => logs.has(treeId))
  })

  const service: Service = {
    createTree: (tree) =>
      Effect.sync(() => {
        if (logs.has(tree.treeId)) return
        logs.set(tree.treeId, {
          tree,
          events: [],
          openTurns: 0,
          paused: false,
          owner: undefined,
          epoch: 0,
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
            if (callback.expiresAt !== undefined) expiries.set(callback.id, callback.expiresAt.epochMillis)
          } else if (event._tag === "CallbackResolved") {
            open.delete(event.callbackId)
            expiries.delete(event.callbackId)
          }
        }
        log.paused = events[events.length - 1]._tag === "TurnBlocked"
        fanout.appended(treeId, events)
        const change = { treeId, nextSeq: log.events.length }
        for (const watcher of watchers) watcher.unsafeOffer(change)
        return Effect.void
      }),
    read: (treeId, from) => Effect.sync(() => logs.get(treeId)?.events.slice(from) ?? []),
    subscribe: (treeId, from, sessionId) => fanout.subscribe(treeId, from, sessionId),
    publish: (treeId, events) => Effect.sync(() => fanout.publish(treeId, events)),
    changes: Effect.acquireRelease(
      Effect.tap(Mailbox.make<Change, StoreError>(), (watcher) => Effect.sync(() => watchers.add(watcher))),
      (watcher) => Effect.sync(() => watchers.delete(watcher))
    ),
    heartbeat: (owner, ttl) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        owners.set(owner, now + Duration.toMillis(ttl))
      }),
    retire: (owner) => Effect.sync(() => owners.delete(owner)),
    claim: (treeId, owner, options) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const log = logs.get(treeId)
        if (log === undefined) return Option.none()
        if (options?.unconditional !== true && log.owner !== owner && isAlive(log.owner, now)) return Option.none()
        // Every claim starts a new tenure, even the same owner's (a process restarted under its name): the epoch
        // fences off whatever appended under the name before.
        log.owner = owner
        log.epoch++
        return Option.some({ owner, epoch: log.epoch })
      }),
    unfinished: (owner) =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) =>
          Array.from(logs.values()).flatMap((log) =>
            log.openTurns > 0 && !log.paused && (log.owner === owner || !isAlive(log.owner, now))
              ? [{ treeId: log.tree.treeId, owner: log.owner }]
              : []
          )
      ),
    claimPaused: (owner, own) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const trees: Array<{ readonly treeId: SessionId; readonly lease: Lease }> = []
        for (const log of logs.values()) {
          if (log.openTurns === 0 || !log.paused) continue
          // Its own trees only when asked (at start); another owner's once it lapsed.
          if (log.owner === owner ? !own : isAlive(log.owner, now)) continue
          log.owner = owner
          log.epoch++
          trees.push({ treeId: log.tree.treeId, lease: { owner, epoch: log.epoch } })
        }
        const claimed = new Set(trees.map((tree) => tree.treeId))
        const deadlines = Array.from(open.values()).flatMap((row) => {
          const expiresAt = expiries.get(row.callbackId)
          return claimed.has(row.treeId) && expiresAt !== undefined
            ? [{ treeId: row.treeId, callbackId: row.callbackId, expiresAt }]
            : []
        })
        return { trees, deadlines }
      }),
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
    loadSnapshot: (treeId) => Effect.sync(() => Option.fromNullable(logs.get(treeId)?.snapshot)),
    saveSecret: (treeId, name, value) => Effect.sync(() => void secrets.set(`${treeId}\u0000${name}`, value)),
    loadSecret: (treeId, name) => Effect.sync(() => Option.fromNullable(secrets.get(`${treeId}\u0000${name}`))),
    deleteSecret: (treeId, name) => Effect.sync(() => void secrets.delete(`${treeId}\u0000${name}`))
  }
  return service
})
