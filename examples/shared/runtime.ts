/**
 * The runtime every example runs on, picked in one place: which transport, which store, which connectors, which
 * model.
 *
 * - `runtimeLayer(model)` is the seam: it takes any `@effect/ai` `LanguageModel` service. The examples pass the
 *   language model of an offline scripted brain (`offlineRuntime`); to run them against Mistral, pass the
 *   `@parley/mistral` language model here instead — nothing else in a program changes.
 * - `offlineRuntime(brain)` builds a `ScriptedModel` from a brain function and runs everything in process.
 */
import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
// the module, not the "@parley/testing" index: the index also exports TransportSuite, which loads vitest
import * as ScriptedModel from "@parley/testing/ScriptedModel"
import { Effect, Layer } from "effect"

/** An `@effect/ai` `LanguageModel` service: what `Models` resolves an agent's model name to. */
export type LanguageModelService = Parameters<typeof Models.single>[0]

/**
 * The in-process runtime: `LocalTransport` over an in-memory session store, the demo `gmail` mailbox as the only
 * connector, and `model` for every agent, whatever model name it gives.
 */
export const runtimeLayer = (model: LanguageModelService) =>
  LocalTransport.layer.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layer([Connectors.demoMailbox()]),
      Models.layer(Models.single(model)) // <- the model seam: swap in the Mistral LanguageModel here
    ])
  )

/** The offline runtime: `runtimeLayer` with a scripted brain as the model. */
export const offlineRuntime = (brain: (call: ScriptedModel.Call) => ScriptedModel.Reply) =>
  Layer.unwrapEffect(Effect.map(ScriptedModel.fromFunction(brain), (scripted) => runtimeLayer(scripted.languageModel)))
