/**
 * Hints about what a tool does (the MCP tool annotations): a title, and whether it only reads, destroys, is
 * idempotent or reaches the open world. Permission policies and callback handlers read them (for example
 * `CallbackHandler.allowReadOnly`); nothing enforces them.
 *
 * The class is core's `ToolSpec.ToolAnnotations`, re-exported; this module adds small constructors.
 *
 * @example
 * ```ts
 * import { ClientTool, ToolAnnotations } from "@parley/tools"
 * import { Effect, Schema } from "effect"
 *
 * // the seed's get_location declares that it only reads
 * const getLocation = ClientTool.make("get_location", {
 *   description: "The user's current location.",
 *   parameters: { precision: Schema.Literals(["city", "street"]).pipe(Schema.withDecodingDefault(Effect.succeed("city" as const))) },
 *   success: Schema.Struct({ city: Schema.String, country: Schema.String }),
 *   annotations: ToolAnnotations.readOnly
 * })
 *
 * const sendEmail = ToolAnnotations.combine(ToolAnnotations.destructive, ToolAnnotations.openWorld, {
 *   title: "Send an email"
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as ToolSpec from "@parley/core/ToolSpec"

/**
 * The annotations class (core's `ToolSpec.ToolAnnotations`): every hint defaults to `false`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const ToolAnnotations: typeof ToolSpec.ToolAnnotations = ToolSpec.ToolAnnotations

/**
 * @since 0.1.0
 * @category Models
 */
export type ToolAnnotations = ToolSpec.ToolAnnotations

/**
 * The fields of `ToolAnnotations`, each optional: what `make` and `ClientTool.make({ annotations })` accept.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Hints {
  readonly title?: string | undefined
  readonly readOnlyHint?: boolean | undefined
  readonly destructiveHint?: boolean | undefined
  readonly idempotentHint?: boolean | undefined
  readonly openWorldHint?: boolean | undefined
}

const defined = (hints: Hints): Hints =>
  Object.fromEntries(Object.entries(hints).filter(([, value]) => value !== undefined))

/**
 * Annotations from hints; the hints not given are `false`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (hints: Hints = {}): ToolAnnotations =>
  hints instanceof ToolSpec.ToolAnnotations ? hints : new ToolSpec.ToolAnnotations(defined(hints))

/**
 * No hints: every hint is `false`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const none: ToolAnnotations = make()

/**
 * The tool only reads: it changes nothing (`readOnlyHint`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const readOnly: ToolAnnotations = make({ readOnlyHint: true })

/**
 * The tool may destroy or overwrite data (`destructiveHint`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const destructive: ToolAnnotations = make({ destructiveHint: true })

/**
 * Calling the tool twice with the same arguments has the effect of calling it once (`idempotentHint`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const idempotent: ToolAnnotations = make({ idempotentHint: true })

/**
 * The tool reaches outside systems: the web, other people's data (`openWorldHint`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const openWorld: ToolAnnotations = make({ openWorldHint: true })

/**
 * A title for the tool, for people (the model sees the name and description).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const title = (title: string): ToolAnnotations => make({ title })

/**
 * Combines annotations: a hint is `true` when any of them sets it; the last title given wins.
 *
 * @since 0.1.0
 * @category Utils
 */
export const combine = (...annotations: ReadonlyArray<ToolAnnotations | Hints>): ToolAnnotations => {
  const all = annotations.map(make)
  const lastTitle = all.reduce<string | undefined>((found, a) => a.title ?? found, undefined)
  return make({
    title: lastTitle,
    readOnlyHint: all.some((a) => a.readOnlyHint),
    destructiveHint: all.some((a) => a.destructiveHint),
    idempotentHint: all.some((a) => a.idempotentHint),
    openWorldHint: all.some((a) => a.openWorldHint)
  })
}
