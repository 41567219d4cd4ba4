/**
 * The server process of the HTTP benchmarks (`server.ts`, on a temporary SQLite file), started and stopped as a
 * scoped resource, and its resident memory.
 */
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export const startServer = (deltas: number, appends = false) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly child: ChildProcess.ChildProcess }, Error>((resume) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-http-"))
      const child = ChildProcess.spawn(
        process.execPath,
        [
          // `PARLEY_BENCH_PROFILE=<dir>`: the server writes a CPU profile there when it stops.
          ...(process.env.PARLEY_BENCH_PROFILE
            ? ["--cpu-prof", `--cpu-prof-dir=${process.env.PARLEY_BENCH_PROFILE}`]
            : []),
          "--conditions=@parley/source",
          "--import",
          "tsx",
          path.join(import.meta.dirname, "server.ts"),
          JSON.stringify({ filename: path.join(dir, "sessions.db"), deltas, appends })
        ],
        // stdin: the push row's requests (`server.ts`)
        { stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, NODE_OPTIONS: "" } }
      )
      let out = ""
      child.stdout.on("data", (chunk) => {
        out += String(chunk)
        const match = /LISTENING (\S+)/.exec(out)
        if (match !== null) resume(Effect.succeed({ url: match[1], child }))
      })
      child.on("exit", (code) => resume(Effect.fail(new Error(`the server exited (${code})`))))
    }),
    // SIGINT first: the server stops as it would (and writes its profile), SIGKILL after 5 s.
    ({ child }) =>
      Effect.callback<void>((resume) => {
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000)
        child.once("exit", () => {
          clearTimeout(timer)
          resume(Effect.void)
        })
        if (!child.kill("SIGINT")) {
          clearTimeout(timer)
          resume(Effect.void)
        }
      })
  )

export const rssOf = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? "0") * 1024
}
