/**
 * Load time of a long tree, with and without a snapshot of its projection: a tree of 20,000 events (2,000 turns of
 * ten events: a tool call and its result, two model steps), loaded by a fresh engine (`Transport.getSession`, its
 * first read of the tree), from its whole log or from a snapshot 250 events behind the log's end and the events after
 * it (half the default `snapshotEvery`). Also the parts: reading the log, folding it, encoding and decoding the
 * snapshot.
 *
 *   node --conditions=@parley/source --import tsx packages/store-sql/bench/load.ts            # SQLite and PostgreSQL
 *   node --conditions=@parley/source --import tsx packages/store-sql/bench/load.ts 50000      # another log length
 */
import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { AgentSpec, Ids, Transport, TurnEvent, TurnState } from "@parley/core"
import { SnapshotCodec, TreeState } from "@parley/log"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { FileSystem } from "effect"
import { Context, DateTime, Effect, Layer, Redacted, Result } from "effect"

const pgUrl = process.env.PARLEY_TEST_PG_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"
const length = Number(process.argv[2] ?? 20_000)
const behind = 250
const runs = 5
const at = DateTime.makeUnsafe(0)
const treeId = Ids.SessionId.make("ses_bench_load")
const getLocation = Ids.ToolId.make("client.get_location")

/** One ended turn of ten events from `seq`. */
const turn = (i: number, seq: number): ReadonlyArray<TurnEvent.TurnEvent> => {
  const common = { sessionId: treeId, turnId: Ids.TurnId.make(`turn_${i}`), at }
  const input = `Where am I now? This is message number ${i}, with a few more words to make it look like a question.`
  const answer = `You are in Lyon, France, near the Place Bellecour. It is sunny and 21°C (turn ${i}).`
  const drafts: ReadonlyArray<(seq: number) => TurnEvent.TurnEvent> = [
    (seq) => new TurnEvent.TurnQueued({ ...common, seq, input }),
    (seq) => new TurnEvent.TurnStarted({ ...common, seq, input }),
    (seq) => new TurnEvent.ModelStepStarted({ ...common, seq, messageId: `msg_${i}_0`, step: 0 }),
    (seq) => new TurnEvent.MessageCompleted({ ...common, seq, messageId: `msg_${i}_0`, text: "Let me check." }),
    (seq) =>
      new TurnEvent.ToolCallStarted({
        ...common,
        seq,
        toolCallId: `call_${i}`,
        toolId: getLocation,
        name: "get_location",
        arguments: { precision: "city" }
      }),
    (seq) => new TurnEvent.ToolExecutionStarted({ ...common, seq, toolCallId: `call_${i}`, toolId: getLocation }),
    (seq) =>
      new TurnEvent.ToolCallCompleted({
        ...common,
        seq,
        toolCallId: `call_${i}`,
        toolId: getLocation,
        name: "get_location",
        isFailure: false,
        result: { city: "Lyon", country: "France", latitude: 45.7578, longitude: 4.832, accuracy: "city" }
      }),
    (seq) => new TurnEvent.ModelStepStarted({ ...common, seq, messageId: `msg_${i}_1`, step: 1 }),
    (seq) => new TurnEvent.MessageCompleted({ ...common, seq, messageId: `msg_${i}_1`, text: answer }),
    (seq) =>
      new TurnEvent.TurnEnded({
        ...common,
        seq,
        state: new TurnState.Completed({ sessionId: treeId, turnId: common.turnId, text: answer })
      })
  ]
  return drafts.map((draft, j) => draft(seq + j))
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (value: number) => `${value.toFixed(0).padStart(6)} ms`

const time = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = performance.now()
    const value = yield* effect
    return [performance.now() - start, value] as const
  })

/** A fresh engine's first read of the tree (it loads it), `runs` times: the median. */
const engineLoad = (store: SessionStore.Services) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("ok"))
    const layer = LocalTransport.layerWith({ snapshotEvery: 0 }).pipe(
      Layer.provide([
        SessionStore.layer(store),
        Connectors.layerEmpty,
        RuntimeTools.layerEmpty,
        Models.layer(Models.single(model.languageModel))
      ])
    )
    const times: Array<number> = []
    for (let i = 0; i < runs; i++) {
      const [took] = yield* Effect.scoped(
        Effect.flatMap(Layer.build(layer), (context) =>
          time(Context.get(context, Transport.Transport).getSession(treeId)))
      )
      times.push(took)
    }
    return median(times)
  })

const bench = (name: string, layer: Layer.Layer<SessionStore.SessionStore, unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const store = SessionStore.get(yield* Layer.build(layer))
    const header = { treeId, agent: AgentSpec.make({ name: "locator", instructions: "Say where." }), createdAt: at }
    yield* store.eventLog.createTree(header)
    for (let seq = 0, i = 0; seq < length; seq += 10, i++) yield* store.eventLog.append(treeId, seq, turn(i, seq))

    // The parts.
    const [readAll, events] = yield* time(store.eventLog.read(treeId, 0))
    const foldStart = performance.now()
    const whole = TreeState.fold(header, events)
    const foldAll = performance.now() - foldStart
    const prefix = TreeState.fold(header, events.slice(0, length - behind))
    const encodeStart = performance.now()
    const json = Result.getOrThrow(SnapshotCodec.encode(prefix))
    const encode = performance.now() - encodeStart
    const decodeStart = performance.now()
    const decoded = Result.getOrThrow(SnapshotCodec.decode(json))
    const decode = performance.now() - decodeStart
    const [readRest, rest] = yield* time(store.eventLog.read(treeId, decoded.nextSeq))
    if (TreeState.foldFrom(decoded, rest).nextSeq !== whole.nextSeq) throw new Error("the snapshot does not fold on")

    // A fresh engine's load, without and with the snapshot.
    const replayed = yield* engineLoad(store)
    const [save] = yield* time(
      store.snapshots.save(treeId, { seq: prefix.nextSeq, version: SnapshotCodec.version, state: json })
    )
    const fromSnapshot = yield* engineLoad(store)

    console.log(`${name}: a tree of ${events.length} events (${(json.length / 1e6).toFixed(1)} MB of snapshot JSON)`)
    console.log(`  read the whole log      ${ms(readAll)}    fold it              ${ms(foldAll)}`)
    console.log(`  encode a snapshot       ${ms(encode)}    save it              ${ms(save)}`)
    console.log(`  decode the snapshot     ${ms(decode)}    read the ${rest.length} after it ${ms(readRest)}`)
    console.log(
      `  engine load, whole log  ${ms(replayed)}    from the snapshot    ${ms(fromSnapshot)}   (median of ${runs})`
    )
  }))

const sqlite = Layer.unwrap(
  Effect.map(
    Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "parley-bench-" })),
    (directory) => SqlStore.layerSqlite({ filename: `${directory}/bench.db`, synchronous: "normal" })
  )
).pipe(Layer.provide(NodeFileSystem.layer))

const pg = Layer.unwrap(Effect.gen(function*() {
  const admin = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(pgUrl) })), PgClient.PgClient)
  const schema = `bench_${Date.now()}`
  yield* Effect.acquireRelease(
    admin`CREATE SCHEMA ${admin(schema)}`,
    () => Effect.ignore(admin`DROP SCHEMA ${admin(schema)} CASCADE`)
  )
  const url = `${pgUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`
  return SqlStore.layerPg({ url })
}))

Effect.runPromise(
  Effect.gen(function*() {
    yield* bench("memory", SessionStore.layerMemory)
    yield* bench("SQLite", sqlite)
    yield* bench("PostgreSQL", pg)
  })
).catch((error) => {
  console.error(error)
  process.exit(1)
})
