/**
 * A client that holds a connection without using it does not hold it for long (issue 35, point 2), against
 * `ParleyServer.layerSqlite` on 127.0.0.1 over raw TCP: headers that never finish, a body that never comes, a
 * kept-alive connection left idle. Each is answered (408) or closed within its deadline, and the server answers on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as fs from "node:fs"
import { connect } from "node:net"
import * as os from "node:os"
import * as path from "node:path"

const key = "deadline-key-0123456789"

const server = Effect.gen(function*() {
  const scripted = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("Hello."))
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "parley-deadlines-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const context = yield* Layer.build(ParleyServer.layerSqlite({
    filename: path.join(dir, "sessions.db"),
    models: Models.single(scripted.languageModel),
    port: 0,
    keys: [{ key: Redacted.make(key), tenant: "me" }],
    log: false,
    deadlines: { headers: "1 second", request: "2 seconds", idle: "1 second" }
  }))
  const address = Context.get(context, HttpServer.HttpServer).address
  return "port" in address ? address.port : 0
})

interface Outcome {
  /** What the server wrote before it closed the connection. */
  readonly received: string
  /** Milliseconds from the first byte sent to the close. */
  readonly closedAfter: number
}

/** Sends `text` on a fresh TCP connection and waits for the server to close it (the test's timeout bounds it). */
const holdOpen = (port: number, text: string) =>
  Effect.promise(() =>
    new Promise<Outcome>((resolve) => {
      const started = Date.now()
      const socket = connect(port, "127.0.0.1", () => socket.write(text))
      let received = ""
      socket.on("data", (data) => (received += data.toString()))
      socket.on("error", () => undefined)
      socket.on("close", () => resolve({ received, closedAfter: Date.now() - started }))
    })
  )

const get = (port: number) =>
  Effect.promise(() =>
    fetch(`http://127.0.0.1:${port}/sessions`, { headers: { authorization: `Bearer ${key}` } }).then((response) =>
      response.status
    )
  )

describe("deadlines of a connection", () => {
  it.live("headers that never finish: 408 and closed after the headers deadline", () =>
    Effect.gen(function*() {
      const port = yield* server
      const outcome = yield* holdOpen(port, "GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
      assert.match(outcome.received, /^HTTP\/1\.1 408 /)
      assert.isAtLeast(outcome.closedAfter, 900, "not before the deadline")
      assert.strictEqual(yield* get(port), 200, "the server answers on")
    }), 60_000)

  it.live("a body that never comes: 408 and closed after the request deadline", () =>
    Effect.gen(function*() {
      const port = yield* server
      const outcome = yield* holdOpen(
        port,
        `POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
          "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":"
      )
      assert.match(outcome.received, /^HTTP\/1\.1 408 /)
      assert.isAtLeast(outcome.closedAfter, 1_900, "not before the deadline")
      assert.strictEqual(yield* get(port), 200)
    }), 60_000)

  it.live(
    "a kept-alive connection left idle after its answer is closed after the idle deadline",
    () =>
      Effect.gen(function*() {
        const port = yield* server
        const outcome = yield* holdOpen(
          port,
          `GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`
        )
        assert.match(outcome.received, /^HTTP\/1\.1 200 /, "the request was answered")
        assert.isAtLeast(outcome.closedAfter, 900, "the connection was kept alive first")
        assert.strictEqual(yield* get(port), 200)
      }),
    60_000
  )
})
