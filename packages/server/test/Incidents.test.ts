/**
 * A server that fails keeps its internals to itself (issue 35, point 3), over HTTP against a real server on
 * 127.0.0.1: the engine's `TransportFailure` reaches the caller as a 503 with a short description and no cause, a
 * defect as a 500 `InternalError`; both name an incident, and the server's log has the cause under that id.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentSpec } from "@parley/core"
import { TransportFailure } from "@parley/core/ParleyError"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Cause, Effect, Logger, Redacted, References, Schema } from "effect"
import { brain, locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

interface Logged {
  readonly level: string
  readonly text: string
  readonly incident: unknown
}

/** The error lines the server logs, each with the text of its message and cause. */
const capture = (logged: Array<Logged>) =>
  Logger.layer([
    Logger.make(({ cause, fiber, logLevel, message }) => {
      if (logLevel !== "Error") return
      const annotations = fiber.getRef(References.CurrentLogAnnotations)
      logged.push({
        level: logLevel,
        text: `${Array.isArray(message) ? message.join(" ") : String(message)}\n${Cause.pretty(cause)}`,
        incident: annotations.incident
      })
    })
  ])

const secret = "at /srv/parley/node_modules/secret-internal/index.js:42:7"

const server = (logged: Array<Logged>, fail: "failure" | "defect") =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    return yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
      runtimeTools: [],
      server: { agents: [locator.spec] },
      transport: (engine) => ({
        ...engine,
        createSession: () =>
          fail === "failure"
            ? Effect.fail(
              new TransportFailure({
                module: "Engine",
                method: "createSession",
                description: `the store refused the write\n    ${secret}`,
                cause: new Error(`disk I/O error ${secret}`)
              })
            )
            : Effect.die(new Error(`an invariant broke ${secret}`))
      })
    }).pipe(Effect.provide(capture(logged)))
  })

const create = (base: string) =>
  request(`${base}/sessions`, {
    method: "POST",
    key: keys.alice,
    body: Schema.encodeSync(AgentSpec.AgentSpec)(locator.spec)
  })

describe("incidents", () => {
  it.live("a TransportFailure of the engine: a 503 with its first line and an incident, never its cause", () =>
    Effect.gen(function*() {
      const logged: Array<Logged> = []
      const base = yield* server(logged, "failure")
      const reply = yield* create(base)
      assert.strictEqual(reply.status, 503, reply.text)
      assert.notInclude(reply.text, "secret-internal")
      const body = JSON.parse(reply.text) as Record<string, unknown>
      assert.deepStrictEqual(Object.keys(body).sort(), ["_tag", "description", "method", "module"])
      const incident = /\(incident (inc_[0-9a-f]{20})\)$/.exec(String(body.description))?.[1]
      assert.isDefined(incident, String(body.description))
      assert.strictEqual(body.description, `the store refused the write (incident ${incident})`)
      const line = logged.find((entry) => entry.incident === incident)
      assert.isDefined(line, "the incident is logged under its id")
      assert.include(line?.text, "disk I/O error", "with its cause")
    }))

  it.live("a defect: a 500 InternalError naming the incident; the log has the defect", () =>
    Effect.gen(function*() {
      const logged: Array<Logged> = []
      const base = yield* server(logged, "defect")
      const first = yield* create(base)
      const second = yield* create(base)
      for (const reply of [first, second]) {
        assert.strictEqual(reply.status, 500, reply.text)
        assert.notInclude(reply.text, "secret-internal")
        assert.notInclude(reply.text, "invariant")
      }
      const incidents = [first, second].map((reply) => (JSON.parse(reply.text) as { incident: string }).incident)
      assert.deepStrictEqual(
        [first, second].map((reply) => (JSON.parse(reply.text) as { _tag: string })._tag),
        ["InternalError", "InternalError"]
      )
      assert.notStrictEqual(incidents[0], incidents[1], "one incident per failure")
      for (const incident of incidents) {
        assert.include(logged.find((entry) => entry.incident === incident)?.text, "an invariant broke")
      }
      // The server goes on answering.
      assert.strictEqual((yield* request(`${base}/sessions`, { key: keys.alice })).status, 200)
    }))

  it.live("through HttpTransport: a TransportFailure naming the incident, once, with nothing of the cause", () =>
    Effect.gen(function*() {
      for (const fail of ["failure", "defect"] as const) {
        const logged: Array<Logged> = []
        const base = yield* server(logged, fail)
        const error = yield* Agent.startSession(locator).pipe(
          Effect.provide(HttpTransport.layer({ url: base, apiKey: Redacted.make(keys.alice) })),
          Effect.flip
        )
        assert.strictEqual(error._tag, "TransportFailure", fail)
        assert.match(error.message, /incident inc_[0-9a-f]{20}/, fail)
        assert.notInclude(error.message, "secret-internal", fail)
        assert.notInclude(JSON.stringify(error), "secret-internal", fail)
        assert.strictEqual(logged.length, 1, `${fail}: one request, one incident (nothing retried)`)
      }
    }))
})
