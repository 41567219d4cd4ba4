/**
 * The `parley` executable: runs `Cli.run` on the command line and exits with its code. In the Parley repository it
 * offers the examples' demo agents (`serve`) and the guides' walkthrough (`demo`).
 *
 * @since 0.1.0
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Cli from "./Cli.js"

/** The repository's demo, when this runs inside it (the examples are not part of the published package). */
const extras: Effect.Effect<Cli.Extras> = Effect.promise(async () => {
  const specifier = "@parley/examples/shared/demo.ts"
  try {
    const module = (await import(specifier)) as { readonly extras?: Cli.Extras }
    return module.extras ?? {}
  } catch {
    return {}
  }
})

NodeRuntime.runMain(
  Cli.run(process.argv, extras).pipe(
    Effect.flatMap((code) => Effect.sync(() => process.exit(code)))
  ),
  { disableErrorReporting: true }
)
