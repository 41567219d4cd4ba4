import * as Config from "effect/Config"
import * as Option from "effect/Option"

/** A setting that may be absent: `undefined` when it is. */
export const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.map(Config.option(config), Option.getOrUndefined)
