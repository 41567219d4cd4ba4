/**
 * A runner process of the cluster bench (`main.ts` starts it with one JSON argument: `{ url, port }`): says `Ready`
 * over IPC once it serves, then runs until it is stopped.
 */
import { NodeRuntime } from "@effect/platform-node"
import { ScriptedModel } from "@parley/testing"
import { Effect, Layer } from "effect"
import { brain, runner } from "./runner.js"

const { port, url } = JSON.parse(process.argv[2]) as { readonly url: string; readonly port: number }

NodeRuntime.runMain(Effect.gen(function*() {
  const model = yield* ScriptedModel.fromFunction(brain)
  yield* Layer.launch(
    Layer.effectDiscard(Effect.sync(() => process.send?.({ _tag: "Ready" }))).pipe(
      Layer.provide(runner({ url, port, model: model.languageModel }))
    )
  )
}))
