import { assert, describe, it, vi } from "@effect/vitest"
import type { Callback, Ids, TurnState } from "@parley/core"
import { Agent, Answer, CallbackHandler, Session, Turn } from "@parley/core"
import { McpConnector } from "@parley/mcp"
import { Connectors, Credentials, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Duration, Effect, Layer, Logger, Option, Redacted, References } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { within } from "./fixtures.js"
import { type OAuthMail, serveOAuthMail } from "./servers/oauth.js"

// MCP authorization end to end: the server answers a call with 401; the sign-in callback carries the authorization
// URL; the test follows it as a browser would (fetch, the redirect not followed), takes the code, answers with it; the
// runtime exchanges it (PKCE), keeps the tokens encrypted, and the same call runs.

const key = Redacted.make("the test PARLEY_SECRET_KEY, thirty-two characters or more")
const redirectUrl = "http://127.0.0.1:1/parley/callback"

const assistant = Agent.make({
  name: "mail-assistant",
  model: "scripted",
  instructions: "Send what the user asks.",
  connectors: ["mail"]
})

/** Each user message is sent as an email (one call per turn), then the model reports the result. */
const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  const asked = call.prompt.content.filter((message) => message.role === "user").length
  if (results.length < asked) {
    return ScriptedModel.toolCall("mail_send_message", {
      to: "camille@example.com",
      body: ScriptedModel.lastUserText(call)
    })
  }
  const last = results[results.length - 1]
  return ScriptedModel.text(`${last.isFailure ? "failed" : "ok"}: ${JSON.stringify(last.result)}`)
}

const runtime = (
  url: string,
  store: Layer.Layer<SessionStore.SessionStore, unknown>,
  model: ScriptedModel.Service,
  idleTimeToLive?: Duration.Input
) =>
  LocalTransport.layer.pipe(
    Layer.provide([
      Connectors.layerEffect([McpConnector.http({ source: "mail", url, oauth: { redirectUrl, idleTimeToLive } })]).pipe(
        Layer.provide(Credentials.layer(key))
      ),
      RuntimeTools.layerEmpty,
      Models.layer(Models.single(model.languageModel))
    ]),
    Layer.provideMerge(store)
  )

/** Opens the sign-in's authorization URL as a browser would, and returns the code and state of the redirect. */
const authorize = (request: Callback.SignInRequest) =>
  Effect.promise(async () => {
    assert.isDefined(request.authorizationUrl)
    const response = await fetch(request.authorizationUrl!, { redirect: "manual" })
    assert.strictEqual(response.status, 302)
    const location = new URL(response.headers.get("location")!)
    assert.strictEqual(`${location.origin}${location.pathname}`, redirectUrl)
    return { code: location.searchParams.get("code")!, state: location.searchParams.get("state") ?? undefined }
  })

/** The one sign-in a blocked turn waits on. */
const signInOf = (state: TurnState.TurnState) => {
  assert.strictEqual(state._tag, "Blocked")
  const callback = state._tag === "Blocked" ? state.callbacks[0] : undefined
  assert.strictEqual(callback?._tag, "OpenSignIn")
  return callback as Callback.OpenSignIn
}

/** Runs `input` in the session; a sign-in is answered with the code its URL gives. */
const send = (session: Session.Session, input: string) =>
  Effect.gen(function*() {
    let state = yield* within("the turn", Session.run(session, input))
    const signIns: Array<Callback.OpenSignIn> = []
    const codes: Array<string> = []
    while (state._tag === "Blocked") {
      const callback = signInOf(state)
      signIns.push(callback)
      const { code, state: oauthState } = yield* authorize(callback.requests[0])
      codes.push(code)
      const turn = yield* Session.turn(session, state.turnId)
      yield* Turn.answer(
        turn,
        callback.id,
        new Answer.SignInAnswer({ connected: [new Answer.SignInGrant({ id: "mail", code, state: oauthState })] })
      )
      state = yield* within("the resumed turn", Turn.result(turn, { after: state }))
    }
    return { state, signIns, codes }
  })

const text = (state: TurnState.TurnState) => (state._tag === "Completed" ? state.text : state._tag)

const withServer = <A, E, R>(body: (mail: OAuthMail, model: ScriptedModel.Service) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const mail = yield* serveOAuthMail
    const model = yield* ScriptedModel.fromFunction(brain)
    return yield* body(mail, model)
  }))

describe("MCP OAuth sign-in", () => {
  it.live("a 401 opens a sign-in whose URL works; the code's answer resumes the same call; tokens stay encrypted", () =>
    withServer((mail, model) => {
      const lines: Array<string> = []
      const consoles = (["log", "info", "warn", "error", "debug"] as const).map((level) =>
        vi.spyOn(console, level).mockImplementation((...args: Array<unknown>) =>
          void lines.push(args.map(String).join(" "))
        )
      )
      return Effect.gen(function*() {
        const store = yield* SessionStore.services
        const session = yield* Agent.startSession(assistant)
        const { codes, signIns, state } = yield* send(session, "See you at 8.")
        assert.strictEqual(text(state), "ok: \"Sent to camille@example.com.\"")
        assert.strictEqual(signIns.length, 1)
        const request = signIns[0].requests[0]
        assert.strictEqual(request.source, "mail")
        assert.deepStrictEqual(request.scopes, ["mail.read", "mail.send"])
        assert.include(request.authorizationUrl!, "code_challenge_method=S256")
        // The call ran once, after the sign-in.
        assert.deepStrictEqual(mail.seen.sent, [{ to: "camille@example.com", body: "See you at 8." }])
        // Encrypted at rest: the raw row holds no token; the log holds neither the code nor a token.
        const treeId = session.id as Ids.SessionId
        const raw = Option.getOrThrow(yield* store.secrets.load(treeId, "connector:mail"))
        const tokens = mail.accessTokens()
        assert.strictEqual(tokens.length, 1)
        assert.notInclude(raw, tokens[0])
        assert.notInclude(raw, "refresh_token")
        const log = JSON.stringify(yield* store.eventLog.read(treeId, 0))
        assert.notInclude(log, codes[0])
        assert.notInclude(log, tokens[0])
        assert.include(log, "SignInAnswer")
        // Never logged: every log line of the run (all levels) and the console, without the code or a token.
        const logged = lines.join("\n")
        for (const secret of [codes[0], tokens[0]]) assert.notInclude(logged, secret)
      }).pipe(
        Effect.provide(runtime(mail.url, SessionStore.layerMemory, model)),
        Effect.provide(Logger.layer([Logger.make(({ message }) => lines.push(String(message)))])),
        Effect.provideService(References.MinimumLogLevel, "All"),
        Effect.ensuring(Effect.sync(() => consoles.forEach((spy) => spy.mockRestore())))
      )
    }))

  it.live("by handler: a signIn handler follows the URL itself and answers with the code while the run waits", () =>
    withServer((mail, model) =>
      Effect.gen(function*() {
        const signInByBrowser = CallbackHandler.layer({
          signIn: (callback) =>
            Effect.map(authorize(callback.requests[0]), ({ code, state }) =>
              new Answer.SignInAnswer({
                connected: [new Answer.SignInGrant({ id: callback.requests[0].id, code, state })]
              }))
        })
        const state = yield* within("Agent.run", Agent.run(assistant, "By handler.")).pipe(
          Effect.provide(signInByBrowser)
        )
        assert.strictEqual(text(state), "ok: \"Sent to camille@example.com.\"")
        assert.deepStrictEqual(mail.seen.sent.map((sent) => sent.body), ["By handler."])
      }).pipe(Effect.provide(runtime(mail.url, SessionStore.layerMemory, model)))
    ))

  it.live("an expired access token is refreshed without a callback", () =>
    withServer((mail, model) =>
      Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant)
        yield* send(session, "First.")
        mail.expireAccessTokens()
        const { signIns, state } = yield* send(session, "Second.")
        assert.strictEqual(text(state), "ok: \"Sent to camille@example.com.\"")
        assert.strictEqual(signIns.length, 0)
        assert.strictEqual(mail.counts.refreshes, 1)
        assert.deepStrictEqual(mail.seen.sent.map((sent) => sent.body), ["First.", "Second."])
      }).pipe(Effect.provide(runtime(mail.url, SessionStore.layerMemory, model)))
    ))

  it.live("a refresh that fails opens a new sign-in (must reconnect)", () =>
    withServer((mail, model) =>
      Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant)
        yield* send(session, "First.")
        mail.expireAccessTokens()
        mail.revokeRefreshTokens()
        const { signIns, state } = yield* send(session, "Second.")
        assert.strictEqual(signIns.length, 1)
        assert.strictEqual(text(state), "ok: \"Sent to camille@example.com.\"")
        assert.strictEqual(mail.counts.codes, 2)
        assert.deepStrictEqual(mail.seen.sent.map((sent) => sent.body), ["First.", "Second."])
      }).pipe(Effect.provide(runtime(mail.url, SessionStore.layerMemory, model)))
    ))

  it.live("a tree's connection closes once idle; its next call connects again with the kept tokens, no sign-in", () =>
    withServer((mail, model) =>
      Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant)
        yield* send(session, "First.")
        const opened = mail.initializes()
        yield* send(session, "Second, at once.")
        assert.strictEqual(mail.initializes(), opened, "the tree's connection is reused while in use")
        yield* Effect.sleep(Duration.millis(2500))
        const { signIns, state } = yield* send(session, "Third, after a pause.")
        assert.strictEqual(mail.initializes(), opened + 1, "a new connection after the idle one closed")
        assert.strictEqual(signIns.length, 0)
        assert.strictEqual(text(state), "ok: \"Sent to camille@example.com.\"")
        assert.deepStrictEqual(mail.seen.sent.map((sent) => sent.body), [
          "First.",
          "Second, at once.",
          "Third, after a pause."
        ])
      }).pipe(Effect.provide(runtime(mail.url, SessionStore.layerMemory, model, "1 second")))
    ))

  it.live("a code the authorization server refuses fails the answer with AnswerMismatch; the sign-in stays open", () =>
    withServer((mail, model) =>
      Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant)
        const blocked = yield* within("the turn", Session.run(session, "Hello."))
        const callback = signInOf(blocked)
        const turn = yield* Session.turn(session, blocked.turnId)
        const error = yield* Effect.flip(Turn.answer(
          turn,
          callback.id,
          new Answer.SignInAnswer({ connected: [new Answer.SignInGrant({ id: "mail", code: "not-a-code" })] })
        ))
        assert.strictEqual(error._tag, "AnswerMismatch")
        assert.include(error.message, "the sign-in to mail could not be completed")
        const open = yield* Turn.openCallbacks(turn)
        assert.deepStrictEqual(open.map((cb) => cb.id), [callback.id])
        assert.deepStrictEqual(mail.seen.sent, [])
      }).pipe(Effect.provide(runtime(mail.url, SessionStore.layerMemory, model)))
    ))

  it.live(
    "a restart keeps the connection: a new runtime on the same SQLite file calls without a sign-in",
    () =>
      withServer((mail, model) =>
        Effect.gen(function*() {
          const folder = fs.mkdtempSync(path.join(os.tmpdir(), "parley-mcp-oauth-"))
          yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true })))
          const store = () => SqlStore.layerSqlite({ filename: path.join(folder, "parley.db") })
          const sessionId = yield* Effect.scoped(
            Effect.gen(function*() {
              const session = yield* Agent.startSession(assistant)
              const { signIns } = yield* send(session, "Before the restart.")
              assert.strictEqual(signIns.length, 1)
              return session.id
            }).pipe(Effect.provide(runtime(mail.url, store(), model)))
          )
          const { signIns, state } = yield* Effect.scoped(
            Effect.flatMap(Agent.session(assistant, sessionId), (session) => send(session, "After the restart.")).pipe(
              Effect.provide(runtime(mail.url, store(), model))
            )
          )
          assert.strictEqual(signIns.length, 0)
          assert.strictEqual(text(state), "ok: \"Sent to camille@example.com.\"")
          assert.deepStrictEqual(mail.seen.sent.map((sent) => sent.body), ["Before the restart.", "After the restart."])
        })
      ),
    30_000
  )
})
