/**
 * The cross-process row: a turn opened in this process (A) is answered from another process (B) over the same
 * database, and A resumes it.
 *
 * - A (`answerFromProcess`, in the bench) forks this file as B with the same Node flags and the store's location
 *   (`stores.ts`), then, `answers` times: starts a session, runs the workload's turn until it is `Blocked` on its
 *   approval, starts `Turn.result(turn, { after: blocked })` (its tail is then listening), and sends B the ids over
 *   the IPC channel. The tool's handler runs in A's `Turn.result` after the approval, and A's engine runs the model
 *   step that follows: every turn is checked as in `workload.ts`.
 * - B runs its own `LocalTransport` over its own store on the same SQLite file or PostgreSQL schema, and answers
 *   with `Transport.answer({ sessionId, turnId, callbackId, answer })` (an `AllowApproval`), noting the time just
 *   before the call. B only answers: its model never replies, so a model step B's engine starts on a tree it follows
 *   is interrupted when A's result lands, and the steps all run in A.
 * - Times are wall-clock milliseconds with sub-millisecond precision (`performance.timeOrigin + performance.now()`)
 *   in each process; A measures B's clock offset first (the ping with the shortest round trip of 20) and corrects for
 *   it, so the error of a sample is within half that round trip (printed).
 *
 * Measured per answer, from the moment B calls `answer`: until A's `Turn.result` sees the approval's
 * `CallbackResolved` (resumed), and until it returns `Completed` (the tool ran in A, then the model's last step).
 */
import { Agent, Answer, Ids, Session, Transport, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
import { Cause, Data, Deferred, Effect, Exit, Fiber, Layer, Queue, Result, Schema, Stream } from "effect"
import type { LanguageModel } from "effect/ai"
import { type ChildProcess, fork } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type { BenchModel } from "./models.js"
import { runtime } from "./phases.js"
import * as Stores from "./stores.js"
import {
  checkBlocked,
  checkCompleted,
  checkLedgerEmpty,
  Ledger,
  makeAgent,
  message,
  type Strictness
} from "./workload.js"

/**
 * B's engine follows the database: an append of A to a tree B does not hold loads it, and loading takes up what was
 * in flight — a model step A is running is aborted and issued again (the engine assumes its writer is gone). A then
 * runs that step a second time. The counts of model calls are minimums here, and the row reports the repeats.
 */
const mayRepeat: Strictness = { stepsMayRepeat: true }

/** Wall-clock milliseconds, sub-millisecond precision. */
const now = () => performance.timeOrigin + performance.now()

// ----------------------------------------------------------------------------
// The messages between A and B
// ----------------------------------------------------------------------------

const ToB = Schema.Union([
  Schema.TaggedStruct("Ping", {}),
  Schema.TaggedStruct("Answer", { sessionId: Schema.String, turnId: Schema.String, callbackId: Schema.String }),
  Schema.TaggedStruct("Stop", {})
])

const ToA = Schema.Union([
  Schema.TaggedStruct("Ready", {}),
  Schema.TaggedStruct("Pong", { at: Schema.Number }),
  Schema.TaggedStruct("Answered", { sentAt: Schema.Number, returnedAt: Schema.Number }),
  Schema.TaggedStruct("Failed", { detail: Schema.String })
])

type ToA = typeof ToA.Type

const decodeToA = Schema.decodeUnknownResult(ToA)

/** B failed, or said something A did not expect. */
export class AnswerProcessFailed extends Data.TaggedError("AnswerProcessFailed")<{ readonly detail: string }> {
  override get message(): string {
    return `the answering process failed: ${this.detail}`
  }
}

// ----------------------------------------------------------------------------
// B: the answering process
// ----------------------------------------------------------------------------

/** B's model: never replies (B only answers callbacks; the steps run in A). */
const silentModel: LanguageModel.LanguageModel = {
  generateText: () => Effect.never,
  generateObject: () => Effect.never,
  streamText: () => Stream.never
} as unknown as LanguageModel.LanguageModel

const send = (message: ToA) => Effect.sync(() => process.send?.(message))

const answering = (location: Stores.Location) =>
  Effect.gen(function*() {
    const inbox = yield* Queue.unbounded<unknown>()
    process.on("message", (message) => Queue.offerUnsafe(inbox, message))
    process.on("disconnect", () => Queue.offerUnsafe(inbox, { _tag: "Stop" }))
    const transport = yield* Transport.Transport
    yield* send({ _tag: "Ready" })
    while (true) {
      const message = yield* Effect.flatMap(Queue.take(inbox), Schema.decodeUnknownEffect(ToB))
      switch (message._tag) {
        case "Ping":
          yield* send({ _tag: "Pong", at: now() })
          break
        case "Stop":
          return
        case "Answer": {
          const sentAt = now()
          const answered = yield* Effect.result(transport.answer({
            sessionId: Ids.SessionId.make(message.sessionId),
            turnId: Ids.TurnId.make(message.turnId),
            callbackId: Ids.CallbackId.make(message.callbackId),
            answer: new Answer.AllowApproval()
          }))
          const returnedAt = now()
          yield* send(
            Result.isSuccess(answered)
              ? { _tag: "Answered", sentAt, returnedAt }
              : { _tag: "Failed", detail: answered.failure.message }
          )
        }
      }
    }
  }).pipe(
    Effect.provide(
      LocalTransport.layerWith({ runsWork: false }).pipe(
        Layer.provide([
          Stores.layerAt(location),
          Connectors.layerEmpty,
          RuntimeTools.layerEmpty,
          Models.layer(Models.single(silentModel))
        ])
      )
    )
  )

// ----------------------------------------------------------------------------
// A: the bench's side
// ----------------------------------------------------------------------------

const entry = fileURLToPath(import.meta.url)

/** Forks B on `location`; the child is killed with the scope. */
const forkB = (location: Stores.Location) =>
  Effect.gen(function*() {
    const replies = yield* Queue.unbounded<ToA | { readonly _tag: "Exited"; readonly detail: string }>()
    const child: ChildProcess = yield* Effect.acquireRelease(
      Effect.sync(() =>
        fork(entry, [JSON.stringify(location)], {
          execArgv: process.execArgv,
          stdio: ["ignore", "ignore", "inherit", "ipc"]
        })
      ),
      (child) => Effect.sync(() => child.kill())
    )
    child.on("message", (message) =>
      Queue.offerUnsafe(
        replies,
        Result.getOrElse(
          decodeToA(message),
          () => ({ _tag: "Exited", detail: `unexpected message ${JSON.stringify(message)}` }) as const
        )
      ))
    child.on("exit", (code, signal) => Queue.offerUnsafe(replies, { _tag: "Exited", detail: `exit ${code} ${signal}` }))
    child.on("error", (error) => Queue.offerUnsafe(replies, { _tag: "Exited", detail: error.message }))
    const request = (message: typeof ToB.Type) => Effect.sync(() => child.send(message))
    const reply = <Tag extends ToA["_tag"]>(tag: Tag) =>
      Effect.flatMap(Queue.take(replies), (received) =>
        received._tag === tag
          ? Effect.succeed(received as Extract<ToA, { readonly _tag: Tag }>)
          : Effect.fail(
            new AnswerProcessFailed({
              detail: "detail" in received ? received.detail : `expected ${tag}, got ${received._tag}`
            })
          ))
    yield* reply("Ready").pipe(Effect.timeoutOrElse({
      duration: "60 seconds",
      orElse: () => Effect.fail(new AnswerProcessFailed({ detail: "not ready within 60 s" }))
    }))
    return { child, request, reply }
  })

export interface AnswerResult {
  /** Milliseconds from B's `answer` call until A saw the approval resolved, sorted. */
  readonly resumed: ReadonlyArray<number>
  /** … until A's `Turn.result` returned `Completed`, sorted. */
  readonly completed: ReadonlyArray<number>
  /** How long B's `answer` call took (its commit included), sorted. */
  readonly answerCall: ReadonlyArray<number>
  /** Half the round trip of the ping the clock offset was taken from: the error bound of a sample (ms). */
  readonly clockError: number
  /** Model steps A ran again because B's engine took the tree up mid-step (in `turns` measured turns). */
  readonly repeatedSteps: number
  readonly turns: number
}

export const answerFromProcess = (options: {
  readonly model: BenchModel
  readonly store: Stores.BenchStore
  readonly answers: number
  readonly warmup: number
}) =>
  Effect.scoped(Effect.gen(function*() {
    const phase = `answer from another process (${options.store.name})`
    const ledger = new Ledger()
    const agent = makeAgent(ledger)
    const model = yield* options.model.make(ledger)
    const database = yield* options.store.open
    return yield* Effect.gen(function*() {
      const b = yield* forkB(database.location)

      // B's clock against ours: the ping with the shortest round trip.
      let best = { rtt: Infinity, offset: 0 }
      for (let i = 0; i < 20; i++) {
        const before = now()
        yield* b.request({ _tag: "Ping" })
        const pong = yield* b.reply("Pong")
        const after = now()
        if (after - before < best.rtt) best = { rtt: after - before, offset: pong.at - (before + after) / 2 }
      }

      const one = Effect.gen(function*() {
        const session = yield* Agent.startSession(agent)
        ledger.open(session.id)
        const paused = yield* Effect.flatMap(
          Session.run(session, message(session.id)),
          (state) => checkBlocked(ledger, phase, session, state, mayRepeat)
        )
        const turn = yield* Session.turn(session, paused.blocked.turnId)
        const resumed = yield* Deferred.make<number>()
        const waiting = yield* Effect.forkChild(
          Turn.result(turn, {
            after: paused.blocked,
            onEvent: (event) =>
              event._tag === "CallbackResolved" && event.callbackId === paused.approval.id
                ? Effect.asVoid(Deferred.succeed(resumed, now()))
                : Effect.void
          })
        )
        // Let the wait subscribe, and both engines settle what the pause wrote, before B answers.
        yield* Effect.sleep("25 millis")
        ledger.approval(session.id)
        yield* b.request({
          _tag: "Answer",
          sessionId: session.id,
          turnId: paused.blocked.turnId,
          callbackId: paused.approval.id
        })
        const answered = yield* b.reply("Answered")
        const state = yield* Fiber.join(waiting)
        const completedAt = now()
        const modelCalls = ledger.peek(session.id)?.modelCalls ?? 0
        yield* checkCompleted(ledger, phase, session, state, mayRepeat)
        const sentAt = answered.sentAt - best.offset
        return {
          resumed: (yield* Deferred.await(resumed)) - sentAt,
          completed: completedAt - sentAt,
          answerCall: answered.returnedAt - answered.sentAt,
          repeated: modelCalls - 2
        }
      })

      for (let i = 0; i < options.warmup; i++) yield* one
      const samples: Array<{ resumed: number; completed: number; answerCall: number; repeated: number }> = []
      for (let i = 0; i < options.answers; i++) samples.push(yield* one)
      yield* b.request({ _tag: "Stop" })
      yield* checkLedgerEmpty(ledger, phase)
      const sorted = (key: "resumed" | "completed" | "answerCall") =>
        samples.map((sample) => sample[key]).sort((x, y) => x - y)
      const result: AnswerResult = {
        resumed: sorted("resumed"),
        completed: sorted("completed"),
        answerCall: sorted("answerCall"),
        clockError: best.rtt / 2,
        repeatedSteps: samples.reduce((sum, sample) => sum + sample.repeated, 0),
        turns: samples.length
      }
      return result
    }).pipe(Effect.provide(runtime(model, database.layer)))
  }))

if (process.argv[1] !== undefined && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  const location = JSON.parse(process.argv[2] ?? "{}") as Stores.Location
  Effect.runPromiseExit(answering(location)).then((exit) => {
    if (Exit.isFailure(exit)) {
      console.error(Cause.pretty(exit.cause))
      process.send?.({ _tag: "Failed", detail: Cause.pretty(exit.cause) })
      process.exitCode = 1
    }
    process.disconnect?.()
  })
}
