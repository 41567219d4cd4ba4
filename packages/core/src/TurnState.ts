/**
 * How a turn stands: `Completed`, `Blocked` (the tree cannot progress until one of `callbacks` is answered),
 * `Failed` or `Cancelled`. `Blocked.cursor` is the log position to wait again from (`Turn.result({ after })`).
 *
 * @example
 * ```ts
 * import { TurnState } from "@parley/core"
 * import { Match } from "effect"
 *
 * const show = Match.type<TurnState.TurnState>().pipe(
 *   Match.tag("Completed", (s) => `Completed ${s.text}`),
 *   Match.tag("Blocked", (s) => `Blocked on ${s.callbacks.length} callbacks`),
 *   Match.tag("Failed", (s) => `Failed ${s.error.message}`),
 *   Match.tag("Cancelled", () => "Cancelled"),
 *   Match.exhaustive
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Callback } from "./Callback.js"
import { SessionId, TurnId } from "./Ids.js"
import { NonNegativeInt } from "./internal/schemaFields.js"
import { ParleyError } from "./ParleyError.js"

const common = { sessionId: SessionId, turnId: TurnId }

/**
 * @since 0.1.0
 * @category Schemas
 */
export class Completed extends Schema.TaggedClass<Completed>("@parley/core/TurnState/Completed")("Completed", {
  ...common,
  text: Schema.String
}) {}

/**
 * @since 0.1.0
 * @category Schemas
 */
export class Blocked extends Schema.TaggedClass<Blocked>("@parley/core/TurnState/Blocked")("Blocked", {
  ...common,
  callbacks: Schema.Array(Callback),
  cursor: NonNegativeInt
}) {}

/**
 * @since 0.1.0
 * @category Schemas
 */
export class Failed extends Schema.TaggedClass<Failed>("@parley/core/TurnState/Failed")("Failed", {
  ...common,
  error: ParleyError
}) {}

/**
 * @since 0.1.0
 * @category Schemas
 */
export class Cancelled extends Schema.TaggedClass<Cancelled>("@parley/core/TurnState/Cancelled")("Cancelled", {
  ...common
}) {}

/**
 * The states a turn ends in.
 *
 * @since 0.1.0
 * @category Models
 */
export type Final = Completed | Failed | Cancelled

/**
 * @since 0.1.0
 * @category Schemas
 */
export const Final: Schema.Union<readonly [typeof Completed, typeof Failed, typeof Cancelled]> = Schema.Union([
  Completed,
  Failed,
  Cancelled
])

/**
 * @since 0.1.0
 * @category Models
 */
export type TurnState = Completed | Blocked | Failed | Cancelled

/**
 * @since 0.1.0
 * @category Schemas
 */
export const TurnState: Schema.Union<
  readonly [typeof Completed, typeof Blocked, typeof Failed, typeof Cancelled]
> = Schema.Union([Completed, Blocked, Failed, Cancelled])
