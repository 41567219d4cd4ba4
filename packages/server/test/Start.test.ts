import { assert, describe, it } from "@effect/vitest"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { Cause, Context, Effect, Exit, Layer, Option } from "effect"
import { HttpServer } from "effect/http"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

// A server that cannot start says why, typed in the layer's error channel (never a defect): a port another server
// holds, a database file that cannot be opened.

const model = Effect.map(
  ScriptedModel.fromFunction(() => ScriptedModel.text("Hello.")),
  (scripted) => Models.single(scripted.languageModel)
)

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "parley-start-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("ParleyServer: a server that cannot start", () => {
  it.live("a port another server holds is a typed ServeError", () =>
    Effect.gen(function*() {
      const models = yield* model
      const dir = yield* tempDir
      const first = yield* Layer.build(
        ParleyServer.layerSqlite({ filename: path.join(dir, "a.db"), models, port: 0, keys: [], log: false })
      )
      const address = Context.get(first, HttpServer.HttpServer).address
      const port = "port" in address ? address.port : 0
      const second = yield* Effect.exit(Effect.scoped(Layer.build(
        ParleyServer.layerSqlite({ filename: path.join(dir, "b.db"), models, port, keys: [], log: false })
      )))
      assert.isTrue(Exit.isFailure(second))
      if (Exit.isFailure(second)) {
        const failure = Cause.findErrorOption(second.cause).pipe(Option.getOrUndefined)
        assert.strictEqual(failure?._tag, "ServeError", String(second.cause))
      }
    }))

  it.live("a database file that cannot be opened is a typed StoreError", () =>
    Effect.gen(function*() {
      const models = yield* model
      const dir = yield* tempDir
      // A folder where the file should be.
      const filename = path.join(dir, "sessions.db")
      fs.mkdirSync(filename)
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(
        ParleyServer.layerSqlite({ filename, models, port: 0, keys: [], log: false })
      )))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const failure = Cause.findErrorOption(exit.cause).pipe(Option.getOrUndefined)
        assert.strictEqual(failure?._tag, "StoreError", String(exit.cause))
      }
    }))
})
