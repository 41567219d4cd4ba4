/**
 * `parley webhooks deliveries [--event <id>] [--json]` and `parley webhooks redeliver <event-id>`: the delivery log of
 * the key's tenant (each delivery of its events to its endpoints: attempts, the last status, the next retry) and the
 * redelivery of a past event by id.
 */
import { RedeliverRequest } from "@parley/core/ProtocolApi"
import * as Webhook from "@parley/core/Webhook"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Connection from "./connection.js"
import { CliError } from "./errors.js"
import * as Format from "./format.js"

const encodeDeliveries = Schema.encodeSync(Schema.Array(Webhook.Delivery))

/** A delivery's state in a word: delivered, retrying (with when), or waiting for the first attempt. */
const stateOf = (delivery: Webhook.Delivery, now: number) => {
  if (delivery.deliveredAt !== undefined) return Format.green("delivered")
  const next = delivery.nextAttemptAt === undefined ? undefined : Date.parse(delivery.nextAttemptAt) - now
  const when = next === undefined ? "" : next <= 0 ? " now" : ` in ${Format.duration(next)}`
  return delivery.attempts === 0 ? `pending${when}` : Format.yellow(`retrying${when}`)
}

export const table = (deliveries: ReadonlyArray<Webhook.Delivery>, now: number): string =>
  Format.table(
    ["EVENT", "TYPE", "ENDPOINT", "ATTEMPTS", "LAST", "STATE"],
    deliveries.map((delivery) => [
      delivery.eventId,
      delivery.type,
      delivery.endpoint,
      String(delivery.attempts),
      delivery.lastError ?? (delivery.lastStatus === undefined ? "-" : String(delivery.lastStatus)),
      stateOf(delivery, now)
    ])
  )

const deliveries = Command.make("deliveries", {
  ...Connection.options,
  event: Flag.String("event").pipe(
    Flag.withMetavar("EVENT-ID"),
    Flag.withDescription("Only the deliveries of this event (<session-id>.<seq>, as the log shows it)."),
    Flag.optional
  ),
  limit: Flag.Int("limit").pipe(
    Flag.withMetavar("N"),
    Flag.withDescription("At most this many deliveries, newest first (default 50)."),
    Flag.withDefault(50)
  ),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print the deliveries as JSON."), Flag.withDefault(false))
}, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    const found = yield* Connection.withApi(connection, (client) =>
      client.webhooks.deliveries({
        query: Option.isSome(given.event)
          ? { eventId: given.event.value, limit: Math.max(1, Math.min(500, given.limit)) }
          : { limit: Math.max(1, Math.min(500, given.limit)) }
      }))
    if (given.json) return yield* Console.log(JSON.stringify(encodeDeliveries(found), null, 2))
    if (found.length === 0) return yield* Console.log("no webhook deliveries")
    yield* Console.log(table(found, Date.now()))
    yield* Console.log(Format.dim("send one again: parley webhooks redeliver <EVENT>"))
  })).pipe(
    Command.withDescription(
      "The webhook delivery log of this key's tenant: each event sent to each endpoint, its attempts, the last " +
        "status or error, and when it is tried next."
    ),
    Command.withShortDescription("The webhook delivery log."),
    Command.withExamples([
      { command: "parley webhooks deliveries" },
      { command: "parley webhooks deliveries --event ses_9f8e.4", description: "one event's deliveries" }
    ])
  )

const redeliver = Command.make("redeliver", {
  ...Connection.options,
  eventId: Argument.String("event-id").pipe(
    Argument.withDescription("The event's id (<session-id>.<seq>, as the delivery log shows it).")
  )
}, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    const reset = yield* Connection.withApi(connection, (client) =>
      client.webhooks.redeliver({ payload: new RedeliverRequest({ eventId: given.eventId }) }).pipe(
        Effect.catchTag("DeliveryNotFound", () =>
          Effect.fail(
            new CliError({
              message: `no webhook delivery of event ${given.eventId} for this key`,
              hint: "`parley webhooks deliveries` lists the events sent",
              exitCode: 1
            })
          ))
      ))
    yield* Console.log(
      `redelivering ${given.eventId} to ${
        reset.map((delivery) => delivery.endpoint).join(", ")
      }`
    )
  })).pipe(
    Command.withDescription("Send a past event's webhooks again (delivered or not), to each endpoint that got it."),
    Command.withExamples([{ command: "parley webhooks redeliver ses_9f8e.4" }])
  )

/**
 * `parley webhooks deliveries | redeliver`.
 */
export const command = Command.make("webhooks").pipe(
  Command.withDescription("Webhooks: the delivery log of this key's tenant, and redelivery of a past event."),
  Command.withExamples([
    { command: "parley webhooks deliveries" },
    { command: "parley webhooks redeliver ses_9f8e.4" }
  ]),
  Command.withSubcommands([deliveries, redeliver])
)
