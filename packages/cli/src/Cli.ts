/**
 * The `parley` command, on `effect/cli`: `serve`, `sessions list|show`, `callbacks list`, `answer`, `events`,
 * `grants list|revoke`, `webhooks deliveries|redeliver`, `cluster status`, `demo`. Every command has `--help`: a description, its usage, each argument
 * and flag described, examples.
 * Every command but `serve` and `demo` talks to a server through `HttpTransport` (`--url`, `--key`, or `PARLEY_URL`
 * / `PARLEY_API_KEY`; by default the local server and the key in `.parley/api-key`).
 *
 * Exit codes: 0 done, 1 failed (one line on stderr and a hint), 2 usage or validation (a wrong option, an answer that
 * does not fit its callback: nothing was sent).
 *
 * @example
 * ```ts
 * import { Cli } from "@parley/cli"
 * import { Effect } from "effect"
 *
 * // the command line in, the exit code out (what the `parley` executable runs)
 * const listJson = Cli.run(["node", "parley", "callbacks", "list", "--json"]).pipe(
 *   Effect.flatMap((code) => Effect.sync(() => process.exit(code)))
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as CliErrors from "effect/cli/CliError"
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as path from "node:path"
import * as Answer from "./internal/answer.js"
import * as Cluster from "./internal/cluster.js"
import { CliError } from "./internal/errors.js"
import * as Grants from "./internal/grants.js"
import * as Help from "./internal/help.js"
import * as Read from "./internal/read.js"
import * as Webhooks from "./internal/webhooks.js"
import type * as Serve from "./Serve.js"

/**
 * What the repository gives the command: the demo agents `serve` offers, and the guides' walkthrough `demo` runs.
 * Outside the repository there is none: `serve` needs `MISTRAL_API_KEY`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Extras {
  readonly demo?: Serve.Demo | undefined
  readonly walkthrough?: Effect.Effect<void> | undefined
}

const noDemo: Serve.Demo = {
  models: Effect.die(new Error("no demo agents here: set MISTRAL_API_KEY to serve real models")),
  agents: []
}

/** The server's modules load when `serve` runs: the other commands start without them. */
const loadServe = Effect.promise(() => import("./Serve.js"))

const serve = (load: Effect.Effect<Extras>) =>
  Command.make("serve", {
    port: Flag.Int("port").pipe(
      Flag.withMetavar("PORT"),
      Flag.withDescription("The port to listen on; 0 picks a free one (default: PARLEY_PORT, else 8787)."),
      Flag.optional
    ),
    host: Flag.String("host").pipe(
      Flag.withMetavar("HOST"),
      Flag.withDescription("The address to listen on (default: PARLEY_HOST, else 127.0.0.1: this machine only)."),
      Flag.optional
    ),
    database: Flag.String("database").pipe(
      Flag.withMetavar("FILE|URL"),
      Flag.withDescription(
        "Where sessions are kept: a SQLite file, or a postgres:// URL (default: PARLEY_DATABASE_URL, else " +
          ".parley/sessions.db)."
      ),
      Flag.optional
    ),
    logFormat: Flag.Literals("log-format", ["logfmt", "json", "pretty"]).pipe(
      Flag.withMetavar("FORMAT"),
      Flag.withDescription("The log's format (default: PARLEY_LOG_FORMAT, else logfmt)."),
      Flag.optional
    ),
    // Serve.logLevels, written here: the server's modules load only when `serve` runs.
    logLevel: Flag.Literals("log-level", ["error", "warn", "info", "debug"] satisfies ReadonlyArray<Serve.LogLevel>)
      .pipe(
        Flag.withMetavar("LEVEL"),
        Flag.withDescription(
          "What the server logs: warnings and errors by default (PARLEY_LOG_LEVEL, else warn); info adds a line per " +
            "request."
        ),
        Flag.optional
      ),
    cluster: Flag.String("cluster").pipe(
      Flag.withMetavar("HOST:PORT"),
      Flag.withDescription(
        "Run as a runner of the cluster of the PostgreSQL --database, listening at HOST:PORT for the other " +
          "runners (default: PARLEY_CLUSTER_RUNNER, else no cluster)."
      ),
      Flag.optional
    ),
    acceptDefinitions: Flag.Boolean("accept-definitions").pipe(
      Flag.withDescription(
        "Let a key's holder start sessions of agent definitions of its own, not only the served agents " +
          "(default: PARLEY_ACCEPT_DEFINITIONS, else off)."
      ),
      Flag.withDefault(false)
    )
  }, (given) =>
    Effect.gen(function*() {
      const Serve = yield* loadServe
      const extras = yield* load
      const defaults = Serve.settingsFromEnv(process.env, path.resolve(".parley"))
      const settings: Serve.Settings = {
        ...defaults,
        port: Option.getOrElse(given.port, () => defaults.port),
        host: Option.getOrElse(given.host, () => defaults.host),
        database: Option.getOrElse(given.database, () => defaults.database),
        logFormat: Option.getOrElse(given.logFormat, () => defaults.logFormat),
        logLevel: Option.getOrElse(given.logLevel, () => defaults.logLevel),
        cluster: Option.getOrElse(given.cluster, () => defaults.cluster),
        acceptDefinitions: given.acceptDefinitions || defaults.acceptDefinitions
      }
      if (
        settings.cluster !== undefined &&
        (Serve.parseRunner(settings.cluster) === undefined || !Serve.isPostgres(settings.database ?? ""))
      ) {
        return yield* new CliError({
          message: `--cluster ${settings.cluster}: a cluster runner needs host:port and a PostgreSQL database`,
          hint: "give --cluster 127.0.0.1:34431 and --database postgres://… (or PARLEY_DATABASE_URL)",
          exitCode: 2
        })
      }
      if ((process.env.MISTRAL_API_KEY ?? "") === "" && extras.demo === undefined) {
        return yield* new CliError({
          message: "no models to serve: no demo agents here and MISTRAL_API_KEY is not set",
          hint: "set MISTRAL_API_KEY, or run `npx parley serve` in the Parley repository (its demo agents)",
          exitCode: 1
        })
      }
      return yield* Serve.launch(settings, extras.demo ?? noDemo).pipe(
        Effect.mapError((error) => new CliError({ message: `the server did not start: ${error.message}`, exitCode: 1 }))
      )
    })).pipe(
      Command.withDescription(
        "Run a Parley server: the API, and the session app at / (in the Parley repository, with its demo agents; " +
          "elsewhere, the agents' real models: set MISTRAL_API_KEY). It prints the app's URL and the API key."
      ),
      Command.withShortDescription("Run a Parley server (the session app at /)."),
      Command.withExamples([
        { command: "parley serve", description: "on http://127.0.0.1:8787, sessions in ./.parley/sessions.db" },
        { command: "parley serve --port 9000 --database /var/lib/parley/sessions.db" },
        { command: "parley serve --log-level info", description: "a log line per request too" },
        { command: "parley serve --database postgres://parley@db/parley", description: "sessions in PostgreSQL" }
      ])
    )

const demo = (load: Effect.Effect<Extras>) =>
  Command.make("demo", {}, () =>
    Effect.flatMap(load, (extras) =>
      extras.walkthrough === undefined
        ? Effect.fail(
          new CliError({
            message: "the walkthrough is part of the Parley repository",
            hint: "run `npx parley demo` (or `npm run demo`) in a clone of it",
            exitCode: 1
          })
        )
        : extras.walkthrough)).pipe(
      Command.withDescription(
        "Run the guides' walkthrough, narrated: a server it starts, and a program that talks to it over HTTP " +
          "(in a clone of the Parley repository)."
      ),
      Command.withShortDescription("Run the guides' walkthrough, narrated."),
      Command.withExamples([{ command: "parley demo" }])
    )

/**
 * The command tree.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const command = (extras: Effect.Effect<Extras> = Effect.succeed({})) =>
  Command.make("parley").pipe(
    Command.withDescription("See what waits in Parley sessions, answer it, watch it happen."),
    Command.withExamples([
      { command: "parley serve", description: "run a server, with the session app" },
      { command: "parley callbacks list", description: "what waits for an answer, across sessions" },
      { command: "parley answer cb_1a2b allow", description: "answer one" },
      { command: "parley events ses_9f8e --follow", description: "watch a session" }
    ]),
    Command.withSubcommands([
      serve(extras),
      Read.sessions,
      Read.callbacks,
      Answer.command,
      Read.events,
      Grants.command,
      Webhooks.command,
      Cluster.command,
      demo(extras)
    ])
  )

/**
 * How `effect/cli` prints: help and the version as it does (stdout); a command line it cannot parse as Parley's
 * failures are, one line each on stderr and the hint that shows the usage (stdout stays empty).
 */
const presenter: CliOutput.Presenter = {
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Console.error(
        [
          ...event.errors.map((error) => `parley: ${error.message}`),
          `  hint: \`${event.commandPath.join(" ")} --help\` shows the usage`
        ].join("\n")
      )
      : CliOutput.defaultPresenter.present(event)
}

/**
 * Runs the command line `argv` (`process.argv`: node and the script first); resolves with the exit code: 0 done, 1
 * failed, 2 usage or validation. A failure prints one line on stderr, and the hint that fixes it. `extras` (the demo)
 * is loaded only by the commands that use it.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const run = (
  argv: ReadonlyArray<string>,
  extras: Effect.Effect<Extras> = Effect.succeed({})
): Effect.Effect<number> =>
  Command.runWith(command(extras), { version: "0.1.0" })(argv.slice(2)).pipe(
    Effect.as(0),
    Effect.catch((error) => {
      // A command that needs a subcommand, given none, shows its help.
      if (CliErrors.isCliError(error)) {
        return Effect.succeed(error._tag === "ShowHelp" && error.errors.length === 0 ? 0 : 2)
      }
      if (error instanceof CliError) {
        return Console.error(`parley: ${error.message}${error.hint === undefined ? "" : `\n  hint: ${error.hint}`}`)
          .pipe(Effect.as(error.exitCode))
      }
      return Console.error(`parley: ${String(error)}`).pipe(Effect.as(1))
    }),
    Effect.provideService(CliOutput.Presenter, presenter),
    Effect.provide(Help.layer),
    Effect.provide(NodeServices.layer)
  )
