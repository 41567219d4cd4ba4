/**
 * Thousands of random malformed requests to every route (`effect`'s `Arbitrary` through `@effect/vitest`'s `prop`): none is a
 * 5xx, none changes any tree's log, and the server still answers after each batch.
 */
import { assert, layer } from "@effect/vitest"
import { AgentSpec, Answer, Ids, ProtocolApi } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { Arbitrary, Context, Effect, Layer, Result, Schema } from "effect"
import { brain, locator } from "./fixtures/agents.js"
import { request, storedLog } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

interface Tree {
  readonly key: string
  readonly sessionId: string
  readonly turnId: string
  readonly callbackId: string
  readonly log: ReadonlyArray<string>
}

class Fixture extends Context.Service<Fixture, {
  readonly base: string
  readonly trees: ReadonlyArray<Tree>
}>()("Fixture") {}

const blockedTree = (base: string, key: string) =>
  Effect.gen(function*() {
    const created = yield* request(`${base}/sessions`, {
      method: "POST",
      key,
      body: Schema.encodeSync(AgentSpec.AgentSpec)(locator.spec)
    })
    const sessionId = (created.json as { sessionId: string }).sessionId
    const sent = yield* request(`${base}/sessions/${sessionId}/turns`, {
      method: "POST",
      key,
      body: { input: "Where?" }
    })
    const turnId = (sent.json as { turnId: string }).turnId
    const waited = yield* request(`${base}/sessions/${sessionId}/turns/${turnId}/wait?timeout=20`, { key })
    const state = (waited.json as { state: { callbacks: Array<{ id: string }> } }).state
    return { key, sessionId, turnId, callbackId: state.callbacks[0].id, log: yield* storedLog(base, key, sessionId) }
  })

const FixtureLive = Layer.effect(
  Fixture,
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    const base = yield* startServer(sqliteDatabase(yield* Effect.orDie(sqliteFile)), model.languageModel, {
      runtimeTools: [],
      server: { maxBodyBytes: 16 * 1024, maxStreamsPerKey: 4 }
    })
    const trees = [yield* blockedTree(base, keys.alice), yield* blockedTree(base, keys.bob)]
    return { base, trees }
  })
)

// =============================================================================
// The requests
// =============================================================================

const unknownIds = {
  sessionId: Effect.runSync(Ids.newSessionId),
  turnId: Effect.runSync(Ids.newTurnId),
  callbackId: Effect.runSync(Ids.newCallbackId)
}

type Ids = { readonly sessionId: string; readonly turnId: string; readonly callbackId: string }

const routes: ReadonlyArray<readonly [string, (ids: Ids) => string]> = [
  ["POST", () => "/sessions"],
  ["GET", () => "/sessions"],
  ["GET", (ids) => `/sessions/${ids.sessionId}`],
  ["POST", (ids) => `/sessions/${ids.sessionId}/cancel`],
  ["POST", (ids) => `/sessions/${ids.sessionId}/turns`],
  ["GET", (ids) => `/sessions/${ids.sessionId}/turns/${ids.turnId}`],
  ["GET", (ids) => `/sessions/${ids.sessionId}/turns/${ids.turnId}/wait`],
  ["GET", (ids) => `/sessions/${ids.sessionId}/events`],
  ["GET", () => "/callbacks"],
  ["POST", (ids) => `/sessions/${ids.sessionId}/turns/${ids.turnId}/callbacks/${ids.callbackId}/answer`],
  ["GET", () => "/openapi.json"]
]

/** The generators the requests are built of, on `effect`'s `Arbitrary` (derived from schemas). */
const gen = {
  /** Printable ASCII (what a client can put in a header as well as in a path or a body). */
  string: (maxLength: number) =>
    Arbitrary.map(
      Arbitrary.schema(Schema.String.check(Schema.isMaxLength(maxLength))),
      (text) => text.replace(/[^\x20-\x7e]/g, "")
    ),
  integer: (min: number, max: number) =>
    Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: min, maximum: max }))),
  constantFrom: <const A>(...values: ReadonlyArray<A>): Arbitrary.Arbitrary<A> =>
    Arbitrary.map(gen.integer(0, values.length - 1), (index) => values[index]),
  oneof: <A>(...arbitraries: ReadonlyArray<Arbitrary.Arbitrary<A>>): Arbitrary.Arbitrary<A> =>
    Arbitrary.flatMap(gen.integer(0, arbitraries.length - 1), (index) => arbitraries[index]),
  /** `undefined` or a value. */
  option: <A>(arbitrary: Arbitrary.Arbitrary<A>): Arbitrary.Arbitrary<A | undefined> =>
    gen.oneof<A | undefined>(Arbitrary.Constant(undefined), arbitrary),
  /** Any JSON value. */
  json: Arbitrary.schema(Schema.Json),
  /** Anything: JSON, or values JSON writes oddly. */
  anything: Arbitrary.schema(Schema.Unknown)
}

const garbage = gen.oneof(gen.string(40), gen.constantFrom("", "ses_", "turn_x", "cb_%00", "..", "%2F"))

const body = gen.oneof<string | undefined>(
  Arbitrary.Constant(undefined),
  Arbitrary.map(gen.json, (value) => JSON.stringify(value)),
  gen.string(200),
  Arbitrary.map(
    Arbitrary.all({
      _tag: gen.constantFrom("AllowApproval", "DenyApproval", "ClientToolResult", "SignInAnswer", "Nope"),
      reason: gen.option(gen.anything),
      isFailure: gen.option(gen.anything),
      result: gen.option(gen.anything),
      connected: gen.option(gen.anything)
    }),
    (value) => JSON.stringify(value)
  ),
  Arbitrary.map(Arbitrary.all({ input: gen.anything, name: gen.anything }), (value) => JSON.stringify(value)),
  Arbitrary.Constant("{\"input\":"),
  Arbitrary.map(gen.integer(16 * 1024, 40 * 1024), (n) => JSON.stringify({ input: "x".repeat(n) })),
  // Deep values, written out (`JSON.stringify` itself overflows on them): past the server's depth limit of 64 at
  // every place a body nests — a turn's input, a tool result, a definition's policy, the body itself.
  Arbitrary.map(
    Arbitrary.all({
      depth: gen.integer(60, 6_000),
      open: gen.constantFrom("[", "{\"a\":"),
      at: gen.constantFrom(
        "%",
        "{\"input\":%}",
        "{\"_tag\":\"ClientToolResult\",\"result\":%}",
        "{\"name\":\"locator\",\"permissions\":%}"
      )
    }),
    ({ at, depth, open }) => at.replace("%", `${open.repeat(depth)}1${(open === "[" ? "]" : "}").repeat(depth)}`)
  ),
  // Fields the protocol does not know, beside ones it does.
  Arbitrary.map(
    Arbitrary.all({
      known: gen.constantFrom(
        { _tag: "AllowApproval" },
        { _tag: "DenyApproval", reason: "no" },
        { input: "Where?" },
        { name: "locator" }
      ),
      field: gen.constantFrom("remeber", "requestID", "_tags", "", "__proto__", "constructor"),
      value: gen.json
    }),
    ({ field, known, value }) => JSON.stringify({ ...known, [field]: value })
  )
)

const arbitraryRequest = Arbitrary.all({
  route: gen.integer(0, routes.length - 1),
  method: gen.option(gen.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH")),
  tree: gen.integer(0, 1),
  ids: gen.constantFrom("real", "unknown", "garbage", "mixed"),
  garbage,
  key: gen.constantFrom("owner", "other", "none", "garbage"),
  body,
  contentType: gen.constantFrom(
    "application/json",
    "Application/JSON; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "application/octet-stream",
    "application/xml",
    "application/problem+json",
    "multipart/form-data; boundary=x",
    "multipart/form-data",
    "garbage",
    undefined
  ),
  /** Sent with `Transfer-Encoding: chunked` (no `Content-Length`). */
  chunked: gen.constantFrom(false, true),
  query: Arbitrary.map(
    Arbitrary.array(
      Arbitrary.all([
        gen.constantFrom("from", "live", "limit", "cursor", "kind", "sessionId", "timeout", "x"),
        gen.oneof(garbage, Arbitrary.map(gen.integer(-5, 1000), String), gen.constantFrom("true", "false", "0"))
      ]),
      { maxLength: 3 }
    ),
    (entries): Record<string, string> => Object.fromEntries(entries)
  ),
  lastEventId: gen.option(gen.oneof(garbage, Arbitrary.map(gen.integer(-2, 100), String)))
})

type Generated = typeof arbitraryRequest extends Arbitrary.Arbitrary<infer A> ? A : never

/** Whether a body decodes as the protocol's servers decode it (a field it does not know refused). */
const decodes = (schema: Schema.Decoder<unknown>) => {
  const decode = Schema.decodeUnknownResult(schema, { onExcessProperty: "error" })
  return (value: unknown) => Result.isSuccess(decode(value))
}
const isAnswer = decodes(Answer.Answer)
const isMessage = decodes(ProtocolApi.SendMessage)
const isAgent = decodes(AgentSpec.AgentSpec)

/** The request as sent, unless it could be a valid request (those are left out: they may change a log). */
const build = (base: string, trees: ReadonlyArray<Tree>, generated: Generated) => {
  const tree = trees[generated.tree]
  const [routeMethod, path] = routes[generated.route]
  const method = generated.method ?? routeMethod
  const ids: Ids = generated.ids === "real"
    ? tree
    : generated.ids === "unknown"
    ? unknownIds
    : generated.ids === "garbage"
    ? { sessionId: generated.garbage, turnId: generated.garbage, callbackId: generated.garbage }
    : { ...tree, callbackId: generated.garbage }
  const key = generated.key === "owner"
    ? tree.key
    : generated.key === "other"
    ? trees[1 - generated.tree].key
    : generated.key === "garbage"
    ? generated.garbage
    : undefined
  const parsed = (() => {
    if (generated.body === undefined) return undefined
    const attempt = Result.try(() => JSON.parse(generated.body ?? "") as unknown)
    return Result.isSuccess(attempt) ? attempt.success : undefined
  })()
  const authorized = key === tree.key && generated.ids !== "garbage"
  const mutates = method === "POST" &&
    (generated.route === 0 || generated.route === 3 || generated.route === 4 || generated.route === 9)
  if (authorized && mutates) {
    if (generated.route === 3) return undefined // a cancel with the owner's key and real ids is a valid request
    if (generated.route === 0 && isAgent(parsed)) return undefined
    if (generated.route === 4 && isMessage(parsed) && generated.ids !== "unknown") return undefined
    if (generated.route === 9 && isAnswer(parsed) && generated.ids === "real") return undefined
  }
  const url = new URL(`${base}${encodeURI(path(ids)).replaceAll("?", "%3F").replaceAll("#", "%23")}`)
  for (const [name, value] of Object.entries(generated.query)) url.searchParams.set(name, value)
  if (generated.route === 6) url.searchParams.set("timeout", "0")
  const headers: Record<string, string> = {}
  if (key !== undefined) headers.authorization = `Bearer ${key}`
  if (generated.contentType !== undefined) headers["content-type"] = generated.contentType
  if (generated.lastEventId !== undefined) headers["last-event-id"] = generated.lastEventId
  const body = method === "GET" || method === "HEAD" ? undefined : generated.body
  return {
    url: url.toString(),
    method,
    headers,
    // A stream has no length: fetch sends it chunked.
    body: body !== undefined && generated.chunked ? chunks(body) : body,
    ...(generated.chunked ? { duplex: "half" as const } : {})
  }
}

/** A body as a stream of 4 KiB chunks. */
const chunks = (body: string) => {
  const bytes = new TextEncoder().encode(body)
  let offset = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) return controller.close()
      controller.enqueue(bytes.subarray(offset, offset + 4096))
      offset += 4096
    }
  })
}

/** Sends it; an event stream is closed as soon as its headers came. Gives the status. */
const send = (built: NonNullable<ReturnType<typeof build>>) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), 5_000)
    try {
      const response = await fetch(built.url, { ...built, signal: controller.signal })
      if (response.headers.get("content-type")?.startsWith("text/event-stream") === true) {
        controller.abort()
      } else {
        await response.arrayBuffer()
      }
      return response.status
    } catch (error) {
      return error instanceof Error && error.name === "AbortError" ? 0 : -1
    } finally {
      clearTimeout(timer)
    }
  })

layer(FixtureLive, { timeout: "60 seconds" })("ParleyServer: random malformed requests", (it) => {
  it.effect.prop(
    "no 5xx, no change to any log, and the server still answers",
    [Arbitrary.array(arbitraryRequest, { minLength: 10, maxLength: 10 })],
    ([batch]) =>
      Effect.gen(function*() {
        const { base, trees } = yield* Fixture
        for (const generated of batch) {
          const built = build(base, trees, generated)
          if (built === undefined) continue
          const status = yield* send(built)
          assert.isTrue(status >= 200 && status < 500, `${built.method} ${built.url} → ${status}`)
        }
        for (const tree of trees) {
          assert.deepStrictEqual(yield* storedLog(base, tree.key, tree.sessionId), tree.log, "the log is unchanged")
        }
        const alive = yield* request(`${base}/sessions`, { key: keys.alice })
        assert.strictEqual(alive.status, 200)
      }),
    { timeout: 240_000, arbitrary: { runs: 300 } }
  )
})
