import { assert, describe, it } from "@effect/vitest"
import { Answer, CallbackHandler } from "@parley/core"
import { ClientTool, Tool, ToolAnnotations } from "@parley/tools"
import { Effect, Schema } from "effect"
import { approval, clientToolCall, context } from "./fixtures.js"

const getLocation = Tool.make(
  "get_location",
  {
    description: "The user's current location.",
    parameters: {
      precision: Schema.Literals(["city", "street"]).pipe(Schema.withDecodingDefault(Effect.succeed("city" as const)))
    },
    success: Schema.Struct({ city: Schema.String, country: Schema.String }),
    annotations: ToolAnnotations.readOnly
  },
  ({ precision }) =>
    precision === "city"
      ? Effect.succeed({ city: "Lyon", country: "France" })
      : Effect.fail("street precision is not available")
)

const askPerson = Tool.make(
  "ask_person",
  { description: "Ask the user a question.", parameters: { question: Schema.String }, success: Schema.String },
  () => new Answer.KeepCallbackOpen()
)

describe("Tool", () => {
  it.effect("is a client tool: same id, same callbacks, same spec", () =>
    Effect.gen(function*() {
      assert.strictEqual(getLocation.id, "client.get_location")
      assert.isTrue(ClientTool.isClientTool(getLocation))
      assert.isTrue(getLocation.called(yield* clientToolCall("client.get_location", {})))
      const spec = yield* ClientTool.toSpec(getLocation)
      assert.strictEqual(spec.id, "client.get_location")
      assert.isTrue(spec.annotations.readOnlyHint)
      assert.deepStrictEqual(spec.parameters.properties, { precision: { type: "string", enum: ["city", "street"] } })
    }))

  it.effect("Tool.layer answers its calls by running the handler while a run waits", () =>
    Effect.gen(function*() {
      const handler = yield* CallbackHandler.CallbackHandler
      const ctx = yield* context
      const city = yield* handler.handle(yield* clientToolCall("client.get_location", {}), ctx)
      const street = yield* handler.handle(yield* clientToolCall("client.get_location", { precision: "street" }), ctx)
      const bad = yield* handler.handle(yield* clientToolCall("client.get_location", { precision: 3 }), ctx)
      const person = yield* handler.handle(yield* clientToolCall("client.ask_person", { question: "Lyon?" }), ctx)
      const other = yield* handler.handle(yield* clientToolCall("client.get_weather", {}), ctx)
      const approvalDecision = yield* handler.handle(yield* approval("client.get_location"), ctx)

      assert.deepStrictEqual(city, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
      assert.deepStrictEqual(street, Answer.ClientToolResult.failure("street precision is not available"))
      assert.deepStrictEqual(
        bad,
        Answer.ClientToolResult.failure(
          "Invalid arguments for get_location: precision: Expected \"city\" | \"street\", actual 3"
        )
      )
      assert.deepStrictEqual(person, new Answer.KeepCallbackOpen())
      assert.deepStrictEqual(other, new Answer.KeepCallbackOpen())
      assert.deepStrictEqual(approvalDecision, new Answer.KeepCallbackOpen())
    }).pipe(Effect.provide(Tool.layer(getLocation, askPerson))))

  it.effect("Tool.handlers composes with other handlers in CallbackHandler.layer", () =>
    Effect.gen(function*() {
      const handler = yield* CallbackHandler.CallbackHandler
      const ctx = yield* context
      const city = yield* handler.handle(yield* clientToolCall("client.get_location", {}), ctx)
      const allowed = yield* handler.handle(yield* approval("client.get_location", getLocation.annotations), ctx)
      assert.deepStrictEqual(city, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
      assert.deepStrictEqual(allowed, new Answer.AllowApproval())
    }).pipe(Effect.provide(CallbackHandler.layer([Tool.handlers(getLocation), CallbackHandler.allowReadOnly]))))

  it.effect("a tool's handler can also answer by id through run", () =>
    Effect.gen(function*() {
      const call = yield* clientToolCall("client.get_location", { precision: "city" })
      const result = yield* getLocation.run(call, getLocation.handler)
      assert.deepStrictEqual(result, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
    }))
})
