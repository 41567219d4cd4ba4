/**
 * How `parley` documents itself: `effect/cli`'s help, with the built-in global flags that mean something to a Parley
 * user (`--help`, `--version`, `--completions`; not the wizard, nor a log level no command but `serve` has a use
 * for), listed in full by `parley --help` and named by the other commands' help; coloured only on a terminal
 * (`TerminalCapabilities`: never into a pipe or a file, nor with `NO_COLOR` or `TERM=dumb`).
 */
import * as CliConfig from "effect/cli/CliConfig"
import * as CliOutput from "effect/cli/CliOutput"
import * as GlobalFlag from "effect/cli/GlobalFlag"
import * as TerminalCapabilities from "effect/cli/TerminalCapabilities"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** The built-in global flags `parley` offers, in the order their actions take precedence. */
export const builtIns: ReadonlyArray<GlobalFlag.BuiltIn> = [GlobalFlag.Help, GlobalFlag.Version, GlobalFlag.Completions]

/** The `EXAMPLES` heading (coloured or not) right under a line that is not blank. */
const examplesHeading = /([^\n])\n((?:\x1b\[[0-9;]*m)*EXAMPLES)/ // eslint-disable-line no-control-regex

/**
 * The formatter of help, versions and usage errors: Effect's, coloured when the terminal can show colours. An
 * argument is named by its name alone (`callback-id`, not `callback-id string`), and the examples are set apart from
 * the subcommands above them by a blank line, as every other section is.
 */
export const formatter: Effect.Effect<CliOutput.Formatter> = TerminalCapabilities.TerminalCapabilities.useSync(
  (terminal) => {
    const base = CliOutput.defaultFormatter({ colors: terminal.canColor, globalFlags: "summary" })
    return {
      ...base,
      formatHelpDoc: (doc) =>
        base.formatHelpDoc({ ...doc, args: doc.args?.map((arg) => ({ ...arg, type: "" })) })
          .replace(examplesHeading, "$1\n\n$2")
    }
  }
)

/** The runner's configuration and the formatter, for `Command.runWith`. */
export const layer: Layer.Layer<never> = Layer.mergeAll(
  CliConfig.layer({ builtIns }),
  Layer.unwrap(Effect.map(formatter, CliOutput.layer))
)
