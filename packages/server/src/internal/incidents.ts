/**
 * What the server answers when it fails, and what it logs. A caller learns an incident's id, never its cause: a
 * defect is an `InternalError` (500); a `TransportFailure` (503: the engine or its store failed) keeps its module,
 * method and the first line of its description (at most 200 characters), and loses its cause. The cause is logged
 * at the error level under the same id, so an operator finds it from what the caller reports.
 */
import { TransportFailure } from "@parley/core/ParleyError"
import { Incidents, InternalError } from "@parley/core/ProtocolApi"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

const newIncident = () => `inc_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`

/** Logs a failure's cause under a fresh incident id; gives the id. */
export const report = (cause: Cause.Cause<unknown>) =>
  Effect.sync(newIncident).pipe(
    Effect.tap((incident) => Effect.logError("the server failed", cause).pipe(Effect.annotateLogs({ incident })))
  )

const shortLine = (text: string | undefined) => {
  const line = (text ?? "").split("\n")[0]?.trim() ?? ""
  return line.length <= 200 ? line : `${line.slice(0, 199)}…`
}

/** The failure as the caller sees it: where, the first line of what, and the incident. */
const scrubbed = (failure: TransportFailure, incident: string) =>
  new TransportFailure({
    module: failure.module,
    method: failure.method,
    description: `${shortLine(failure.description)} (incident ${incident})`
  })

/** The `Incidents` middleware of `ProtocolApi`. */
export const layer: Layer.Layer<Incidents> = Layer.succeed(
  Incidents,
  (httpEffect) =>
    httpEffect.pipe(
      // The handlers' errors are opaque here (`unhandled`): a `TransportFailure` is told by its class.
      Effect.catchIf(
        (error) => (error as unknown) instanceof TransportFailure,
        (error) => {
          const failure = error as unknown as TransportFailure
          return Effect.flatMap(report(Cause.fail(failure)), (incident) => Effect.fail(scrubbed(failure, incident)))
        }
      ),
      Effect.catchDefect((defect) =>
        Effect.flatMap(report(Cause.die(defect)), (incident) => Effect.fail(new InternalError({ incident })))
      )
    )
)
