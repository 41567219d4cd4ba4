/** The fields and message helpers every Parley error shares. */
import * as Schema from "effect/Schema"

export const common = {
  module: Schema.String,
  method: Schema.String,
  description: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect())
}

export const where = (error: { readonly module: string; readonly method: string }) => `${error.module}.${error.method}`
export const suffix = (description: string | undefined) => (description === undefined ? "" : `: ${description}`)
