/**
 * Building a client tool value: its prototype (`pipe`, `called`, `run`, `answer`) and its fields.
 */
import type * as Callback from "@parley/core/Callback"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as ClientTool from "../ClientTool.js"
import type { Any, Handler, Options, ParametersInput, ResultSchema } from "../ClientTool.js"
import * as ToolAnnotations from "../ToolAnnotations.js"
import { specOf } from "./jsonSchema.js"
import * as InternalRun from "./run.js"

export const TypeId: ClientTool.TypeId = Symbol.for("@parley/tools/ClientTool") as ClientTool.TypeId

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  },
  called(this: Any, callback: Callback.Callback) {
    return InternalRun.called(this, callback)
  },
  run(this: Any, callback: Callback.Callback, fn: Handler<object, unknown, unknown, unknown>) {
    return InternalRun.run(this, callback, fn)
  },
  answer(this: Any, fn: Handler<object, unknown, unknown>) {
    return InternalRun.answer(this, fn)
  }
}

/** See `ClientTool.make`: the value is typed there. */
export const make = (name: string, options: Options<ParametersInput, ResultSchema, ResultSchema>) => {
  const input: ParametersInput = options.parameters ?? {}
  const parameters = Schema.isSchema(input) ? input : Schema.Struct(input)
  const tool = Object.assign(Object.create(Proto), {
    name,
    id: `client.${name}`,
    description: options.description,
    parameters,
    success: options.success,
    failure: options.failure ?? Schema.String,
    annotations: ToolAnnotations.make(options.annotations)
  })
  return Object.assign(tool, { spec: specOf(tool) })
}
