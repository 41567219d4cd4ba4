/** Field schemas the modules of the package share: a non-negative integer, and an optional field with a default. */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** A non-negative integer (a `seq`, a cursor, an index). */
export const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A field that may be absent (or `undefined`) in the encoded form and decodes to `value()` then, which the class
 * constructor fills in too: Schema 4's `withDecodingDefaultType` with `withConstructorDefault`.
 */
export const withDefault = <S extends Schema.Top & Schema.WithoutConstructorDefault>(
  schema: S,
  value: () => S["Type"]
): Schema.withConstructorDefault<Schema.withDecodingDefaultType<S>> =>
  Schema.withConstructorDefault<Schema.withDecodingDefaultType<S>>(Effect.sync(value))(
    Schema.withDecodingDefaultType<S>(Effect.sync(value))(schema)
  )
