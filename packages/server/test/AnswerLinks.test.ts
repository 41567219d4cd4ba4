/**
 * Answer links against a real server on 127.0.0.1: a link's page shows the approval and answers nothing; confirming
 * it answers, recorded as the link's person; a used, tampered, expired, revoked or foreign link answers exactly like an
 * unknown one; a link of a callback answered otherwise says who answered; a webhook's `callback.opened` carries the
 * links, and following one answers the turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, Session, Transport, Turn, type TurnEvent } from "@parley/core"
import type { AnswerLink, Webhook } from "@parley/core"
import type { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Layer, Logger, Redacted, References, Stream } from "effect"
import { createHmac } from "node:crypto"
import { brain, locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { startReceiver } from "./fixtures/receiver.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const secret = "links-secret-0123456789"

const serve = (server: Partial<ParleyServer.Options> = { links: { secret } }) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    return yield* startServer(sqliteDatabase(yield* Effect.orDie(sqliteFile)), model.languageModel, {
      runtimeTools: [],
      server
    })
  })

const transportOf = (url: string, key: string = keys.alice) =>
  Layer.fresh(HttpTransport.layer({ url, apiKey: Redacted.make(key) }))

/** A session of the locator blocked on its approval. */
const blockedOn = (url: string) =>
  Effect.gen(function*() {
    const session = yield* Agent.startSession(locator)
    const turn = yield* Session.sendMessage(session, "Where am I?")
    const state = yield* Turn.result(turn)
    if (state._tag !== "Blocked") return yield* Effect.die(`not blocked: ${state._tag}`)
    return { turn, state, approval: state.callbacks[0] }
  }).pipe(Effect.provide(transportOf(url)))

const createLinks = (
  url: string,
  path: { sessionId: string; turnId: string; callbackId: string },
  body: unknown,
  key: string = keys.alice
) =>
  request(`${url}/sessions/${path.sessionId}/turns/${path.turnId}/callbacks/${path.callbackId}/links`, {
    method: "POST",
    key,
    body
  })

const follow = (link: string, method: "GET" | "POST" = "GET") =>
  Effect.promise(async () => {
    const response = await fetch(link, { method })
    return { status: response.status, text: await response.text() }
  })

/** A token signed as the server signs, with the test's own claims (what only someone with the secret can make). */
const forge = (url: string, claims: Record<string, unknown>, key = secret) => {
  const body = Buffer.from(JSON.stringify(claims)).toString("base64url")
  const signature = createHmac("sha256", key).update(`parley-link.${body}`).digest().toString("base64url")
  return `${url}/links/${body}.${signature}`
}

const isUnknown = (page: { readonly status: number; readonly text: string }) =>
  page.status === 404 && page.text.includes("This link is not valid")

const resolutionOf = (url: string, sessionId: string, callbackId: string) =>
  Effect.flatMap(Transport.Transport, (transport) =>
    transport.events(sessionId as never, 0).pipe(
      Stream.filter((event): event is TurnEvent.CallbackResolved =>
        event._tag === "CallbackResolved" && event.callbackId === callbackId
      ),
      Stream.runHead
    )).pipe(Effect.provide(transportOf(url)))

describe("answer links", () => {
  it.live(
    "the page shows the approval and answers nothing; confirming answers once, as the link's person",
    () =>
      Effect.gen(function*() {
        const url = yield* serve()
        const { approval, state, turn } = yield* blockedOn(url)
        const path = { sessionId: turn.sessionId, turnId: turn.turnId, callbackId: approval.id }
        const made = yield* createLinks(url, path, { person: "ada@example.com" })
        assert.strictEqual(made.status, 201, made.text)
        const links = made.json as AnswerLink.AnswerLinks
        assert.deepStrictEqual(links.links.map((link) => link.answer), ["allow", "deny"])
        assert.strictEqual(links.person, "ada@example.com")
        const [allow, deny] = links.links.map((link) => link.url)
        assert.isTrue(allow.startsWith(`${url}/links/`))

        // GET: a confirmation page, and the approval is still open.
        const shown = yield* follow(allow)
        assert.strictEqual(shown.status, 200, shown.text)
        assert.include(shown.text, "Allow this call?")
        assert.include(shown.text, "client.get_location")
        assert.include(shown.text, "ada@example.com")
        assert.include(shown.text, `<form method="post">`)
        const open = yield* Effect.flatMap(Transport.Transport, (t) => t.listOpen()).pipe(
          Effect.provide(transportOf(url))
        )
        assert.isTrue(open.some((entry) => entry.callback.id === approval.id))

        // Tampered: another link's claims under this one's signature, a changed signature, another secret.
        const [allowClaims, allowSignature] = allow.slice(`${url}/links/`.length).split(".")
        const [denyClaims] = deny.slice(`${url}/links/`.length).split(".")
        assert.isTrue(isUnknown(yield* follow(`${url}/links/${denyClaims}.${allowSignature}`, "POST")))
        const flipped = allowSignature.slice(0, -2) + (allowSignature.endsWith("AA") ? "BB" : "AA")
        assert.isTrue(isUnknown(yield* follow(`${url}/links/${allowClaims}.${flipped}`, "POST")))
        const claims = JSON.parse(Buffer.from(allowClaims, "base64url").toString("utf8")) as Record<string, unknown>
        assert.isTrue(isUnknown(yield* follow(forge(url, claims, "another-secret"), "POST")))
        // Expired, and another tenant's (both signed with the server's secret).
        assert.isTrue(isUnknown(yield* follow(forge(url, { ...claims, e: Date.now() - 1_000 }), "POST")))
        assert.isTrue(isUnknown(yield* follow(forge(url, { ...claims, t: "bob" }), "POST")))
        assert.isTrue(isUnknown(yield* follow(`${url}/links/nonsense`)))

        // Confirmed: answered, recorded as the link's person.
        const confirmed = yield* follow(allow, "POST")
        assert.strictEqual(confirmed.status, 200, confirmed.text)
        assert.include(confirmed.text, "Allowed")
        const next = yield* Turn.result(turn, { after: state }).pipe(Effect.provide(transportOf(url)))
        assert.strictEqual(next._tag, "Blocked")
        const resolved = yield* resolutionOf(url, turn.sessionId, approval.id)
        assert.isTrue(resolved._tag === "Some")
        if (resolved._tag === "Some") {
          assert.strictEqual(resolved.value.answer?._tag, "AllowApproval")
          assert.deepStrictEqual(resolved.value.answeredBy?._tag, "Link")
          if (resolved.value.answeredBy?._tag === "Link") {
            assert.strictEqual(resolved.value.answeredBy.person, "ada@example.com")
            assert.strictEqual(resolved.value.answeredBy.linkId, links.linkId)
            assert.strictEqual(resolved.value.answeredBy.tenant, "alice")
          }
          // The log keeps the link's id, never the link.
          assert.notInclude(JSON.stringify(resolved.value), allowSignature)
        }

        // Used: again, or its sibling, is an unknown link.
        assert.isTrue(isUnknown(yield* follow(allow, "POST")))
        assert.isTrue(isUnknown(yield* follow(allow)))
        assert.isTrue(isUnknown(yield* follow(deny, "POST")))
      }),
    { timeout: 60_000 }
  )

  it.live(
    "a link of a callback answered otherwise says who answered; a revoked link is unknown, on every server",
    () =>
      Effect.gen(function*() {
        const database = sqliteDatabase(yield* Effect.orDie(sqliteFile))
        const url = yield* startServer(database, (yield* ScriptedModel.fromFunction(brain)).languageModel, {
          runtimeTools: [],
          server: { links: { secret } }
        })
        const first = yield* blockedOn(url)
        const path = { sessionId: first.turn.sessionId, turnId: first.turn.turnId, callbackId: first.approval.id }
        const links = (yield* createLinks(url, path, {})).json as AnswerLink.AnswerLinks
        yield* Turn.answer(first.turn, first.approval.id, new Answer.DenyApproval({}), { label: "grace" }).pipe(
          Effect.provide(transportOf(url))
        )
        const page = yield* follow(links.links[0].url)
        assert.strictEqual(page.status, 410)
        assert.include(page.text, "Already answered")
        assert.include(page.text, "by id (grace)")
        assert.strictEqual((yield* follow(links.links[0].url, "POST")).status, 410)

        const second = yield* blockedOn(url)
        const secondPath = {
          sessionId: second.turn.sessionId,
          turnId: second.turn.turnId,
          callbackId: second.approval.id
        }
        const revocable = (yield* createLinks(url, secondPath, {})).json as AnswerLink.AnswerLinks
        const revoked = yield* request(`${url}/links/${revocable.linkId}/revoke`, { method: "POST", key: keys.alice })
        assert.strictEqual(revoked.status, 204)
        assert.isTrue(isUnknown(yield* follow(revocable.links[0].url)))
        assert.isTrue(isUnknown(yield* follow(revocable.links[0].url, "POST")))
        // Kept in the database: another server on it (a restart, a second instance) knows the link revoked.
        const model = yield* ScriptedModel.fromFunction(brain)
        const other = yield* startServer(database, model.languageModel, {
          runtimeTools: [],
          server: { links: { secret } }
        })
        assert.isTrue(isUnknown(yield* follow(revocable.links[0].url.replace(url, other))))
        assert.strictEqual((yield* follow(links.links[0].url.replace(url, other))).status, 410)
      }),
    { timeout: 60_000 }
  )

  it.live(
    "links are made for the tenant's open approvals only, by a server with a links secret",
    () =>
      Effect.gen(function*() {
        const url = yield* serve()
        const { approval, state, turn } = yield* blockedOn(url)
        const path = { sessionId: turn.sessionId, turnId: turn.turnId, callbackId: approval.id }
        const foreign = yield* createLinks(url, path, {}, keys.bob)
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual((foreign.json as { readonly _tag: string })._tag, "SessionNotFound")
        yield* Turn.answer(turn, approval.id, new Answer.AllowApproval()).pipe(Effect.provide(transportOf(url)))
        const tool = yield* Turn.result(turn, { after: state }).pipe(Effect.provide(transportOf(url)))
        if (tool._tag !== "Blocked") return yield* Effect.die("not blocked")
        const forTool = yield* createLinks(url, { ...path, callbackId: tool.callbacks[0].id }, {})
        assert.strictEqual(forTool.status, 400)
        assert.strictEqual((forTool.json as { readonly _tag: string })._tag, "LinksUnavailable")
        const answered = yield* createLinks(url, path, {})
        assert.strictEqual(answered.status, 409)
        assert.strictEqual((answered.json as { readonly _tag: string })._tag, "CallbackNotOpen")

        const plain = yield* serve({})
        const other = yield* blockedOn(plain)
        const none = yield* createLinks(plain, {
          sessionId: other.turn.sessionId,
          turnId: other.turn.turnId,
          callbackId: other.approval.id
        }, {})
        assert.strictEqual(none.status, 400)
        assert.strictEqual((none.json as { readonly _tag: string })._tag, "LinksUnavailable")
      }),
    { timeout: 60_000 }
  )

  it.live(
    "a webhook's callback.opened carries the approval's links; following one answers the turn",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        // The links' base is the server's public URL: known once it listens, so a first server finds a free port.
        const url = yield* serve({
          links: { secret, baseUrl: "http://links.example" },
          webhooks: { endpoints: [{ tenant: "alice", url: receiver.url, secret: "whsec" }], poll: "20 millis" }
        })
        const { approval, state, turn } = yield* blockedOn(url)
        yield* receiver.waitFor(1)
        const [opened] = yield* receiver.payloads("whsec")
        assert.strictEqual(opened.type, "callback.opened")
        const links = (opened as Webhook.Payload).links ?? []
        assert.deepStrictEqual(links.map((link) => link.answer), ["allow", "deny"])
        assert.isTrue(links[0].url.startsWith("http://links.example/links/"))
        const allow = links[0].url.replace("http://links.example", url)
        const confirmed = yield* follow(allow, "POST")
        assert.strictEqual(confirmed.status, 200, confirmed.text)
        const next = yield* Turn.result(turn, { after: state }).pipe(Effect.provide(transportOf(url)))
        assert.strictEqual(next._tag, "Blocked")
        const resolved = yield* resolutionOf(url, turn.sessionId, approval.id)
        assert.isTrue(resolved._tag === "Some" && resolved.value.answeredBy?._tag === "Link")
      }),
    { timeout: 60_000 }
  )

  it.live("the server's request log never holds a link's token", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ fiber, message }) => {
        const annotations = fiber.getRef(References.CurrentLogAnnotations)
        const fields = Object.entries(annotations).map(([k, v]) => `${k}=${String(v)}`).join(" ")
        lines.push(`${(Array.isArray(message) ? message : [message]).join(" ")} ${fields}`)
      })
      const url = yield* serve({ links: { secret }, log: true }).pipe(Effect.provide(Logger.layer([capture])))
      const { approval, turn } = yield* blockedOn(url)
      const path = { sessionId: turn.sessionId, turnId: turn.turnId, callbackId: approval.id }
      const links = (yield* createLinks(url, path, {})).json as AnswerLink.AnswerLinks
      const token = links.links[0].url.slice(`${url}/links/`.length)
      yield* follow(links.links[0].url)
      yield* follow(links.links[0].url, "POST")
      const requests = lines.filter((line) => line.startsWith("request"))
      assert.isTrue(requests.some((line) => line.includes("route=/links/:token")), requests.join("\n"))
      assert.isFalse(lines.some((line) => line.includes(token.split(".")[1])), "no signature in the logs")
      assert.isFalse(lines.some((line) => line.includes(token.split(".")[0])), "no claims in the logs")
    }), { timeout: 60_000 })
})
