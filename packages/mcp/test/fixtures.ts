/**
 * The engine over the memory store with the connectors given, a scripted model and a real clock; and the mail server
 * as a stdio child.
 */
import type { Connectors as ConnectorsNs } from "@parley/runtime"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import type { ScriptedModel } from "@parley/testing"
import { Duration, Effect, Layer, Schedule } from "effect"
import * as path from "node:path"

export const repoDir = path.resolve(import.meta.dirname, "../../..")

/** The mail server as a stdio child: this Node, with tsx, from the repository (so it finds the SDK). */
export const stdioMail = {
  source: "mail",
  command: process.execPath,
  args: ["--import", "tsx", path.join(import.meta.dirname, "servers/mailStdio.ts")],
  cwd: repoDir,
  stderr: "ignore" as const
}

export const engine = (
  connectors: ReadonlyArray<ConnectorsNs.Connector>,
  model: ScriptedModel.Service
) =>
  LocalTransport.layer.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layer(connectors),
      RuntimeTools.layerEmpty,
      Models.layer(Models.single(model.languageModel))
    ])
  )

/** `effect`, failed when it has not finished after `seconds` (tests run with `it.live`: a real clock). */
export const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 10) =>
  Effect.timeoutOrElse(effect, {
    duration: Duration.seconds(seconds),
    orElse: () => Effect.fail(new Error(`${what}: still waiting after ${seconds} s`))
  })

/** Waits until `check` holds, looking every 20 ms. */
export const eventually = (what: string, check: () => boolean, seconds = 10) =>
  within(
    what,
    Effect.repeat(Effect.sync(check), { until: (done) => done, schedule: Schedule.spaced("20 millis") }),
    seconds
  )
