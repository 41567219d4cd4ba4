/**
 * Answer links (issue 37, point 2) against a real server on 127.0.0.1 (SQLite file), followed with plain `fetch` as a
 * browser does: no key. The locator agent asks an approval for its `get_location` client tool, then the tool's
 * result; the reader agent a sign-in to the demo `gmail` connector.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Permissions } from "@parley/core"
import type { Webhook } from "@parley/core"
import type { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { Effect, Logger, References } from "effect"
import { brain, getLocation, locator } from "./fixtures/agents.js"
import * as App from "./fixtures/appServer.js"
import { request } from "./fixtures/http.js"
import { startReceiver } from "./fixtures/receiver.js"
import { keys, pgDatabase, pgSchema, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const secret = "test-links-secret-0123456789abcdef0123"

/** The locator's brain, and the reader's (told apart by the tools they are offered). */
const brains = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  if (!call.tools.some((tool) => tool.name === "gmail_latest_email")) return brain(call)
  const results = ScriptedModel.toolResults(call)
  return results.length === 0
    ? ScriptedModel.toolCall("gmail_latest_email", {})
    : ScriptedModel.text(results[0].isFailure ? "I could not read your inbox." : "Your latest email is about lunch.")
}

/** The locator whose approvals only alice@example.com may answer. */
const guarded = Agent.make({
  name: "guarded",
  model: "scripted",
  instructions: "Say where the user is.",
  tools: [getLocation],
  permissions: new Permissions.PermissionPolicy({
    default: "allow",
    rules: [
      new Permissions.PermissionRule({
        tools: ["client.get_location"],
        decision: "ask",
        approvers: new Permissions.Approvers({ roles: [], principals: ["alice@example.com"] })
      })
    ]
  })
})

const server = (links: boolean = true, log = false, more: Partial<ParleyServer.Options> = {}) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brains)
    return yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
      runtimeTools: [],
      server: {
        agents: [locator.spec, App.reader.spec, guarded.spec],
        log,
        ...(links ? { links: { secret } } : {}),
        ...more
      }
    })
  })

interface Blocked {
  readonly sessionId: string
  readonly turnId: string
  readonly callbackId: string
}

/** A turn of `agent` waiting on its first callback. */
const blocked = (base: string, agent: string, key: string = keys.alice) =>
  Effect.gen(function*() {
    const created = yield* request(`${base}/sessions`, { method: "POST", key, body: { name: agent } })
    const sessionId = (created.json as { sessionId: string }).sessionId
    const sent = yield* request(`${base}/sessions/${sessionId}/turns`, { method: "POST", key, body: { input: "Go" } })
    const turnId = (sent.json as { turnId: string }).turnId
    return yield* waitBlocked(base, { sessionId, turnId }, key)
  })

const waitBlocked = (base: string, turn: { sessionId: string; turnId: string }, key: string = keys.alice) =>
  Effect.gen(function*() {
    const waited = yield* request(`${base}/sessions/${turn.sessionId}/turns/${turn.turnId}/wait?timeout=20`, { key })
    const state = (waited.json as { state?: { _tag: string; callbacks: Array<{ id: string }> } }).state
    assert.strictEqual(state?._tag, "Blocked", waited.text)
    return { ...turn, callbackId: state!.callbacks[0].id } satisfies Blocked
  })

interface Made {
  readonly id: string
  readonly answer: string
  readonly url: string
  readonly expiresAt: string
  readonly person?: string
}

const makeLinks = (base: string, at: Blocked, body: Record<string, unknown> = {}, key: string = keys.alice) =>
  request(`${base}/sessions/${at.sessionId}/turns/${at.turnId}/callbacks/${at.callbackId}/links`, {
    method: "POST",
    key,
    body
  })

const linksOf = (reply: { readonly status: number; readonly text: string; readonly json: unknown }) => {
  assert.strictEqual(reply.status, 201, reply.text)
  return (reply.json as { links: Array<Made> }).links
}

/** Follows a link as a browser does: GET shows the page, POST (the page's form) confirms. */
const open = (url: string) => request(url)
const confirm = (url: string, fields: Record<string, string | ReadonlyArray<string>> = {}) => {
  const form = new URLSearchParams()
  for (const [name, value] of Object.entries(fields)) {
    for (const one of typeof value === "string" ? [value] : value) form.append(name, one)
  }
  return request(url, {
    method: "POST",
    raw: form.toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" }
  })
}

const resolutions = (base: string, sessionId: string) =>
  Effect.map(
    request(`${base}/sessions/${sessionId}/events?live=false`, { key: keys.alice }),
    (reply) =>
      reply.text.split("\n").filter((line) => line.startsWith("data: ")).map((line) =>
        JSON.parse(line.slice(6)) as { _tag: string; answer?: { _tag: string }; answeredBy?: Record<string, unknown> }
      ).filter((event) => event._tag === "CallbackResolved")
  )

describe("answer links", () => {
  it.live(
    "an approval: opening answers nothing; Allow answers once, as its person; the Deny link then says who answered",
    () =>
      Effect.gen(function*() {
        const base = yield* server()
        const at = yield* blocked(base, "locator")
        const links = linksOf(yield* makeLinks(base, at, { person: "alice@example.com" }))
        assert.deepStrictEqual(links.map((link) => link.answer), ["allow", "deny"])
        assert.match(links[0].url, new RegExp(`^${base}/l/lnk_[0-9a-f]{24}\\.[A-Za-z0-9_-]{43}$`))
        assert.strictEqual(links[0].person, "alice@example.com")
        const [allow, deny] = links

        const page = yield* open(allow.url)
        assert.strictEqual(page.status, 200)
        assert.match(page.headers["content-type"], /^text\/html/)
        assert.include(page.text, "Allow get_location?")
        assert.include(page.text, "<form method=\"post\">")
        assert.strictEqual(page.headers["referrer-policy"], "no-referrer")
        assert.strictEqual(page.headers["cache-control"], "no-store")
        assert.match(page.headers["content-security-policy"], /frame-ancestors 'none'/)
        yield* open(allow.url)
        assert.deepStrictEqual(yield* resolutions(base, at.sessionId), [], "a GET never answers")

        const done = yield* confirm(allow.url)
        assert.strictEqual(done.status, 200, done.text)
        assert.include(done.text, "Your answer was sent")
        const resolved = yield* resolutions(base, at.sessionId)
        assert.strictEqual(resolved.length, 1)
        assert.strictEqual(resolved[0].answer?._tag, "AllowApproval")
        assert.deepStrictEqual(resolved[0].answeredBy, {
          _tag: "Link",
          tenant: "alice",
          linkId: allow.id,
          person: "alice@example.com"
        })

        const other = yield* open(deny.url)
        assert.strictEqual(other.status, 409)
        assert.include(other.text, "answered by alice@example.com (link " + allow.id + " of alice)")
        const denied = yield* confirm(deny.url)
        assert.strictEqual(denied.status, 409, "the other answer cannot be given any more")
        assert.strictEqual((yield* resolutions(base, at.sessionId)).length, 1)
      }),
    { timeout: 60_000 }
  )

  it.live(
    "used, expired, revoked, tampered, made up: the same 404 page, byte for byte; nothing answered",
    () =>
      Effect.gen(function*() {
        const base = yield* server()
        const unknown = yield* open(`${base}/l/lnk_000000000000000000000000.${"A".repeat(43)}`)
        assert.strictEqual(unknown.status, 404)
        const same = (reply: { readonly status: number; readonly text: string }, what: string) => {
          assert.strictEqual(reply.status, 404, what)
          assert.strictEqual(reply.text, unknown.text, what)
        }
        same(yield* open(`${base}/l/nonsense`), "not a token")

        const at = yield* blocked(base, "locator")
        const [allow, deny] = linksOf(yield* makeLinks(base, at))
        // Tampered: one character of the id, or of the signature.
        const tamperedId = allow.url.replace(/lnk_(.)/, (_, c: string) => `lnk_${c === "0" ? "1" : "0"}`)
        same(yield* open(tamperedId), "a tampered id")
        same(yield* confirm(tamperedId), "a tampered id, confirmed")
        const tamperedSignature = allow.url.slice(0, -1) + (allow.url.endsWith("A") ? "B" : "A")
        same(yield* confirm(tamperedSignature), "a tampered signature")
        // Another server's secret: the same id signed otherwise.
        const foreign = yield* server()
        const foreignAt = yield* blocked(foreign, "locator")
        const [foreignAllow] = linksOf(yield* makeLinks(foreign, foreignAt))
        same(yield* open(foreignAllow.url.replace(foreign, base)), "another server's link")

        // Revoked, by its tenant only: another tenant's revoke is a 404 like an unknown id.
        const bobs = yield* request(`${base}/links/${deny.id}`, { method: "DELETE", key: keys.bob })
        assert.strictEqual(bobs.status, 404, bobs.text)
        assert.strictEqual((bobs.json as { _tag: string })._tag, "LinkNotFound")
        assert.strictEqual((yield* open(deny.url)).status, 200, "another tenant could not revoke it")
        const revoked = yield* request(`${base}/links/${deny.id}`, { method: "DELETE", key: keys.alice })
        assert.strictEqual(revoked.status, 204, revoked.text)
        same(yield* open(deny.url), "a revoked link")
        same(yield* confirm(deny.url), "a revoked link, confirmed")
        assert.deepStrictEqual(yield* resolutions(base, at.sessionId), [], "nothing answered so far")

        // Used: confirmed once, then like an unknown one.
        assert.strictEqual((yield* confirm(allow.url)).status, 200)
        same(yield* open(allow.url), "a used link")
        same(yield* confirm(allow.url), "a used link, confirmed again")
        assert.strictEqual((yield* resolutions(base, at.sessionId)).length, 1)

        // Expired: a link of one second, a second and a half later.
        const tool = yield* waitBlocked(base, at)
        const [short] = linksOf(yield* makeLinks(base, tool, { expiresIn: 1 }))
        assert.strictEqual((yield* open(short.url)).status, 200)
        yield* Effect.sleep("1500 millis")
        same(yield* open(short.url), "an expired link")
        same(yield* confirm(short.url, { result: "{\"city\":\"Lyon\"}" }), "an expired link, confirmed")
        assert.strictEqual((yield* resolutions(base, at.sessionId)).length, 1)
      }),
    { timeout: 90_000 }
  )

  it.live(
    "a webhook's callback.opened carries the callback's links, the same on a redelivery; following one answers",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        const base = yield* server(true, false, {
          webhooks: { endpoints: [{ tenant: "alice", url: receiver.url, secret: "whsec" }], poll: "20 millis" }
        })
        const at = yield* blocked(base, "locator")
        yield* receiver.waitFor(1)
        const [opened] = (yield* receiver.payloads("whsec")) as ReadonlyArray<Webhook.Payload>
        assert.strictEqual(opened.type, "callback.opened")
        const links = opened.links ?? []
        assert.deepStrictEqual(links.map((link) => link.answer), ["allow", "deny"])
        assert.isTrue(links[0].url.startsWith(`${base}/l/lnk_`), links[0].url)

        const again = yield* request(`${base}/webhooks/deliveries/redeliver`, {
          method: "POST",
          key: keys.alice,
          body: { eventId: opened.id }
        })
        assert.strictEqual(again.status, 200, again.text)
        yield* receiver.waitFor(2)
        const redelivered = ((yield* receiver.payloads("whsec")) as ReadonlyArray<Webhook.Payload>)
          .filter((payload) => payload.id === opened.id)
        assert.strictEqual(redelivered.length, 2)
        assert.deepStrictEqual(redelivered[1].links, links, "the same links, made once")

        assert.strictEqual((yield* confirm(links[0].url)).status, 200)
        const resolved = yield* resolutions(base, at.sessionId)
        assert.strictEqual(resolved[0].answeredBy?._tag, "Link")
        assert.strictEqual(resolved[0].answeredBy?.linkId, links[0].id)
        yield* waitBlocked(base, at)
      }),
    { timeout: 60_000 }
  )

  it.live("the request log and the event log name a link's id, never its signature", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ fiber, message }) => {
        const annotations = fiber.getRef(References.CurrentLogAnnotations)
        const fields = Object.entries(annotations).map(([k, v]) => `${k}=${String(v)}`).join(" ")
        lines.push(`${(Array.isArray(message) ? message : [message]).join(" ")} ${fields}`)
      })
      const base = yield* server(true, true).pipe(Effect.provide(Logger.layer([capture])))
      const at = yield* blocked(base, "locator")
      const [allow] = linksOf(yield* makeLinks(base, at, { answers: ["allow"] }))
      yield* open(allow.url)
      yield* confirm(allow.url)
      const signature = allow.url.split(".").at(-1)!
      const requests = lines.filter((line) => line.startsWith("request"))
      assert.isTrue(requests.some((line) => line.includes("route=/l/:link") && line.includes("method=POST")))
      for (const line of lines) assert.notInclude(line, signature)
      const log = yield* request(`${base}/sessions/${at.sessionId}/events?live=false`, { key: keys.alice })
      assert.include(log.text, allow.id)
      assert.notInclude(log.text, signature)
    }), { timeout: 60_000 })

  it.live("racing confirmations of one link answer once (SQLite, and PostgreSQL)", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(brains)
      const pg = yield* startServer(pgDatabase(yield* pgSchema), model.languageModel, {
        runtimeTools: [],
        server: { agents: [locator.spec], log: false, links: { secret } }
      })
      for (const base of [yield* server(), pg]) {
        const at = yield* blocked(base, "locator")
        const [allow] = linksOf(yield* makeLinks(base, at, { answers: ["allow"] }))
        const replies = yield* Effect.all(Array.from({ length: 8 }, () => confirm(allow.url)), { concurrency: 8 })
        assert.strictEqual(
          replies.filter((reply) => reply.status === 200).length,
          1,
          replies.map((r) => r.status).join()
        )
        assert.strictEqual((yield* resolutions(base, at.sessionId)).length, 1)
      }
    }), { timeout: 60_000 })

  it.live(
    "a client tool's form: a result that does not fit is refused and the link stays usable; one that fits ends the turn",
    () =>
      Effect.gen(function*() {
        const base = yield* server()
        const approval = yield* blocked(base, "locator")
        const [allow] = linksOf(yield* makeLinks(base, approval, { answers: ["allow"] }))
        yield* confirm(allow.url)
        const tool = yield* waitBlocked(base, approval)
        const kinds = yield* makeLinks(base, tool, { answers: ["allow"] })
        assert.strictEqual(kinds.status, 409, "a client tool is answered by a form, not allow")
        const [form] = linksOf(yield* makeLinks(base, tool))
        assert.strictEqual(form.answer, "answer")
        const page = yield* open(form.url)
        assert.include(page.text, "Give the result of get_location")
        assert.include(page.text, "<textarea name=\"result\">")

        const notJson = yield* confirm(form.url, { result: "{city" })
        assert.strictEqual(notJson.status, 422)
        assert.include(notJson.text, "the result is not JSON")
        const misfit = yield* confirm(form.url, { result: "{\"town\":1}" })
        assert.strictEqual(misfit.status, 422)
        assert.include(misfit.text, "required property")
        const fits = yield* confirm(form.url, { result: "{\"city\":\"Lyon\"}" })
        assert.strictEqual(fits.status, 200, fits.text)
        const waited = yield* request(
          `${base}/sessions/${tool.sessionId}/turns/${tool.turnId}/wait?timeout=20`,
          { key: keys.alice }
        )
        assert.strictEqual((waited.json as { state: { _tag: string; text: string } }).state.text, "You are in Lyon.")
      }),
    { timeout: 60_000 }
  )

  it.live(
    "an approval only some may answer: a link for someone else is refused (403) and stays open; theirs answers",
    () =>
      Effect.gen(function*() {
        const base = yield* server()
        const at = yield* blocked(base, "guarded")
        const [bobs] = linksOf(yield* makeLinks(base, at, { answers: ["allow"], person: "bob@example.com" }))
        const refused = yield* confirm(bobs.url)
        assert.strictEqual(refused.status, 403, refused.text)
        assert.include(refused.text, "may only be answered by alice@example.com")
        assert.strictEqual((yield* open(bobs.url)).status, 200, "the link is still open")
        assert.deepStrictEqual(yield* resolutions(base, at.sessionId), [])
        const [alices] = linksOf(yield* makeLinks(base, at, { answers: ["allow"], person: "alice@example.com" }))
        assert.strictEqual((yield* confirm(alices.url)).status, 200)
        const resolved = yield* resolutions(base, at.sessionId)
        assert.strictEqual(resolved[0].answeredBy?.person, "alice@example.com")
      }),
    { timeout: 60_000 }
  )

  it.live("a sign-in's form: a checkbox per source, the unticked ones denied", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const at = yield* blocked(base, "reader")
      const [form] = linksOf(yield* makeLinks(base, at))
      const page = yield* open(form.url)
      assert.include(page.text, "sign in to gmail")
      const id = /name="connected" value="([^"]+)"/.exec(page.text)?.[1]
      assert.isDefined(id, page.text)
      assert.strictEqual((yield* confirm(form.url, { connected: [id!] })).status, 200)
      const resolved = yield* resolutions(base, at.sessionId)
      assert.deepStrictEqual(
        (resolved[0].answer as unknown as { connected: Array<unknown> }).connected.length,
        1
      )
    }), { timeout: 60_000 })

  it.live(
    "made only by the callback's tenant, for an open callback, on a server with a secret",
    () =>
      Effect.gen(function*() {
        const base = yield* server()
        const at = yield* blocked(base, "locator")
        const foreign = yield* makeLinks(base, at, {}, keys.bob)
        assert.strictEqual(foreign.status, 404, "another tenant's session is not found")
        assert.strictEqual((foreign.json as { _tag: string })._tag, "SessionNotFound")
        const noKey = yield* request(
          `${base}/sessions/${at.sessionId}/turns/${at.turnId}/callbacks/${at.callbackId}/links`,
          { method: "POST", body: {} }
        )
        assert.strictEqual(noKey.status, 401)
        const wrong = yield* makeLinks(base, at, { expiresIn: 0 })
        assert.strictEqual(wrong.status, 400, wrong.text)
        const closed = yield* makeLinks(base, { ...at, callbackId: "cb_00000000000000000000" })
        assert.strictEqual(closed.status, 409, closed.text)
        assert.strictEqual((closed.json as { _tag: string })._tag, "CallbackNotOpen")

        const off = yield* server(false)
        const offAt = yield* blocked(off, "locator")
        const refused = yield* makeLinks(off, offAt)
        assert.strictEqual(refused.status, 501, refused.text)
        assert.strictEqual((refused.json as { _tag: string })._tag, "AnswerLinksOff")
        const anything = yield* open(`${off}/l/lnk_000000000000000000000000.${"A".repeat(43)}`)
        assert.strictEqual(anything.status, 404)
      }),
    { timeout: 60_000 }
  )
})
