/**
 * Running commands from the tests: as child processes, with the environment each one should see.
 */
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as path from "node:path"

export const repoDir = path.resolve(import.meta.dirname, "..", "..")

export interface Output {
  readonly stdout: string
  readonly stderr: string
}

/** Runs `command args` in `cwd`; fails with its output when it exits non-zero. */
export const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly timeout?: number }
) =>
  Effect.callback<Output, Error>((resume) => {
    const child = execFile(
      command,
      args,
      { cwd: options.cwd, env: options.env, timeout: options.timeout ?? 300_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resume(
          error === null
            ? Effect.succeed({ stdout, stderr })
            : Effect.fail(new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`))
        )
      }
    )
    return Effect.sync(() => child.kill())
  })

/**
 * The environment of a project outside this repository: none of the settings npm passes to the scripts it runs
 * (`npm_config_*`, among them this repository's `node-options`), no `NODE_OPTIONS` (the `@parley/source` condition),
 * but the same npm cache, so that installs find the packages the repository's install fetched.
 */
export const outsideEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (name === "NODE_OPTIONS" || name.startsWith("npm_") || name.startsWith("VITEST") || name === "INIT_CWD") continue
    env[name] = value
  }
  if (process.env.npm_config_cache !== undefined) env.npm_config_cache = process.env.npm_config_cache
  // the PATH without this repository's node_modules/.bin (npm puts it first for its scripts)
  env.PATH = (process.env.PATH ?? "").split(path.delimiter).filter((dir) => !dir.startsWith(repoDir)).join(
    path.delimiter
  )
  return env
}

/** The environment of a command run in this repository: its tools on the PATH, the packages from their sources. */
export const repoEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  PATH: `${path.join(repoDir, "node_modules", ".bin")}${path.delimiter}${process.env.PATH ?? ""}`,
  NODE_OPTIONS: "--conditions=@parley/source"
})
