/**
 * How a scenario gets its runtime: `withModel(model, body)` builds the scripted model, asks the transport under test
 * for a fresh runtime on it and runs `body` there.
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Transport from "@parley/core/Transport"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as ScriptedModel from "../../ScriptedModel.js"

/** What `TransportSuite.suite` gets: a fresh runtime whose agents all run on `model`. */
export type MakeTransport = (model: LanguageModel.Service) => Layer.Layer<Transport.Transport>

/** Runs a scenario on a fresh runtime whose agents run on `model` (the handle is passed on for its `calls`). */
export type WithModel = <A, E>(
  model: Effect.Effect<ScriptedModel.Service>,
  body: (model: ScriptedModel.Service) => Effect.Effect<A, E, Transport.Transport>
) => Effect.Effect<A, E>

export const withModel = (makeTransport: MakeTransport): WithModel => (model, body) =>
  Effect.flatMap(model, (scripted) => Effect.provide(body(scripted), makeTransport(scripted.languageModel)))
