import { assert, describe, it } from "@effect/vitest"
import { Answer, CallbackHandler } from "@parley/core"
import type { Callback } from "@parley/core"
import { Context, Effect, Layer, Ref } from "effect"
import * as F from "./fixtures.js"

const keep = new Answer.KeepCallbackOpen()

/** A handler record whose every handler counts its calls and returns `decision` (plain). */
const counting = (count: Ref.Ref<number>, decision: {
  readonly approval?: Answer.AllowApproval | Answer.DenyApproval | Answer.KeepCallbackOpen
  readonly clientTool?: Answer.ClientToolResult | Answer.KeepCallbackOpen
  readonly signIn?: Answer.SignInAnswer | Answer.KeepCallbackOpen
}): CallbackHandler.Handlers => ({
  approval: () => Ref.update(count, (n) => n + 1).pipe(Effect.as(decision.approval ?? keep)),
  clientTool: () => Ref.update(count, (n) => n + 1).pipe(Effect.as(decision.clientTool ?? keep)),
  signIn: () => Ref.update(count, (n) => n + 1).pipe(Effect.as(decision.signIn ?? keep))
})

const handle = (service: CallbackHandler.Service, callback: Callback.Callback, fromWaitingTurn = true) =>
  service.handle(callback, F.context(fromWaitingTurn))

describe("CallbackHandler.make", () => {
  it.effect("the first handler that does not keep the callback open answers; later ones are not called", () =>
    Effect.gen(function*() {
      const first = yield* Ref.make(0)
      const second = yield* Ref.make(0)
      const third = yield* Ref.make(0)
      const service = CallbackHandler.make(
        counting(first, {}),
        counting(second, { approval: F.denyWithReason }),
        counting(third, { approval: F.allow, clientTool: F.toolSuccess })
      )

      const approval = yield* handle(service, F.approval)
      assert.strictEqual(approval, F.denyWithReason)
      assert.deepStrictEqual([yield* Ref.get(first), yield* Ref.get(second), yield* Ref.get(third)], [1, 1, 0])

      // the second keeps client tool calls open: the third answers
      const clientTool = yield* handle(service, F.clientToolCall)
      assert.strictEqual(clientTool, F.toolSuccess)
      assert.deepStrictEqual([yield* Ref.get(first), yield* Ref.get(second), yield* Ref.get(third)], [2, 2, 1])

      // nobody answers sign-ins: every handler was asked, the callback stays open
      const signIn = yield* handle(service, F.signIn)
      assert.instanceOf(signIn, Answer.KeepCallbackOpen)
      assert.deepStrictEqual([yield* Ref.get(first), yield* Ref.get(second), yield* Ref.get(third)], [3, 3, 2])
    }))

  it.effect("a handler may return a plain value or an Effect", () =>
    Effect.gen(function*() {
      const plain = CallbackHandler.make({ approval: () => F.allow, clientTool: () => F.toolFailure })
      assert.strictEqual(yield* handle(plain, F.approval), F.allow)
      assert.strictEqual(yield* handle(plain, F.clientToolCall), F.toolFailure)

      const effectful = CallbackHandler.make({
        approval: () => Effect.succeed(F.deny),
        clientTool: () => Effect.sync(() => F.toolSuccess).pipe(Effect.tap(() => Effect.yieldNow)),
        signIn: () => Effect.succeed(F.signInAnswer)
      })
      assert.strictEqual(yield* handle(effectful, F.approval), F.deny)
      assert.strictEqual(yield* handle(effectful, F.clientToolCall), F.toolSuccess)
      assert.strictEqual(yield* handle(effectful, F.signIn), F.signInAnswer)

      const plainKeep = CallbackHandler.make({ approval: () => keep }, { approval: () => F.allow })
      assert.strictEqual(yield* handle(plainKeep, F.approval), F.allow)
      const effectKeep = CallbackHandler.make({ approval: () => Effect.succeed(keep) }, { approval: () => F.deny })
      assert.strictEqual(yield* handle(effectKeep, F.approval), F.deny)
    }))

  it.effect("an Effect handler's effect runs on each callback, not when the handler is built", () =>
    Effect.gen(function*() {
      const count = yield* Ref.make(0)
      const service = CallbackHandler.make({
        clientTool: () =>
          Ref.updateAndGet(count, (n) => n + 1).pipe(Effect.map((n) => Answer.ClientToolResult.success(n)))
      })
      assert.strictEqual(yield* Ref.get(count), 0)
      const first = yield* handle(service, F.clientToolCall)
      const second = yield* handle(service, F.clientToolCall)
      assert.deepStrictEqual([first, second], [Answer.ClientToolResult.success(1), Answer.ClientToolResult.success(2)])
    }))

  it.effect("a missing kind keeps the callback open", () =>
    Effect.gen(function*() {
      const approvalsOnly = CallbackHandler.make({ approval: () => F.allow })
      assert.instanceOf(yield* handle(approvalsOnly, F.clientToolCall), Answer.KeepCallbackOpen)
      assert.instanceOf(yield* handle(approvalsOnly, F.signIn), Answer.KeepCallbackOpen)
      assert.strictEqual(yield* handle(approvalsOnly, F.approval), F.allow)

      const none = CallbackHandler.make({})
      for (const callback of F.callbacks) {
        assert.instanceOf(yield* handle(none, callback), Answer.KeepCallbackOpen)
        assert.instanceOf(yield* handle(CallbackHandler.keepOpen, callback), Answer.KeepCallbackOpen)
        assert.instanceOf(yield* handle(CallbackHandler.make(), callback), Answer.KeepCallbackOpen)
      }
    }))

  it.effect("services and handler records compose together", () =>
    Effect.gen(function*() {
      const count = yield* Ref.make(0)
      const inner = CallbackHandler.make(counting(count, {}), CallbackHandler.allowReadOnly)
      const service = CallbackHandler.make(inner, { approval: () => F.deny })
      assert.strictEqual(yield* handle(service, F.approval), F.deny)
      assert.instanceOf(yield* handle(service, F.approvalFor(F.readOnlyTool)), Answer.AllowApproval)
      assert.strictEqual(yield* Ref.get(count), 2)
    }))

  it.effect("of returns the handler record it is given", () =>
    Effect.sync(() => {
      const handlers = { approval: () => F.allow }
      assert.strictEqual(CallbackHandler.of(handlers), handlers)
    }))
})

describe("CallbackHandler context", () => {
  it.effect("the approval handler receives the asking session and turn, the waiting turn and the request", () =>
    Effect.gen(function*() {
      const seen: Array<[CallbackHandler.ApprovalContext, Callback.ApprovalRequest]> = []
      const service = CallbackHandler.make({
        approval: (context, request) => {
          seen.push([context, request])
          return F.allow
        }
      })
      yield* handle(service, F.approvalByDefault, false)
      assert.strictEqual(seen.length, 1)
      const [context, request] = seen[0]!
      assert.deepStrictEqual(context.session, { id: F.childSessionId, turnId: F.childTurnId })
      assert.deepStrictEqual(context.waiting, { sessionId: F.sessionId, turnId: F.turnId })
      assert.isFalse(context.fromWaitingTurn)
      assert.strictEqual(context.callback, F.approvalByDefault)
      assert.strictEqual(request, F.approvalByDefault.request)
      assert.strictEqual(request.tool.id, "connector.gmail.latest_email")
    }))

  it.effect("client tool and sign-in handlers receive the callback and the context", () =>
    Effect.gen(function*() {
      const seen: Array<[Callback.Callback, CallbackHandler.Context]> = []
      const service = CallbackHandler.make({
        clientTool: (callback, context) => {
          seen.push([callback, context])
          return keep
        },
        signIn: (callback, context) => {
          seen.push([callback, context])
          return keep
        }
      })
      const context = F.context()
      yield* service.handle(F.clientToolCall, context)
      yield* service.handle(F.signIn, context)
      assert.strictEqual(seen.length, 2)
      assert.strictEqual(seen[0]![0], F.clientToolCall)
      assert.strictEqual(seen[0]![1], context)
      assert.strictEqual(seen[1]![0], F.signIn)
      assert.strictEqual(seen[1]![1], context)
    }))
})

describe("CallbackHandler layers", () => {
  it.effect("layer with a list provides the composed handler", () =>
    Effect.gen(function*() {
      const handler = yield* CallbackHandler.CallbackHandler
      assert.instanceOf(yield* handle(handler, F.approvalFor(F.readOnlyTool)), Answer.AllowApproval)
      assert.strictEqual(yield* handle(handler, F.approval), F.deny)
      assert.instanceOf(yield* handle(handler, F.clientToolCall), Answer.KeepCallbackOpen)
      const signIn = yield* handle(handler, F.signIn)
      assert.deepStrictEqual(signIn, new Answer.SignInAnswer({ connected: [], denied: ["req_gmail", "req_drive"] }))
    }).pipe(
      Effect.provide(
        CallbackHandler.layer([
          CallbackHandler.allowReadOnly,
          CallbackHandler.denyAllSignIns,
          { approval: () => F.deny }
        ])
      )
    ))

  it.effect("layer with one record or one service", () =>
    Effect.gen(function*() {
      const fromRecord = yield* CallbackHandler.CallbackHandler.pipe(
        Effect.provide(CallbackHandler.layer({ clientTool: () => F.toolSuccess }))
      )
      assert.strictEqual(yield* handle(fromRecord, F.clientToolCall), F.toolSuccess)
      assert.instanceOf(yield* handle(fromRecord, F.approval), Answer.KeepCallbackOpen)

      const service = CallbackHandler.make({ approval: () => F.allow })
      const fromService = yield* CallbackHandler.CallbackHandler.pipe(Effect.provide(CallbackHandler.layer(service)))
      assert.strictEqual(yield* handle(fromService, F.approval), F.allow)
    }))

  it.effect("layerEffect builds handlers that use a service", () =>
    Effect.gen(function*() {
      class Location extends Context.Service<Location, { readonly city: string }>()("test/Location") {}
      const handlers = CallbackHandler.layerEffect(
        Effect.map(Effect.service(Location), (location) => [
          CallbackHandler.denyAllSignIns,
          { clientTool: () => Answer.ClientToolResult.success({ city: location.city }) }
        ])
      ).pipe(Layer.provide(Layer.succeed(Location, { city: "Lyon" })))

      const handler = yield* CallbackHandler.CallbackHandler.pipe(Effect.provide(handlers))
      const result = yield* handle(handler, F.clientToolCall)
      assert.deepStrictEqual(result, Answer.ClientToolResult.success({ city: "Lyon" }))
      assert.instanceOf(yield* handle(handler, F.signIn), Answer.SignInAnswer)
      assert.instanceOf(yield* handle(handler, F.approval), Answer.KeepCallbackOpen)

      const single = CallbackHandler.layerEffect(Effect.succeed({ approval: () => F.allow }))
      const singleHandler = yield* CallbackHandler.CallbackHandler.pipe(Effect.provide(single))
      assert.strictEqual(yield* handle(singleHandler, F.approval), F.allow)
    }))

  it.effect("layerEffect fails with the error of the effect that builds it", () =>
    Effect.gen(function*() {
      const failing = CallbackHandler.layerEffect(Effect.fail("no location service"))
      const error = yield* CallbackHandler.CallbackHandler.pipe(Effect.provide(failing), Effect.flip)
      assert.strictEqual(error, "no location service")
    }))
})

describe("CallbackHandler ready-made handlers", () => {
  it.effect("allowReadOnly allows read-only tools and keeps the others open", () =>
    Effect.gen(function*() {
      const service = CallbackHandler.make(CallbackHandler.allowReadOnly)
      assert.instanceOf(yield* handle(service, F.approvalFor(F.readOnlyTool)), Answer.AllowApproval)
      assert.instanceOf(yield* handle(service, F.approvalFor(F.writeTool)), Answer.KeepCallbackOpen)
      // no annotations: readOnlyHint defaults to false
      assert.instanceOf(yield* handle(service, F.approvalFor(F.locationTool)), Answer.KeepCallbackOpen)
      assert.instanceOf(yield* handle(service, F.clientToolCall), Answer.KeepCallbackOpen)
      assert.instanceOf(yield* handle(service, F.signIn), Answer.KeepCallbackOpen)
    }))

  it.effect("allowTools allows the listed stable ids only (never display names)", () =>
    Effect.gen(function*() {
      const service = CallbackHandler.make(CallbackHandler.allowTools(["client.send_email", "client.other"]))
      assert.instanceOf(yield* handle(service, F.approvalFor(F.writeTool)), Answer.AllowApproval)
      assert.instanceOf(yield* handle(service, F.approvalFor(F.readOnlyTool)), Answer.KeepCallbackOpen)

      const byName = CallbackHandler.make(CallbackHandler.allowTools(["send_email"]))
      assert.instanceOf(yield* handle(byName, F.approvalFor(F.writeTool)), Answer.KeepCallbackOpen)

      const none = CallbackHandler.make(CallbackHandler.allowTools([]))
      assert.instanceOf(yield* handle(none, F.approvalFor(F.writeTool)), Answer.KeepCallbackOpen)
    }))

  it.effect("denyAllSignIns names every request as denied, and that answer validates", () =>
    Effect.gen(function*() {
      const service = CallbackHandler.make(CallbackHandler.denyAllSignIns)
      const answer = yield* handle(service, F.signIn)
      assert.instanceOf(answer, Answer.SignInAnswer)
      if (answer._tag !== "SignInAnswer") return assert.fail("expected a SignInAnswer")
      assert.deepStrictEqual(answer.connected, [])
      assert.deepStrictEqual(answer.denied, F.signIn.requests.map((request) => request.id))
      assert.strictEqual(yield* Answer.validate(F.signIn, answer), answer)
      assert.instanceOf(yield* handle(service, F.approval), Answer.KeepCallbackOpen)
      assert.instanceOf(yield* handle(service, F.clientToolCall), Answer.KeepCallbackOpen)
    }))

  it.effect("scopedToWaitingTurn keeps other turns' callbacks open without calling the inner handler", () =>
    Effect.gen(function*() {
      const count = yield* Ref.make(0)
      const scoped = CallbackHandler.scopedToWaitingTurn(counting(count, { approval: F.allow, signIn: F.signInAnswer }))

      for (const callback of F.callbacks) {
        assert.instanceOf(yield* handle(scoped, callback, false), Answer.KeepCallbackOpen)
      }
      assert.strictEqual(yield* Ref.get(count), 0)

      assert.strictEqual(yield* handle(scoped, F.approval, true), F.allow)
      assert.strictEqual(yield* handle(scoped, F.signIn, true), F.signInAnswer)
      assert.strictEqual(yield* Ref.get(count), 2)

      // wraps a service too, and composes: the fallback answers what the scoped handler leaves open
      const fromService = CallbackHandler.make(
        CallbackHandler.scopedToWaitingTurn(CallbackHandler.make({ approval: () => F.allow })),
        { approval: () => F.deny }
      )
      assert.strictEqual(yield* handle(fromService, F.approval, true), F.allow)
      assert.strictEqual(yield* handle(fromService, F.approval, false), F.deny)
    }))
})
