/**
 * The memory driver: a tree's rows in maps of this process (tests, examples, single-process programs that need no
 * durability), and the leases, snapshots and secrets beside them. No other process appends: `follow` has nothing to
 * tell.
 */
import type { CallbackId, SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Driver, OpenCallbackRow, StoredTree, Written } from "../EventLog.js"
import type * as Leases from "../Leases.js"
import * as Outbox from "../Outbox.js"
import type * as Secrets from "../Secrets.js"
import type { MemoryDriver } from "../SessionStore.js"
import type * as Snapshots from "../Snapshots.js"
import { LeaseLost, ResolutionConflict, SeqConflict, StoreError } from "../StoreError.js"

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
  snapshot: Snapshots.Snapshot | undefined
}

/** What an append writes here: no bytes, the events are kept as they are. */
const keptAsValues = Effect.succeed<Written>({ bytes: undefined })

export const make: Effect.Effect<MemoryDriver> = Effect.sync(() => {
  const logs = new Map<SessionId, Log>()
  /** Every session id seen in a log, to the tree it belongs to. */
  const trees = new Map<SessionId, SessionId>()
  /** Callback ids resolved. */
  const resolved = new Set<string>()
  /** Callbacks opened and not resolved, in the order they opened. */
  const open = new Map<CallbackId, OpenCallbackRow>()
  /** When the open callbacks that have a deadline expire (epoch millis). */
  const expiries = new Map<CallbackId, number>()
  /** Owners and when their heartbeat lapses (epoch millis). */
  const owners = new Map<string, number>()
  /** Secrets of trees by tree and name: ciphertext, as `Credentials` gives it. */
  const secrets = new Map<string, string>()
  /** The outbox's entries not routed yet, in the order they were appended. */
  const unrouted: Array<Outbox.Entry> = []
  /** Entries routed, by event id. */
  const routed = new Set<string>()
  /** Deliveries in the order they were made, each replaced whole when it changes. */
  const deliveries: Array<Outbox.Delivery> = []
  const isAlive = (owner: string | undefined, now: number) => owner !== undefined && (owners.get(owner) ?? 0) > now
  const read = (treeId: SessionId, from: number) => Effect.sync(() => logs.get(treeId)?.events.slice(from) ?? [])

  const driver: Driver = {
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
    getTree: (treeId) => Effect.sync(() => Option.map(Option.fromNullishOr(logs.get(treeId)), (log) => log.tree)),
    treeOf: (sessionId) => Effect.sync(() => Option.fromNullishOr(trees.get(sessionId))),
    nextSeq: (treeId) =>
      Effect.sync(() => Option.map(Option.fromNullishOr(logs.get(treeId)), (log) => log.events.length)),
    append: (rows) =>
      Effect.suspend((): Effect.Effect<Written, SeqConflict | ResolutionConflict | LeaseLost | StoreError> => {
        const { expectedSeq, fence, treeId } = rows
        const log = logs.get(treeId)
        if (log === undefined) {
          return Effect.fail(new StoreError({ method: "append", description: `there is no tree ${treeId}` }))
        }
        if (fence !== undefined && (log.owner !== fence.owner || log.epoch !== fence.epoch)) {
          return Effect.fail(new LeaseLost({ treeId, owner: fence.owner, epoch: fence.epoch }))
        }
        if (expectedSeq !== log.events.length) {
          return Effect.fail(new SeqConflict({ treeId, expected: expectedSeq, actual: log.events.length }))
        }
        for (let i = 0; i < rows.resolved.length; i++) {
          const { callbackId } = rows.resolved[i]
          if (resolved.has(callbackId) || rows.resolved.some((other, j) => j < i && other.callbackId === callbackId)) {
            return Effect.fail(new ResolutionConflict({ treeId, callbackId }))
          }
        }
        for (const event of rows.events) log.events.push(event)
        for (const { sessionId } of rows.sessions) {
          if (!trees.has(sessionId)) trees.set(sessionId, treeId)
        }
        for (const { expiresAt, ...row } of rows.opened) {
          open.set(row.callbackId, row)
          if (expiresAt !== undefined) expiries.set(row.callbackId, expiresAt)
        }
        for (const { callbackId } of rows.resolved) {
          resolved.add(callbackId)
          open.delete(callbackId)
          expiries.delete(callbackId)
        }
        for (const { kind, seq } of rows.reported) unrouted.push({ treeId, seq, kind })
        log.openTurns += rows.openTurns
        log.paused = rows.paused
        return keptAsValues
      }),
    read,
    readRecent: read,
    listOpen: (filter) =>
      Effect.sync(() =>
        Array.from(open.values()).filter((row) =>
          (filter?.sessionId === undefined || row.sessionId === filter.sessionId) &&
          (filter?.kind === undefined || row.kind === filter.kind) &&
          (filter?.expiresBy === undefined || (expiries.get(row.callbackId) ?? Infinity) <= filter.expiresBy)
        )
      ),
    follow: () => Effect.void
  }

  const leases: Leases.Service = {
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
        const claimed: Array<{ readonly treeId: SessionId; readonly lease: Leases.Lease }> = []
        for (const log of logs.values()) {
          if (log.openTurns === 0 || !log.paused) continue
          // Its own trees only when asked (at start); another owner's once it lapsed.
          if (log.owner === owner ? !own : isAlive(log.owner, now)) continue
          log.owner = owner
          log.epoch++
          claimed.push({ treeId: log.tree.treeId, lease: { owner, epoch: log.epoch } })
        }
        const ids = new Set(claimed.map((tree) => tree.treeId))
        const deadlines = Array.from(open.values()).flatMap((row) => {
          const expiresAt = expiries.get(row.callbackId)
          return ids.has(row.treeId) && expiresAt !== undefined
            ? [{ treeId: row.treeId, callbackId: row.callbackId, expiresAt }]
            : []
        })
        return { trees: claimed, deadlines }
      })
  }

  const snapshots: Snapshots.Service = {
    save: (treeId, snapshot) =>
      Effect.sync(() => {
        const log = logs.get(treeId)
        if (log === undefined || (log.snapshot !== undefined && log.snapshot.seq > snapshot.seq)) return
        log.snapshot = { seq: snapshot.seq, version: snapshot.version, state: snapshot.state }
      }),
    load: (treeId) => Effect.sync(() => Option.fromNullishOr(logs.get(treeId)?.snapshot))
  }

  const secretsService: Secrets.Service = {
    save: (treeId, name, value) => Effect.sync(() => void secrets.set(`${treeId}\u0000${name}`, value)),
    load: (treeId, name) => Effect.sync(() => Option.fromNullishOr(secrets.get(`${treeId}\u0000${name}`))),
    delete: (treeId, name) => Effect.sync(() => void secrets.delete(`${treeId}\u0000${name}`))
  }

  const eventAt = (treeId: SessionId, seq: number) => logs.get(treeId)?.events[seq]
  const outbox: Outbox.Service = {
    unrouted: (limit) => Effect.sync(() => unrouted.slice(0, Math.max(0, limit))),
    route: (entry, targets, now) =>
      Effect.sync(() => {
        const id = Outbox.eventId(entry.treeId, entry.seq)
        const i = unrouted.findIndex((other) => other.treeId === entry.treeId && other.seq === entry.seq)
        if (i !== -1) unrouted.splice(i, 1)
        if (routed.has(id)) return
        routed.add(id)
        for (const target of targets) {
          if (deliveries.some((d) => d.eventId === id && d.endpoint === target.endpoint)) continue
          deliveries.push({
            ...entry,
            ...target,
            eventId: id,
            attempts: 0,
            lastStatus: undefined,
            lastError: undefined,
            nextAttemptAt: now,
            deliveredAt: undefined,
            createdAt: now
          })
        }
      }),
    claim: (now, limit, leaseMillis) =>
      Effect.sync(() => {
        const heads = new Map<string, number>()
        deliveries.forEach((delivery, i) => {
          if (delivery.deliveredAt !== undefined) return
          const key = `${delivery.endpoint}\u0000${delivery.treeId}`
          const head = heads.get(key)
          if (head === undefined || deliveries[head].seq > delivery.seq) heads.set(key, i)
        })
        const due = Array.from(heads.values())
          .filter((i) => (deliveries[i].nextAttemptAt ?? Infinity) <= now)
          .sort((a, b) => (deliveries[a].nextAttemptAt ?? 0) - (deliveries[b].nextAttemptAt ?? 0) || a - b)
          .slice(0, Math.max(0, limit))
        return due.flatMap((i) => {
          const event = eventAt(deliveries[i].treeId, deliveries[i].seq)
          if (event === undefined) return []
          deliveries[i] = { ...deliveries[i], nextAttemptAt: now + leaseMillis }
          return [{ ...deliveries[i], event }]
        })
      }),
    record: (eventId, endpoint, attempt) =>
      Effect.sync(() => {
        const i = deliveries.findIndex((d) => d.eventId === eventId && d.endpoint === endpoint)
        if (i === -1) return
        const delivery = deliveries[i]
        deliveries[i] = attempt._tag === "Delivered"
          ? {
            ...delivery,
            attempts: delivery.attempts + 1,
            lastStatus: attempt.status,
            lastError: undefined,
            nextAttemptAt: undefined,
            deliveredAt: attempt.at
          }
          : {
            ...delivery,
            attempts: delivery.attempts + 1,
            lastStatus: attempt.status,
            lastError: attempt.error,
            nextAttemptAt: attempt.nextAttemptAt
          }
      }),
    list: (tenant, options) =>
      Effect.sync(() =>
        deliveries
          .filter((d) => d.tenant === tenant && (options?.eventId === undefined || d.eventId === options.eventId))
          .reverse()
          .slice(0, Math.max(0, options?.limit ?? 100))
      ),
    redeliver: (tenant, eventId, now) =>
      Effect.sync(() => {
        const reset: Array<Outbox.Delivery> = []
        deliveries.forEach((d, i) => {
          if (d.tenant !== tenant || d.eventId !== eventId) return
          deliveries[i] = { ...d, deliveredAt: undefined, nextAttemptAt: now }
          reset.push(deliveries[i])
        })
        return reset
      })
  }

  return { driver, leases, snapshots, secrets: secretsService, outbox }
})
