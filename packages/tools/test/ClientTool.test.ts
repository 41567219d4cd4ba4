import { assert, describe, it } from "@effect/vitest"
import { Answer, type Callback, CallbackHandler, ParleyError } from "@parley/core"
import { ClientTool } from "@parley/tools"
import { Cause, Context, Effect, Exit, Schema } from "effect"
import { approval, clientToolCall, context, getLocation, readLocation, sendEmail, signIn } from "./fixtures.js"

const keep = new Answer.KeepCallbackOpen()

class Gps extends Context.Service<Gps, { readonly city: string }>()("Gps") {}

describe("ClientTool", () => {
  describe("make", () => {
    it.effect("carries the name, the stable id, the schemas and the annotations", () =>
      Effect.sync(() => {
        assert.strictEqual(getLocation.name, "get_location")
        assert.strictEqual(getLocation.id, "client.get_location")
        assert.strictEqual(getLocation.description, "The user's current location.")
        assert.isTrue(getLocation.annotations.readOnlyHint)
        assert.isFalse(getLocation.annotations.destructiveHint)
        assert.isTrue(sendEmail.annotations.destructiveHint)
        assert.isTrue(sendEmail.annotations.openWorldHint)
        assert.strictEqual(getLocation.failure, Schema.String)
        assert.isTrue(ClientTool.isClientTool(getLocation))
        assert.isFalse(ClientTool.isClientTool({ name: "get_location" }))
        assert.deepStrictEqual(Schema.decodeUnknownSync(getLocation.parameters)({}), { precision: "city" })
      }))
  })

  describe("called", () => {
    it.effect("is true for a call of the tool and false for other tools and other callbacks", () =>
      Effect.gen(function*() {
        const call = yield* clientToolCall("client.get_location", {})
        assert.isTrue(getLocation.called(call))
        assert.isTrue(ClientTool.called(getLocation, call))
        assert.isFalse(sendEmail.called(call))
        assert.isFalse(getLocation.called(yield* clientToolCall("client.get_weather", {})))
        assert.isFalse(getLocation.called(yield* approval("client.get_location")))
      }))
  })

  describe("run", () => {
    it.effect("decodes the arguments, runs the function and encodes its result", () =>
      Effect.gen(function*() {
        const call = yield* clientToolCall("client.get_location", { precision: "city" })
        const seen: Array<unknown> = []
        const result = yield* getLocation.run(call, (params) => {
          seen.push(params)
          return readLocation(params)
        })
        assert.deepStrictEqual(seen, [{ precision: "city" }])
        assert.deepStrictEqual(result, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
        assert.instanceOf(result, Answer.ClientToolResult)
        if (result._tag !== "ClientToolResult") return assert.fail("expected a result")
        const decoded = yield* Schema.decodeUnknownEffect(getLocation.success)(result.result)
        assert.deepStrictEqual(decoded, { city: "Lyon", country: "France" })
      }))

    it.effect("applies the parameters' defaults", () =>
      Effect.gen(function*() {
        const call = yield* clientToolCall("client.get_location", {})
        let precision: string | undefined
        const result = yield* ClientTool.run(getLocation, call, (params) => {
          precision = params.precision
          return { city: "Lyon", country: "France" }
        })
        assert.strictEqual(precision, "city")
        assert.deepStrictEqual(result, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
      }))

    it.effect("encodes the success value with the success schema", () =>
      Effect.gen(function*() {
        const call = yield* clientToolCall("client.send_email", { to: "ada@example.com", subject: "Hello" })
        const result = yield* sendEmail.run(call, () => Effect.succeed({ sentAt: new Date("2025-01-01T10:00:00Z") }))
        assert.deepStrictEqual(result, Answer.ClientToolResult.success({ sentAt: "2025-01-01T10:00:00.000Z" }))
      }))

    it.effect("turns arguments that do not decode into a tool error naming the problem, without running the function", () =>
      Effect.gen(function*() {
        let runs = 0
        const location = () => {
          runs++
          return { city: "Lyon", country: "France" }
        }
        const email = () => {
          runs++
          return { sentAt: new Date(0) }
        }
        const planet = yield* getLocation.run(
          yield* clientToolCall("client.get_location", { precision: "planet" }),
          location
        )
        const missing = yield* Effect.exit(
          sendEmail.run(yield* clientToolCall("client.send_email", { to: "ada@example.com" }), email)
        )
        const notAnObject = yield* getLocation.run(yield* clientToolCall("client.get_location", "Lyon"), location)

        assert.strictEqual(runs, 0)
        assert.isTrue(Exit.isSuccess(missing))
        if (!Exit.isSuccess(missing)) return
        for (const result of [planet, missing.value, notAnObject]) {
          assert.instanceOf(result, Answer.ClientToolResult)
        }
        assert.deepStrictEqual(
          planet,
          Answer.ClientToolResult.failure(
            "Invalid arguments for get_location: precision: Expected \"city\" | \"street\", actual \"planet\""
          )
        )
        assert.deepStrictEqual(
          missing.value,
          Answer.ClientToolResult.failure("Invalid arguments for send_email: subject: is missing")
        )
        if (notAnObject._tag !== "ClientToolResult") return assert.fail("expected a result")
        assert.isTrue(notAnObject.isFailure)
        assert.match(String(notAnObject.result), /^Invalid arguments for get_location: Expected .*, actual "Lyon"$/)
      }))

    it.effect("reports every argument problem at once", () =>
      Effect.gen(function*() {
        const result = yield* sendEmail.run(
          yield* clientToolCall("client.send_email", { to: 42 }),
          () => ({ sentAt: new Date(0) })
        )
        assert.deepStrictEqual(
          result,
          Answer.ClientToolResult.failure(
            "Invalid arguments for send_email: to: Expected string, actual 42; subject: is missing"
          )
        )
      }))

    it.effect("encodes a typed failure with the failure schema", () =>
      Effect.gen(function*() {
        const email = yield* sendEmail.run(
          yield* clientToolCall("client.send_email", { to: "ada@example.com", subject: "Hello" }),
          () => Effect.fail({ code: "offline" as const })
        )
        assert.deepStrictEqual(email, Answer.ClientToolResult.failure({ code: "offline" }))

        const location = yield* getLocation.run(
          yield* clientToolCall("client.get_location", { precision: "street" }),
          ({ precision }) =>
            precision === "street" ? Effect.fail("street precision is not available") : readLocation({ precision })
        )
        assert.deepStrictEqual(location, Answer.ClientToolResult.failure("street precision is not available"))
      }))

    it.effect("returns KeepCallbackOpen as is", () =>
      Effect.gen(function*() {
        const call = yield* clientToolCall("client.get_location", {})
        const plain = yield* getLocation.run(call, () => new Answer.KeepCallbackOpen())
        const effect = yield* getLocation.run(call, () => Effect.succeed(new Answer.KeepCallbackOpen()))
        assert.deepStrictEqual(plain, keep)
        assert.deepStrictEqual(effect, keep)
      }))

    it.effect("takes any callback of a turn and fails with NotThisTool, without running the function, when it is not a call of the tool", () =>
      Effect.gen(function*() {
        let runs = 0
        const locate = () => {
          runs++
          return { city: "Lyon", country: "France" }
        }
        const others = [
          yield* clientToolCall("client.get_weather", { city: "Lyon" }),
          yield* approval("client.get_location"),
          yield* signIn("gmail")
        ]
        const errors = []
        for (const callback of others) errors.push(yield* Effect.flip(getLocation.run(callback, locate)))
        assert.strictEqual(runs, 0)
        assert.deepStrictEqual(errors.map((error) => [error._tag, error.toolId, error.callback]), [
          ["NotThisTool", "client.get_location", others[0]],
          ["NotThisTool", "client.get_location", others[1]],
          ["NotThisTool", "client.get_location", others[2]]
        ])
        assert.deepStrictEqual(errors.map((error) => error.message), [
          "callback cb_1 is a call of client.get_weather, not a call of client.get_location",
          "callback cb_2 is an approval, not a call of client.get_location",
          "callback cb_3 is a sign-in, not a call of client.get_location"
        ])
        const standalone = yield* Effect.flip(ClientTool.run(getLocation, others[1], locate))
        assert.strictEqual(standalone._tag, "NotThisTool")
      }))

    it.effect("gives an answer Turn.answer takes as it is when the function never keeps the callback open", () =>
      Effect.gen(function*() {
        const callback: Callback.Callback = yield* clientToolCall("client.get_location", {})
        // typed: `Answer.Answer`, no `KeepCallbackOpen` to rule out, for any callback of the turn
        const answer: Answer.Answer = yield* getLocation.run(callback, readLocation)
        assert.deepStrictEqual(answer, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
        const maybe = (keepIt: boolean) => keepIt ? new Answer.KeepCallbackOpen() : readLocation({ precision: "city" })
        const kept: Answer.ClientToolResult | Answer.KeepCallbackOpen = yield* getLocation.run(
          callback,
          () => maybe(true)
        )
        assert.deepStrictEqual(kept, keep)
      }))

    it.effect("turns a value the success schema cannot encode into a tool error, not a defect", () =>
      Effect.gen(function*() {
        const strict = ClientTool.make("get_city", {
          description: "The user's city.",
          success: Schema.Struct({ city: Schema.NonEmptyString })
        })
        const exit = yield* Effect.exit(strict.run(yield* clientToolCall("client.get_city", {}), () => ({ city: "" })))
        assert.deepStrictEqual(
          exit,
          Exit.succeed(
            Answer.ClientToolResult.failure("get_city failed: it produced a result that does not match its schema")
          )
        )
      }))

    it.effect("keeps a throw in the function a defect", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(
          getLocation.run(yield* clientToolCall("client.get_location", {}), () => {
            throw new Error("no GPS")
          })
        )
        assert.isTrue(
          Exit.isFailure(exit) && exit.cause.reasons.length === 1 && Cause.isDieReason(exit.cause.reasons[0]!)
        )
      }))
  })

  describe("answers", () => {
    it.effect("answers a call with the entry for its tool and keeps calls of unknown tools open", () =>
      Effect.gen(function*() {
        const handler = ClientTool.answers(
          sendEmail.answer(() => Effect.fail({ code: "rejected" as const })),
          getLocation.answer(readLocation)
        )
        const location = yield* handler(yield* clientToolCall("client.get_location", {}))
        const email = yield* handler(yield* clientToolCall("client.send_email", { to: "a", subject: "b" }))
        const unknown = yield* handler(yield* clientToolCall("client.get_weather", {}))
        assert.deepStrictEqual(location, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
        assert.deepStrictEqual(email, Answer.ClientToolResult.failure({ code: "rejected" }))
        assert.deepStrictEqual(unknown, keep)
      }))

    it.effect("passes a call an entry keeps open to the next entry for the same tool", () =>
      Effect.gen(function*() {
        const handler = ClientTool.answers(
          getLocation.answer(({ precision }) =>
            precision === "street" ? new Answer.KeepCallbackOpen() : readLocation({ precision })
          ),
          getLocation.answer(() => ({ city: "Lyon 2e", country: "France" }))
        )
        const city = yield* handler(yield* clientToolCall("client.get_location", { precision: "city" }))
        const street = yield* handler(yield* clientToolCall("client.get_location", { precision: "street" }))
        assert.deepStrictEqual(city, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
        assert.deepStrictEqual(street, Answer.ClientToolResult.success({ city: "Lyon 2e", country: "France" }))
      }))

    it.effect("is the clientTool handler of CallbackHandler.layer", () =>
      Effect.gen(function*() {
        const handler = yield* CallbackHandler.CallbackHandler
        const ctx = yield* context
        const location = yield* handler.handle(yield* clientToolCall("client.get_location", { precision: "city" }), ctx)
        const other = yield* handler.handle(yield* clientToolCall("client.send_email", { to: "a", subject: "b" }), ctx)
        const approvalDecision = yield* handler.handle(yield* approval("client.get_location"), ctx)
        assert.deepStrictEqual(location, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
        assert.deepStrictEqual(other, keep)
        assert.deepStrictEqual(approvalDecision, keep)
      }).pipe(
        Effect.provide(CallbackHandler.layer({ clientTool: ClientTool.answers(getLocation.answer(readLocation)) }))
      ))
  })

  describe("toSpec", () => {
    it.effect("exports the tool with JSON Schemas a model accepts", () =>
      Effect.gen(function*() {
        const spec = yield* ClientTool.toSpec(getLocation)
        assert.strictEqual(spec.id, "client.get_location")
        assert.strictEqual(spec.name, "get_location")
        assert.strictEqual(spec.description, "The user's current location.")
        assert.deepStrictEqual(spec.parameters, {
          type: "object",
          required: [],
          properties: {
            precision: { type: "string", enum: ["city", "street"], description: "How precise the location must be" }
          },
          additionalProperties: false
        })
        assert.deepStrictEqual(spec.success, {
          type: "object",
          required: ["city", "country"],
          properties: { city: { type: "string" }, country: { type: "string" } },
          additionalProperties: false
        })
        assert.deepStrictEqual(spec.failure, { type: "string" })
        assert.isTrue(spec.annotations.readOnlyHint)
        assert.isFalse(spec.annotations.destructiveHint)
      }))

    it.effect("describes the encoded side and inlines a class at the top level", () =>
      Effect.gen(function*() {
        class Recipient
          extends Schema.Class<Recipient>("Recipient")({ to: Schema.String, at: Schema.DateFromString })
        {}
        const tool = ClientTool.make("schedule", {
          description: "Schedule.",
          parameters: Recipient,
          success: Schema.Void
        })
        const spec = yield* ClientTool.toSpec(tool)
        assert.isUndefined(spec.parameters.$ref)
        assert.strictEqual(spec.parameters.type, "object")
        assert.deepStrictEqual(spec.parameters.required, ["to", "at"])
        assert.deepStrictEqual(spec.parameters.properties, {
          to: { type: "string" },
          at: { type: "string" }
        })
        const email = yield* ClientTool.toSpec(sendEmail)
        assert.deepStrictEqual(email.failure, {
          type: "object",
          required: ["code"],
          properties: { code: { type: "string", enum: ["rejected", "offline"] } },
          additionalProperties: false
        })
        assert.isTrue(email.annotations.destructiveHint)
      }))

    it.effect("describes what the arguments decode from: a number is a JSON number, an optional key is left out", () =>
      Effect.gen(function*() {
        const tool = ClientTool.make("thermostat", {
          description: "Set the temperature.",
          parameters: { celsius: Schema.Number, room: Schema.optional(Schema.String) },
          success: Schema.Struct({ celsius: Schema.Number })
        })
        const spec = yield* ClientTool.toSpec(tool)
        assert.deepStrictEqual(spec.parameters, {
          type: "object",
          properties: { celsius: { type: "number" }, room: { type: "string" } },
          required: ["celsius"],
          additionalProperties: false
        })
        assert.deepStrictEqual(spec.success, {
          type: "object",
          properties: { celsius: { type: "number" } },
          required: ["celsius"],
          additionalProperties: false
        })
        const call = (args: unknown) =>
          Effect.flatMap(
            clientToolCall("client.thermostat", args),
            (cb) => tool.run(cb, ({ celsius }) => ({ celsius }))
          )
        assert.deepStrictEqual(yield* call({ celsius: 21 }), Answer.ClientToolResult.success({ celsius: 21 }))
        for (const args of [{ celsius: "Infinity" }, { celsius: 21, room: null }]) {
          const answer = yield* call(args)
          assert.isTrue(answer._tag === "ClientToolResult" && answer.isFailure, JSON.stringify(args))
        }
      }))

    it.effect("gives a tool without parameters an empty object schema", () =>
      Effect.gen(function*() {
        const tool = ClientTool.make("now", { description: "The time.", success: Schema.String })
        const spec = yield* ClientTool.toSpec(tool)
        assert.deepStrictEqual(spec.parameters, {
          type: "object",
          properties: {},
          required: [],
          additionalProperties: false
        })
        const result = yield* tool.run(yield* clientToolCall("client.now", {}), () => "noon")
        assert.deepStrictEqual(result, Answer.ClientToolResult.success("noon"))
      }))

    it.effect("fails with InvalidId for a name that does not make a tool id", () =>
      Effect.gen(function*() {
        const tool = ClientTool.make("get location", { description: "Bad name.", success: Schema.String })
        const fromSpec = yield* Effect.flip(ClientTool.toSpec(tool))
        const fromValidate = yield* Effect.flip(ClientTool.validate(tool))
        assert.instanceOf(fromSpec, ParleyError.InvalidId)
        assert.strictEqual(fromSpec.kind, "toolId")
        assert.strictEqual(fromSpec.value, "client.get location")
        assert.strictEqual(fromSpec.method, "toSpec")
        assert.strictEqual(fromValidate.method, "validate")
        assert.strictEqual(yield* ClientTool.validate(getLocation), getLocation)
        for (const name of [".x", "a.b", "", "-a"]) {
          const error = yield* Effect.flip(
            ClientTool.validate(ClientTool.make(name, { description: "", success: Schema.String }))
          )
          assert.strictEqual(error._tag, "InvalidId")
        }
      }))
  })

  describe("decodeResult", () => {
    it.effect("accepts results that decode with the tool's schemas", () =>
      Effect.gen(function*() {
        const good = Answer.ClientToolResult.success({ city: "Lyon", country: "France" })
        assert.strictEqual(yield* ClientTool.decodeResult(getLocation, good), good)
        const failure = Answer.ClientToolResult.failure({ code: "offline" })
        assert.strictEqual(yield* ClientTool.decodeResult(sendEmail, failure), failure)
        const message = Answer.ClientToolResult.failure("the device is offline")
        assert.strictEqual(yield* ClientTool.decodeResult(sendEmail, message), message)
        const sent = Answer.ClientToolResult.success({ sentAt: "2025-01-01T10:00:00.000Z" })
        assert.strictEqual(yield* ClientTool.decodeResult(sendEmail, sent), sent)
      }))

    it.effect("rejects a result that does not match with AnswerMismatch", () =>
      Effect.gen(function*() {
        const missing = yield* Effect.flip(
          ClientTool.decodeResult(getLocation, Answer.ClientToolResult.success({ city: "Lyon" }), "cb_7")
        )
        assert.instanceOf(missing, ParleyError.AnswerMismatch)
        assert.strictEqual(missing.callbackId, "cb_7")
        assert.strictEqual(
          missing.reason,
          "the success result does not match the success schema of client.get_location: country: is missing"
        )
        const decodedNotEncoded = yield* Effect.flip(
          ClientTool.decodeResult(sendEmail, Answer.ClientToolResult.success({ sentAt: new Date(0) }))
        )
        assert.strictEqual(decodedNotEncoded._tag, "AnswerMismatch")
        const badFailure = yield* Effect.flip(
          ClientTool.decodeResult(sendEmail, Answer.ClientToolResult.failure({ code: "lost" }))
        )
        assert.match(
          badFailure.reason,
          /^the failure result does not match the failure schema of client.send_email: code:/
        )
        const extra = yield* Effect.flip(
          ClientTool.decodeResult(
            getLocation,
            Answer.ClientToolResult.success({ city: "Lyon", country: "France", street: "Rue de la République" })
          )
        )
        assert.match(extra.reason, /street/)
      }))

    it.effect("accepts what run produces", () =>
      Effect.gen(function*() {
        const result = yield* sendEmail.run(
          yield* clientToolCall("client.send_email", { to: "a", subject: "b" }),
          () => ({ sentAt: new Date(0) })
        )
        if (result._tag !== "ClientToolResult") return assert.fail("expected a result")
        assert.strictEqual(yield* ClientTool.decodeResult(sendEmail, result), result)
      }))
  })

  describe("typing", () => {
    it.effect("gives the function the decoded parameters and checks what it returns", () =>
      Effect.gen(function*() {
        // @ts-expect-error country is missing from the success value
        getLocation.answer(() => ({ city: "Lyon" }))
        // @ts-expect-error precision is "city" | "street"
        getLocation.answer(({ precision }) => precision === "planet" ? keep : readLocation({ precision }))
        // @ts-expect-error the failure of get_location is a string
        getLocation.answer(() => Effect.fail(42))
        // @ts-expect-error the failure of send_email is { code: "rejected" | "offline" }
        sendEmail.answer(() => Effect.fail({ code: "lost" as const }))
        // @ts-expect-error a handler needs no services
        getLocation.answer(() => Effect.map(Gps, (gps) => ({ city: gps.city, country: "France" })))

        // run, used by id, may need services: they show in its requirements
        const call = yield* clientToolCall("client.get_location", {})
        const withGps = getLocation.run(call, () => Effect.map(Gps, (gps) => ({ city: gps.city, country: "France" })))
        const result = yield* Effect.provideService(withGps, Gps, { city: "Lyon" })
        assert.deepStrictEqual(result, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
      }))
  })
})
