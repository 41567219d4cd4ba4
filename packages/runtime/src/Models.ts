/**
 * Model selection: resolves the model an agent names (`"mistral-large-latest"`) to an `effect/ai`
 * `LanguageModel`, so a subagent can use another model and tests can script each one.
 *
 * @example
 * ```ts
 * import { Models } from "@parley/runtime"
 * import { ScriptedModel } from "@parley/testing"
 * import { Effect, Layer } from "effect"
 *
 * const ModelsLive = Layer.effect(
 *   Models.Models,
 *   Effect.map(ScriptedModel.fromFunction(() => ScriptedModel.text("Hello")), (m) => Models.single(m.languageModel))
 * )
 * ```
 *
 * @since 0.1.0
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import { AgentInvalid } from "@parley/core/ParleyError"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** The model for an agent (a subagent without a model of its own gets its parent's model name). */
  readonly resolve: (agent: AgentSpec) => Effect.Effect<LanguageModel.LanguageModel, AgentInvalid>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Models extends Context.Service<Models, Service>()("@parley/runtime/Models") {}

const unknownModel = (agent: AgentSpec, known: ReadonlyArray<string>) =>
  new AgentInvalid({
    module: "Models",
    method: "resolve",
    agent: agent.name,
    issues: [`no model named ${JSON.stringify(agent.model ?? "")} (known: ${known.join(", ") || "none"})`]
  })

/**
 * Every agent uses the same model.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const single = (model: LanguageModel.LanguageModel): Service => ({ resolve: () => Effect.succeed(model) })

/**
 * Models by model name.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const byName = (models: Readonly<Record<string, LanguageModel.LanguageModel>>): Service => ({
  resolve: (agent) => {
    const model = agent.model === undefined ? undefined : models[agent.model]
    return model === undefined ? Effect.fail(unknownModel(agent, Object.keys(models))) : Effect.succeed(model)
  }
})

/**
 * Models by agent name (examples give each agent its own scripted "brain").
 *
 * @since 0.1.0
 * @category Constructors
 */
export const byAgent = (models: Readonly<Record<string, LanguageModel.LanguageModel>>): Service => ({
  resolve: (agent) => {
    const model = models[agent.name]
    return model === undefined
      ? Effect.fail(
        new AgentInvalid({
          module: "Models",
          method: "resolve",
          agent: agent.name,
          issues: [`no model for agent ${agent.name} (known: ${Object.keys(models).join(", ")})`]
        })
      )
      : Effect.succeed(model)
  }
})

/**
 * Tries resolvers in order; the first that resolves wins.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const orElse = (...services: ReadonlyArray<Service>): Service => ({
  resolve: (agent) =>
    Effect.gen(function*() {
      const issues: Array<string> = []
      for (const service of services) {
        const resolved = yield* Effect.result(service.resolve(agent))
        if (resolved._tag === "Success") return resolved.success
        issues.push(...resolved.failure.issues)
      }
      return yield* new AgentInvalid({
        module: "Models",
        method: "resolve",
        agent: agent.name,
        issues: issues.length > 0 ? issues : [`no model for ${JSON.stringify(agent.model ?? "")}`]
      })
    })
})

/**
 * @since 0.1.0
 * @category Layers
 */
export const layer = (service: Service): Layer.Layer<Models> => Layer.succeed(Models, service)

/**
 * Every agent uses the `LanguageModel` found in context. Where none is (a program run without type-checking, whose
 * layer still asks for one), no session starts: `AgentInvalid` says which layer provides a model, instead of a
 * "Service not found" defect.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerFromContext: Layer.Layer<Models, never, LanguageModel.LanguageModel> = Layer.effect(
  Models,
  Effect.map(
    Effect.serviceOption(LanguageModel.LanguageModel),
    Option.match({ onSome: single, onNone: () => noModelInContext })
  )
)

const noModelInContext: Service = {
  resolve: (agent) =>
    Effect.fail(
      new AgentInvalid({
        module: "Models",
        method: "resolve",
        agent: agent.name,
        issues: [
          "no LanguageModel in context: provide a `LanguageModel` layer (a provider's, e.g. " +
          "`MistralLanguageModel.layer(…)` of @parley/mistral, or `ScriptedModel.layer(…)` of @parley/testing " +
          "offline), or give the runtime its `models` (`LocalTransport.layerMemory({ models })`, `Models.layer(…)`)"
        ]
      })
    )
}
