/**
 * The `Transport` port over an in-process engine: the client API (`Agent`, `Session`, `Turn`) drives sessions in
 * the same process. The HTTP transport provides the same Tag, so a program moves across a process boundary by
 * changing one layer.
 *
 * `layerMemory` is the whole runtime in one line: the engine over an in-memory session store, the connectors and the
 * tools the runtime runs that you give (none by default) and the models. Without `models`, every agent runs on the
 * `LanguageModel` in context: the `effect/ai` provider layer of your choice, or `ScriptedModel.layer(...)` from
 * `@parley/testing` offline. `layer` is the engine alone, for a program that picks its own store, connectors, runtime tools and models.
 *
 * @example
 * ```ts
 * import { Connectors, LocalTransport } from "@parley/runtime"
 * import { ScriptedModel } from "@parley/testing"
 * import { Layer } from "effect"
 *
 * // offline: every agent runs on a scripted model, and can sign in to the demo mailbox
 * const Runtime = LocalTransport.layerMemory({ connectors: [Connectors.demoMailbox()] }).pipe(
 *   Layer.provide(ScriptedModel.layer([ScriptedModel.text("Hello!")]))
 * )
 * ```
 *
 * @since 0.1.0
 */
import { Transport } from "@parley/core/Transport"
import * as EventLog from "@parley/log/EventLog"
import * as SessionStore from "@parley/log/SessionStore"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Connectors from "./Connectors.js"
import * as Engine from "./Engine.js"
import * as Models from "./Models.js"
import * as RuntimeTools from "./RuntimeTools.js"

/**
 * The services the engine needs, each with the layer that provides it. A program run without type-checking that
 * leaves one out dies with this list, not with "Service not found".
 */
const requireServices = (method: string) =>
  Effect.gen(function*() {
    const missing: Array<string> = []
    if (Option.isNone(yield* Effect.serviceOption(EventLog.EventLog))) {
      missing.push(
        "SessionStore (`SessionStore.layerMemory`, or `SqlStore.layerSqlite({ filename })` of @parley/store-sql)"
      )
    }
    if (Option.isNone(yield* Effect.serviceOption(Connectors.Connectors))) {
      missing.push("Connectors (`Connectors.layer([...])` or `Connectors.layerEmpty`)")
    }
    if (Option.isNone(yield* Effect.serviceOption(RuntimeTools.RuntimeTools))) {
      missing.push("RuntimeTools (`RuntimeTools.layer(...tools)` or `RuntimeTools.layerEmpty`)")
    }
    if (Option.isNone(yield* Effect.serviceOption(Models.Models))) {
      missing.push("Models (`Models.layer(resolver)`, or `Models.layerFromContext` with a `LanguageModel` layer)")
    }
    if (missing.length > 0) {
      return yield* Effect.die(
        new Error(
          `LocalTransport.${method}: the engine needs ${missing.join(", ")}; ` +
            "or use `LocalTransport.layerMemory()` / `SqlRuntime.layerSqlite()` (@parley/store-sql), which provide them all"
        )
      )
    }
  })

/**
 * The engine alone: provide a `SessionStore`, the `Connectors`, the `RuntimeTools` and the `Models` (or use
 * `layerMemory`).
 *
 * @example
 * ```ts
 * import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
 * import { ScriptedModel } from "@parley/testing"
 * import { Effect, Layer } from "effect"
 *
 * const ModelsLive = Layer.effect(
 *   Models.Models,
 *   Effect.map(ScriptedModel.fromFunction(() => ScriptedModel.text("Hello!")), (m) => Models.single(m.languageModel))
 * )
 * const TransportLive = LocalTransport.layer.pipe(
 *   Layer.provide([
 *     SessionStore.layerMemory,
 *     Connectors.layer([Connectors.demoMailbox()]),
 *     RuntimeTools.layerEmpty,
 *     ModelsLive
 *   ])
 * )
 * ```
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer: Layer.Layer<
  Transport,
  never,
  SessionStore.SessionStore | Models.Models | Connectors.Connectors | RuntimeTools.RuntimeTools
> = Layer.effect(Transport, Effect.andThen(requireServices("layer"), Engine.make))

/**
 * The options of `layerMemory`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface MemoryOptions {
  /**
   * Resolves the model of each agent (the root and every subagent): `Models.single(model)`, `Models.byName`,
   * `Models.byAgent`, or the Mistral resolver of `@parley/mistral`. Without it, every agent runs on the
   * `LanguageModel` in context, and the layer requires one.
   */
  readonly models?: Models.Service | undefined
  /** The connectors agents can sign in to (`connectors: ["gmail"]` in `Agent.make`). Default: none. */
  readonly connectors?: ReadonlyArray<Connectors.Connector> | undefined
  /**
   * Tools the runtime runs (`Tool.make` tools, or `clientTool.answer(fn)`): their calls are answered by the engine,
   * with no client waiting (see `RuntimeTools`). Default: none; every tool of the program is answered by the program.
   */
  readonly tools?: ReadonlyArray<RuntimeTools.Entry> | undefined
  /** The engine's options (see `Engine.Options`). */
  readonly engine?: Engine.Options | undefined
}

/**
 * The whole in-process runtime in one layer: the engine (`layer`) over an in-memory `SessionStore`
 * (`SessionStore.layerMemory`: sessions live as long as the layer), the `connectors` and the runtime `tools` given
 * (none by default) and the models. With `models`, the layer needs nothing; without, every agent runs on the `LanguageModel` in context.
 *
 * @example
 * ```ts
 * import { Agent } from "@parley/core"
 * import { LocalTransport, Models } from "@parley/runtime"
 * import { ScriptedModel } from "@parley/testing"
 * import { Effect, Layer } from "effect"
 *
 * const assistant = Agent.make({ name: "assistant", model: "mistral-large-latest", instructions: "Be brief." })
 *
 * // every agent on the LanguageModel in context (here a scripted one)
 * const Offline = LocalTransport.layerMemory().pipe(Layer.provide(ScriptedModel.layer([ScriptedModel.text("Hi!")])))
 *
 * // or a resolver, by model name or by agent
 * const ByAgent = Layer.unwrap(
 *   Effect.map(
 *     ScriptedModel.fromFunction(() => ScriptedModel.text("Hi!")),
 *     (scripted) => LocalTransport.layerMemory({ models: Models.byAgent({ assistant: scripted.languageModel }) })
 *   )
 * )
 *
 * const program = Effect.flatMap(Agent.run(assistant, "Hello"), (state) => Effect.log(state._tag))
 * Effect.runPromise(program.pipe(Effect.provide(Offline)))
 * ```
 *
 * @since 0.1.0
 * @category Layers
 */
export function layerMemory(options: MemoryOptions & { readonly models: Models.Service }): Layer.Layer<Transport>
export function layerMemory(options?: MemoryOptions): Layer.Layer<Transport, never, LanguageModel.LanguageModel>
export function layerMemory(options?: MemoryOptions): Layer.Layer<Transport, never, LanguageModel.LanguageModel> {
  return (options?.engine === undefined ? layer : layerWith(options.engine)).pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layer(options?.connectors ?? []),
      RuntimeTools.layer(...(options?.tools ?? [])),
      options?.models === undefined ? Models.layerFromContext : Models.layer(options.models)
    ])
  )
}

/**
 * The engine alone with options (e.g. how long an idle tree stays in memory: `idleTimeToLive`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerWith = (
  options: Engine.Options
): Layer.Layer<
  Transport,
  never,
  SessionStore.SessionStore | Models.Models | Connectors.Connectors | RuntimeTools.RuntimeTools
> => Layer.effect(Transport, Effect.andThen(requireServices("layerWith"), Engine.makeWith(options)))
