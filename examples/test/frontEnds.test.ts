/**
 * The front-end guides' programs run as a reader runs them (`tsx`, offline): `ag-ui/main.ts` drives the server's
 * AG-UI route with `@ag-ui/client`'s `HttpAgent` to the end of the turn. (`use-chat/page` is the page that
 * `packages/server/test/UseChat.test.ts` drives in Chromium.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as path from "node:path"

const examplesDir = path.resolve(import.meta.dirname, "..")
const tsx = path.resolve(examplesDir, "..", "node_modules", ".bin", "tsx")

const run = (file: string) =>
  Effect.callback<string, Error>((resume) => {
    const { FORCE_COLOR: _f, MISTRAL_API_KEY: _k, NO_COLOR: _n, ...env } = process.env
    execFile(tsx, ["--conditions=@parley/source", file], { cwd: examplesDir, env }, (error, stdout, stderr) =>
      resume(error === null ? Effect.succeed(stdout) : Effect.fail(new Error(`${error.message}\n${stderr}`))))
  })

describe("front-end examples", () => {
  it.live(
    "ag-ui/main.ts: an interrupt, resumed; the client tool's interrupt, resumed; the answer",
    () =>
      Effect.gen(function*() {
        const stdout = yield* run(path.join("ag-ui", "main.ts"))
        assert.strictEqual(
          stdout,
          [
            "events: RUN_STARTED STATE_SNAPSHOT STEP_STARTED TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END STATE_SNAPSHOT " +
            "STEP_FINISHED RUN_FINISHED",
            "interrupt: approval: approve get_location?",
            "events: RUN_STARTED STATE_SNAPSHOT STATE_SNAPSHOT STATE_SNAPSHOT RUN_FINISHED",
            "interrupt: client_tool: run get_location and give its result",
            "events: RUN_STARTED STATE_SNAPSHOT STATE_SNAPSHOT TOOL_CALL_RESULT STEP_STARTED TEXT_MESSAGE_START " +
            "TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED",
            "assistant: You are in Lyon.",
            ""
          ].join("\n")
        )
      }),
    { timeout: 120_000 }
  )
})
