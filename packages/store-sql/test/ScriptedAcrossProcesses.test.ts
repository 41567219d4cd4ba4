/**
 * A turn scripted with `ScriptedModel` paused in one process and resumed in another over the same SQLite file: a
 * brain function (`layerFunction` / `fromFunction`) decides from the conversation, so the second process goes on
 * where the first stopped; a list of steps (`layer`) starts again from its first step in every process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@parley/core"
import { SqlRuntime } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import * as path from "node:path"
import { sqliteFile } from "./databases.js"
import { assistant, brain } from "./fixtures/scriptedAgent.js"

const repoDir = path.resolve(import.meta.dirname, "..", "..", "..")

interface Resumed {
  readonly state: string
  readonly text: string | undefined
  readonly modelCalls: number
}

/** Runs `fixtures/resumeScripted.ts` in a child process. */
const resumeInChild = (filename: string, sessionId: string, turnId: string, kind: "function" | "steps") =>
  Effect.callback<Resumed, Error>((resume) => {
    const child = execFile(
      process.execPath,
      [
        "--conditions=@parley/source",
        "--import",
        "tsx",
        path.join(import.meta.dirname, "fixtures", "resumeScripted.ts"),
        filename,
        sessionId,
        turnId,
        kind
      ],
      { cwd: repoDir, timeout: 60_000 },
      (error, stdout, stderr) =>
        resume(
          error === null
            ? Effect.succeed(JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as Resumed)
            : Effect.fail(new Error(`the child failed: ${error.message}\n${stderr}`))
        )
    )
    return Effect.sync(() => child.kill())
  })

/** The first process: runs the turn with no handler, so it stops Blocked on the approval of get_location. */
const pauseHere = (filename: string) =>
  Effect.scoped(
    Agent.run(assistant, "Where am I?").pipe(
      Effect.provide(SqlRuntime.layerSqlite({ filename }).pipe(Layer.provide(ScriptedModel.layerFunction(brain))))
    )
  )

describe("ScriptedModel across processes", () => {
  it.live(
    "a fromFunction-scripted turn paused in one process completes in a second one",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        const blocked = yield* pauseHere(filename)
        assert.strictEqual(blocked._tag, "Blocked")
        const resumed = yield* resumeInChild(filename, blocked.sessionId, blocked.turnId, "function")
        assert.deepStrictEqual(resumed, { state: "Completed", text: "You're in Lyon, France.", modelCalls: 1 })
      }),
    { timeout: 60_000 }
  )

  it.live(
    "a list of steps starts again in the second process: its first step is replayed",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        const blocked = yield* pauseHere(filename)
        const resumed = yield* resumeInChild(filename, blocked.sessionId, blocked.turnId, "steps")
        // the second process's first model call got step 1 again (another get_location call), then step 2
        assert.deepStrictEqual(resumed, { state: "Completed", text: "You're in Lyon, France.", modelCalls: 2 })
      }),
    { timeout: 60_000 }
  )
})
