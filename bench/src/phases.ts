/**
 * The measured phases of the bench, each on a runtime of its own (built for the phase, dropped after it, so one
 * phase's sessions never weigh on the next one's heap):
 *
 * - `latency`: turns one after another, each in a new session, approved by a `CallbackHandler` while
 *   `Session.run` waits (variant A) or by id after `Blocked` (variant B); the time of a turn runs from
 *   `Session.run` to its final state (starting the session is outside it, but inside the phase's turns/s).
 * - `pauseResume`: many turns paused at once, each blocked on its approval; then all answered by id and waited for.
 * - `atOnce`: many turns of variant A running together (`concurrency` at a time): the throughput of a store whose
 *   group commit shares one transaction between the turns waiting for it.
 * - `pauseMany`: the pausing part alone (also run by `pausedProcess.ts` in a child process for the RSS rows).
 *
 * The runtime is the one the issue names: `LocalTransport` (idle trees evicted after `idleTimeToLive`) over a
 * session store (`stores.ts`: in memory, a SQLite file or PostgreSQL, a fresh database per phase),
 * `Connectors.layerEmpty`, `RuntimeTools.layerEmpty` and `Models.layer(Models.single(model))`. Only the public client API drives it. On the SQL
 * stores a phase also reads the database's meters before and after its measured turns: write transactions, bytes
 * and events stored per turn.
 */
import { Agent, Answer, Session, Transport, Turn } from "@parley/core"
import type { Engine } from "@parley/runtime"
import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
import type { SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import type { Duration } from "effect"
import { Console, Effect, Layer, Metric, Option } from "effect"
import type { LanguageModel } from "effect/ai"
import type { BenchModel } from "./models.js"
import type * as Stores from "./stores.js"
import {
  approveAll,
  checkBlocked,
  checkCompleted,
  CheckFailed,
  checkLedgerEmpty,
  Ledger,
  makeAgent,
  message,
  type Paused
} from "./workload.js"

// ----------------------------------------------------------------------------
// The runtime, heap and progress
// ----------------------------------------------------------------------------

/**
 * How long a tree with nothing to do stays in memory: short, so the heap rows (taken after a 50 ms settle) measure
 * what a paused or finished turn keeps once its tree is evicted, as a long-running server would after its own
 * time-to-live.
 */
export const idleTimeToLive = "20 millis"

/** The engine options of the tuned rows; the default-configuration rows pass `{}` (the engine's defaults). */
export const tuned: Engine.Options = { idleTimeToLive }

export const runtime = (
  model: LanguageModel.LanguageModel,
  store: Layer.Layer<SessionStore.SessionStore, SessionStore.StoreError>,
  engine: Engine.Options = tuned
) =>
  LocalTransport.layerWith(engine).pipe(
    Layer.provide([store, Connectors.layerEmpty, RuntimeTools.layerEmpty, Models.layer(Models.single(model))])
  )

/** What a phase's measured turns left in a SQL database, per turn. */
export interface Stored {
  readonly transactionsPerTurn: number
  /** Of those, the commits synced to disk (durable points; `SqlStore.syncedCommits`). */
  readonly syncedPerTurn: number
  readonly bytesPerTurn: number
  readonly eventsPerTurn: number
}

/** Reads the meters now; `per(turns)` reads them again and gives what the turns in between stored. */
const meter = (database: Stores.Database) =>
  Effect.gen(function*() {
    if (Option.isNone(database.meters)) {
      return { per: (_turns: number) => Effect.succeedNone }
    }
    const meters = database.meters.value
    const read = Effect.map(
      Effect.all([meters.bytes, meters.events, Metric.value(SqlStore.syncedCommits)]),
      ([bytes, events, synced]) => ({ transactions: meters.transactions(), synced: synced.count, bytes, events })
    )
    const before = yield* read
    return {
      per: (turns: number) =>
        Effect.map(read, (after) =>
          Option.some<Stored>({
            transactionsPerTurn: (after.transactions - before.transactions) / turns,
            syncedPerTurn: (after.synced - before.synced) / turns,
            bytesPerTurn: (after.bytes - before.bytes) / turns,
            eventsPerTurn: (after.events - before.events) / turns
          }))
    }
  }).pipe(Effect.orDie)

const gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc

/** Whether heap rows can be measured (the process runs with `--expose-gc`). */
export const canCollect = gc !== undefined

/** The used heap after letting forked work settle and forcing two full GCs; none without `--expose-gc`. */
export const heapAfterGcIn = (settle: Duration.Input): Effect.Effect<Option.Option<number>> =>
  Effect.andThen(Effect.sleep(settle), heapAfterGc)

export const heapAfterGc: Effect.Effect<Option.Option<number>> = Effect.sleep("50 millis").pipe(
  Effect.andThen(Effect.sync(() => {
    if (gc === undefined) return Option.none()
    gc()
    gc()
    return Option.some(process.memoryUsage().heapUsed)
  }))
)

const perItem = (before: Option.Option<number>, after: Option.Option<number>, items: number) =>
  Option.map(Option.all([before, after]), ([b, a]) => (a - b) / Math.max(1, items))

/** Prints `label: done/total` on stderr at most every 2 s (long phases only). */
const progress = (label: string, total: number) => {
  const started = performance.now()
  let shown = started
  return (done: number): Effect.Effect<void> => {
    const now = performance.now()
    if (now - shown < 2000 || done >= total) return Effect.void
    shown = now
    return Console.error(`  ${label}: ${done}/${total} (${((now - started) / 1000).toFixed(1)} s)`)
  }
}

// ----------------------------------------------------------------------------
// Latency: turns one after another
// ----------------------------------------------------------------------------

export type Variant = "A" | "B"

export interface LatencyResult {
  /** Milliseconds per turn, sorted. */
  readonly samples: ReadonlyArray<number>
  /** Completed turns per second over the whole phase (session start and checks included). */
  readonly turnsPerSecond: number
  /** Heap kept per completed turn, in bytes. */
  readonly keptPerTurn: Option.Option<number>
  /** On a SQL store: what each turn stored. */
  readonly stored: Option.Option<Stored>
}

/** One turn of variant A: a handler approves while `Session.run` waits. */
const turnA = (agent: Agent.Agent, ledger: Ledger, phase: string) =>
  Effect.gen(function*() {
    const session = yield* Agent.startSession(agent)
    ledger.open(session.id)
    const started = performance.now()
    const state = yield* Session.run(session, message(session.id))
    const elapsed = performance.now() - started
    yield* checkCompleted(ledger, phase, session, state)
    return elapsed
  })

/** One turn of variant B: `Session.run` returns `Blocked`, the host answers by id and waits again. */
const turnB = (agent: Agent.Agent, ledger: Ledger, phase: string) =>
  Effect.gen(function*() {
    const session = yield* Agent.startSession(agent)
    ledger.open(session.id)
    const started = performance.now()
    const paused = yield* Effect.flatMap(
      Session.run(session, message(session.id)),
      (state) => checkBlocked(ledger, phase, session, state)
    )
    const turn = yield* Session.turn(session, paused.blocked.turnId)
    ledger.approval(session.id)
    yield* Turn.answer(turn, paused.approval.id, new Answer.AllowApproval())
    const state = yield* Turn.result(turn, { after: paused.blocked })
    const elapsed = performance.now() - started
    yield* checkCompleted(ledger, phase, session, state)
    return elapsed
  })

export const latency = (options: {
  readonly model: BenchModel
  readonly variant: Variant
  readonly turns: number
  readonly warmup: number
  readonly store: Stores.BenchStore
  readonly engine?: Engine.Options | undefined
}) =>
  Effect.scoped(Effect.gen(function*() {
    const phase = `latency ${options.variant} (${options.model.name}, ${options.store.name})`
    const ledger = new Ledger()
    const agent = makeAgent(ledger)
    const model = yield* options.model.make(ledger)
    const database = yield* options.store.open
    const turn = options.variant === "A" ? turnA(agent, ledger, phase) : turnB(agent, ledger, phase)
    const layer = options.variant === "A"
      ? Layer.merge(runtime(model, database.layer, options.engine), approveAll(ledger))
      : runtime(model, database.layer, options.engine)
    return yield* Effect.gen(function*() {
      for (let i = 0; i < options.warmup; i++) yield* turn
      const show = progress(phase, options.turns)
      const before = yield* heapAfterGc
      const stored = yield* meter(database)
      const samples = new Array<number>(options.turns)
      const started = performance.now()
      for (let i = 0; i < options.turns; i++) {
        samples[i] = yield* turn
        yield* show(i + 1)
      }
      const seconds = (performance.now() - started) / 1000
      const perTurn = yield* stored.per(options.turns)
      const after = yield* heapAfterGc
      yield* checkLedgerEmpty(ledger, phase)
      samples.sort((a, b) => a - b)
      const result: LatencyResult = {
        samples,
        turnsPerSecond: options.turns / seconds,
        keptPerTurn: perItem(before, after, options.turns),
        stored: perTurn
      }
      return result
    }).pipe(Effect.provide(layer))
  }))

// ----------------------------------------------------------------------------
// Throughput: many turns at once
// ----------------------------------------------------------------------------

export interface AtOnceResult {
  /** Milliseconds per turn (from `Session.run` to its final state, with the others running), sorted. */
  readonly samples: ReadonlyArray<number>
  /** Completed turns per second over the phase (session starts and checks included). */
  readonly turnsPerSecond: number
  readonly stored: Option.Option<Stored>
}

/** `turns` turns of variant A (each in a new session), `concurrency` of them running at any time. */
export const atOnce = (options: {
  readonly model: BenchModel
  readonly turns: number
  readonly concurrency: number
  readonly warmup: number
  readonly store: Stores.BenchStore
  readonly engine?: Engine.Options | undefined
}) =>
  Effect.scoped(Effect.gen(function*() {
    const phase = `${options.concurrency} at once (${options.model.name}, ${options.store.name})`
    const ledger = new Ledger()
    const agent = makeAgent(ledger)
    const model = yield* options.model.make(ledger)
    const database = yield* options.store.open
    const turn = turnA(agent, ledger, phase)
    return yield* Effect.gen(function*() {
      yield* Effect.forEach(Array.from({ length: options.warmup }), () => turn, {
        concurrency: options.concurrency,
        discard: true
      })
      const stored = yield* meter(database)
      const show = progress(phase, options.turns)
      let done = 0
      const started = performance.now()
      const samples = yield* Effect.forEach(
        Array.from({ length: options.turns }),
        () => Effect.tap(turn, () => show(++done)),
        { concurrency: options.concurrency }
      )
      const seconds = (performance.now() - started) / 1000
      const perTurn = yield* stored.per(options.turns)
      yield* checkLedgerEmpty(ledger, phase)
      const result: AtOnceResult = {
        samples: [...samples].sort((a, b) => a - b),
        turnsPerSecond: options.turns / seconds,
        stored: perTurn
      }
      return result
    }).pipe(Effect.provide(Layer.merge(runtime(model, database.layer, options.engine), approveAll(ledger))))
  }))

// ----------------------------------------------------------------------------
// Paused turns
// ----------------------------------------------------------------------------

export interface PauseResult {
  readonly paused: ReadonlyArray<Paused>
  /** Turns asked for; `paused.length` is smaller when the time budget stopped the phase. */
  readonly asked: number
  readonly seconds: number
}

/** How long one turn of `pauseMany` may take before the phase stops with what the runtime says of it. */
const stuckAfter = "60 seconds"

/** A turn that neither blocked nor ended in time: fails the phase with the runtime's view of the turn. */
const stuck = (phase: string, turn: Turn.Turn) =>
  Effect.flatMap(Transport.Transport, (transport) =>
    Effect.flatMap(
      Effect.result(Effect.zip(transport.getSession(turn.sessionId), transport.snapshot(turn.sessionId, turn.turnId))),
      (view) =>
        Effect.fail(
          new CheckFailed({
            phase,
            sessionId: turn.sessionId,
            detail: `turn ${turn.turnId} still waiting after ${stuckAfter}: ` + (view._tag === "Failure"
              ? `the runtime could not say why (${view.failure._tag})`
              : `log cursor ${view.success[0].cursor}, turn state ${view.success[1].state?._tag ?? "running"}, ` +
                `${view.success[1].callbacks.length} open callback(s), turn started at seq ${view.success[1].started}`)
          })
        )
    ))

/**
 * Starts `count` sessions and runs a turn in each, with no approval handler: each returns `Blocked` on its approval
 * and stays paused. One after another, or `concurrency` at a time (a SQL store then commits them in shared
 * transactions). Stops starting new ones once `budget` seconds have passed.
 */
export const pauseMany = (options: {
  readonly agent: Agent.Agent
  readonly ledger: Ledger
  readonly phase: string
  readonly count: number
  readonly budget: number
  readonly concurrency?: number | undefined
}) =>
  Effect.gen(function*() {
    const paused: Array<Paused> = []
    const show = progress(`${options.phase}: paused`, options.count)
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: options.count }),
      () =>
        Effect.gen(function*() {
          if (performance.now() - started > options.budget * 1000) return
          const session = yield* Agent.startSession(options.agent)
          options.ledger.open(session.id)
          const turn = yield* Session.sendMessage(session, message(session.id))
          const state = yield* Turn.result(turn).pipe(
            Effect.timeout(stuckAfter),
            Effect.catchTag("TimeoutError", () => stuck(options.phase, turn))
          )
          paused.push(yield* checkBlocked(options.ledger, options.phase, session, state))
          yield* show(paused.length)
        }),
      { concurrency: options.concurrency ?? 1, discard: true }
    )
    const result: PauseResult = {
      paused,
      asked: options.count,
      seconds: (performance.now() - started) / 1000
    }
    return result
  })

export interface PauseResumeResult {
  readonly pause: Omit<PauseResult, "paused">
  /** Turns paused (and then resumed). */
  readonly count: number
  /** Heap per paused turn, in bytes (the host keeping each turn's ids). */
  readonly heapPerPaused: Option.Option<number>
  readonly resumeSeconds: number
}

/**
 * Pauses `count` turns at once, then resumes them all: answers every approval by id (one after another), then waits
 * for every turn (`Turn.result` after its `Blocked`, all at once) and checks each.
 */
export const pauseResume = (options: {
  readonly model: BenchModel
  readonly count: number
  readonly warmup: number
  readonly budget: number
  readonly store: Stores.BenchStore
  readonly engine?: Engine.Options | undefined
}) =>
  Effect.scoped(Effect.gen(function*() {
    const phase = `pause/resume (${options.model.name}, ${options.store.name})`
    const ledger = new Ledger()
    const agent = makeAgent(ledger)
    const model = yield* options.model.make(ledger)
    const database = yield* options.store.open
    return yield* Effect.gen(function*() {
      for (let i = 0; i < options.warmup; i++) yield* turnB(agent, ledger, phase)
      const before = yield* heapAfterGc
      // What a host keeps of a paused turn to answer it later is its ids (a web app keeps them in its database, a
      // worker reads them from `listOpen`): the `Blocked` states are let go, so the heap row measures the runtime.
      const { paused, ...pause } = yield* Effect.map(
        pauseMany({ agent, ledger, phase, count: options.count, budget: options.budget }),
        ({ paused, ...pause }) => ({
          ...pause,
          paused: paused.map(({ approval, blocked }) => ({
            sessionId: blocked.sessionId,
            turnId: blocked.turnId,
            approvalId: approval.id
          }))
        })
      )
      // Paused trees leave memory after the engine's paused time-to-live (a second by default): measured after it.
      const after = yield* heapAfterGcIn("1100 millis")

      const show = progress(`${phase}: answered`, paused.length)
      const started = performance.now()
      const answered = yield* Effect.forEach(paused, ({ approvalId, sessionId, turnId }, i) =>
        Effect.gen(function*() {
          const session = yield* Agent.session(agent, sessionId)
          const turn = yield* Session.turn(session, turnId)
          ledger.approval(session.id)
          yield* Turn.answer(turn, approvalId, new Answer.AllowApproval())
          yield* show(i + 1)
          return { session, turn }
        }))
      // Answered: each turn's wait reads its events from its start, past the answered Blocked, to its end.
      yield* Effect.forEach(
        answered,
        ({ session, turn }) =>
          Effect.flatMap(Turn.result(turn), (state) => checkCompleted(ledger, phase, session, state)),
        { concurrency: "unbounded", discard: true }
      )
      const resumeSeconds = (performance.now() - started) / 1000
      yield* checkLedgerEmpty(ledger, phase)
      const result: PauseResumeResult = {
        pause,
        count: paused.length,
        heapPerPaused: perItem(before, after, paused.length),
        resumeSeconds
      }
      return result
    }).pipe(Effect.provide(runtime(model, database.layer, options.engine)))
  }))
