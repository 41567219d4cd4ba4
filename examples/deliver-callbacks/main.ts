/**
 * Deliver callbacks (docs/guides/deliver-callbacks.md), offline: a Parley server with a webhook endpoint, and the
 * receiver behind it — a small HTTP server this program starts on 127.0.0.1, as a chat bot or a ticketing hook would
 * run. A turn asks for an approval; the server POSTs `callback.opened` to the receiver, signed; the receiver checks the
 * signature (`Webhook.verify`), prints the approval a person would see, and answers it through the API (its own key);
 * the turn goes on and ends, and the receiver hears `callback.resolved` and `turn.ended`. A forged request is
 * refused. Then the server's delivery log.
 *
 * Run it: `npx tsx --conditions=@parley/source examples/deliver-callbacks/main.ts`
 */
import { Agent, Principal, Session, Turn, Webhook } from "@parley/core"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { HttpTransport } from "@parley/transport-http"
import { Console, Deferred, Effect, Layer, Queue, Redacted, Schedule, Schema } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describeState, isEntry } from "../shared/entry.js"

const apiKey = "dev-key-deliver-callbacks"
const secret = "whsec_deliver_callbacks_example"
const linksSecret = "links_deliver_callbacks_example"

/** A tool the server runs; the policy asks before each call. */
const sendEmail = Tool.make("send_email", {
  description: "Sends an email.",
  parameters: { to: Schema.String, subject: Schema.String },
  success: Schema.Struct({ sent: Schema.Boolean })
}, () => Effect.succeed({ sent: true }))

const mailer = Agent.make({
  name: "mailer",
  model: "mistral-large-latest",
  instructions: "Send what you are asked to send.",
  tools: [sendEmail.spec],
  permissionMode: "ask"
})

/** Ids, ports and link tokens change with every run: the guide prints them without their random part. */
const masked = (line: string) =>
  line.replace(/\b(ses|turn|cb|lnk)_[0-9a-f]+/g, "$1_…").replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:…").replace(
    /\/l\/lnk_…\.[A-Za-z0-9_-]+/g,
    "/l/lnk_….…"
  )

/** A free port of 127.0.0.1 (the server's: its answer links name it, so it is chosen before the server starts). */
const freePort = Effect.callback<number>((resume) => {
  const probe = createServer()
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as AddressInfo
    probe.close(() => resume(Effect.succeed(port)))
  })
})

/** A page of an answer link: its status and its title. */
const visit = (url: string, method: "GET" | "POST") =>
  Effect.promise(async () => {
    const response = await fetch(url, { method })
    const title = /<title>(.*?)<\/title>/.exec(await response.text())?.[1] ?? ""
    return `HTTP ${response.status} "${title}"`
  })

/** One request the receiver got, and how to answer it (an HTTP status). */
interface Request {
  readonly signature: string | undefined
  readonly body: string
  readonly respond: (status: number) => void
}

/**
 * The receiver: a Node HTTP server on 127.0.0.1 (a free port) that hands each POST to the program, in order, and
 * answers with the status the program gives it (2xx: delivered; anything else: the server tries again later).
 */
const startReceiver = Effect.gen(function*() {
  const requests = yield* Queue.unbounded<Request>()
  const server = createServer((request, response) => {
    let body = ""
    request.setEncoding("utf8")
    request.on("data", (chunk: string) => void (body += chunk))
    request.on("end", () =>
      Queue.offerUnsafe(requests, {
        signature: request.headers["parley-signature"] as string | undefined,
        body,
        respond: (status) => {
          response.statusCode = status
          response.end()
        }
      }))
  })
  const port = yield* Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
    }),
    () =>
      Effect.sync(() => {
        server.close()
        server.closeAllConnections()
      })
  )
  return { url: `http://127.0.0.1:${port}/parley`, requests }
})

/**
 * What the receiver does with each request: refuse one whose signature does not check out (401), print what it
 * reports, answer an approval (allow), and tell the program when the turn ended.
 */
const receive = (request: Request, ended: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const checked = yield* Effect.result(
      Webhook.verify({ secrets: secret, header: request.signature, body: request.body })
    )
    if (checked._tag === "Failure") {
      yield* Console.log(`receiver: refused a request (${checked.failure.reason})`)
      return request.respond(401)
    }
    const payload = yield* Webhook.decodePayload(request.body)
    const { event } = payload
    yield* Console.log(masked(`receiver: ${payload.type} ${payload.id}, signature ok`))
    if (event._tag === "CallbackOpened" && event.callback._tag === "OpenApproval") {
      const { arguments: args, tool } = event.callback.request
      yield* Console.log(`  approval: ${tool.id} ${JSON.stringify(args)}`)
      yield* Console.log(masked(`  asked by session ${event.sessionId}, turn ${event.turnId}`))
      for (const link of payload.links ?? []) yield* Console.log(masked(`  ${link.answer}: ${link.url}`))
      // The person follows the allow link: its page asks to confirm (a GET answers nothing), the page's button answers.
      const allow = (payload.links ?? []).find((link) => link.answer === "allow")
      // (The webhook is answered first: the receiver takes its next request once the person is done.)
      request.respond(204)
      if (allow !== undefined) {
        yield* Console.log(`  the person opens the allow link: ${yield* visit(allow.url, "GET")}`)
        yield* Console.log(`  and confirms it: ${yield* visit(allow.url, "POST")}`)
      }
      return
    }
    if (event._tag === "CallbackResolved") {
      const by = event.answeredBy === undefined ? "nobody recorded" : Principal.describe(event.answeredBy)
      yield* Console.log(masked(`  ${event.resolution} by ${by}`))
    }
    if (event._tag === "TurnEnded") {
      yield* Console.log(`  the turn ended: ${describeState(event.state)}`)
      yield* Deferred.succeed(ended, undefined)
    }
    request.respond(204)
  })

export const program = Effect.gen(function*() {
  yield* Console.log("=== deliver-callbacks ===")
  const receiver = yield* startReceiver
  const port = yield* freePort
  const url = `http://127.0.0.1:${port}`
  // The server: the mailer agent, its send_email tool, one tenant's key and its webhook endpoint.
  const model = yield* ScriptedModel.make([
    ScriptedModel.toolCall("send_email", { to: "team@example.com", subject: "Lunch at noon" }),
    ScriptedModel.text("Sent.")
  ])
  yield* Layer.build(ParleyServer.layerSqlite({
    // A database of its own, in memory (npm run demo runs it beside the other guides' programs).
    filename: ":memory:",
    port,
    log: false,
    keys: [{ key: Redacted.make(apiKey), tenant: "acme" }],
    agents: [mailer.spec],
    tools: [sendEmail],
    models: Models.single(model.languageModel),
    webhooks: {
      endpoints: [{ id: "approvals-bot", tenant: "acme", url: receiver.url, secret: Redacted.make(secret) }]
    },
    // Answer links: the webhook of an approval carries one URL per answer, signed, single-use, no key needed.
    links: { secret: Redacted.make(linksSecret), baseUrl: url }
  }))
  const api = yield* Layer.build(HttpTransport.layer({ url, apiKey: Redacted.make(apiKey) }))

  // The receiver runs beside the program, one request at a time (the server sends a tree's events in order).
  const ended = yield* Deferred.make<void>()
  yield* Effect.forkScoped(
    Effect.forever(Effect.flatMap(Queue.take(receiver.requests), (request) => receive(request, ended))).pipe(
      Effect.provide(api)
    )
  )

  // The program starts a turn and waits: the person answers through the link the receiver showed.
  const state = yield* Effect.gen(function*() {
    const session = yield* Agent.startSession(mailer)
    const turn = yield* Session.sendMessage(session, "Tell the team lunch is at noon.")
    yield* Deferred.await(ended)
    return yield* Turn.result(turn)
  }).pipe(Effect.provide(api))
  yield* Console.log(`program: ${describeState(state)}`)

  // A request that does not come from the server: the receiver refuses it.
  const forged = yield* Effect.promise(() =>
    fetch(receiver.url, {
      method: "POST",
      headers: { "content-type": "application/json", "parley-signature": `t=${Math.floor(Date.now() / 1000)},v1=00` },
      body: "{}"
    })
  )
  yield* Console.log(`forged request: HTTP ${forged.status}`)

  // The server's delivery log (what `parley webhooks deliveries` prints).
  // (The last delivery is recorded once the receiver's 204 reached the server: the log is read until it shows it.)
  const readLog = Effect.promise(() =>
    fetch(`${url}/webhooks/deliveries`, { headers: { authorization: `Bearer ${apiKey}` } }).then((response) =>
      response.json() as Promise<ReadonlyArray<Webhook.Delivery>>
    )
  )
  const log = yield* readLog.pipe(
    Effect.repeat({
      until: (log) => log.length === 3 && log.every((delivery) => delivery.deliveredAt !== undefined),
      schedule: Schedule.spaced("50 millis")
    })
  )
  for (const delivery of [...log].reverse()) {
    yield* Console.log(masked(
      `delivery: ${delivery.type} ${delivery.eventId} to ${delivery.endpoint}: ${
        delivery.deliveredAt === undefined ? "pending" : `delivered (HTTP ${delivery.lastStatus})`
      } after ${delivery.attempts} attempt(s)`
    ))
  }
}).pipe(Effect.scoped)

if (isEntry(import.meta.url)) Effect.runPromise(program)
