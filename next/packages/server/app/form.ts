/**
 * A form generated from a JSON Schema (a client tool's success schema): strings, numbers and integers, booleans,
 * enums (and unions of constants), nested objects; anything else is a JSON text field. `read` gives the value, or the
 * first field that is invalid (the page refuses to send it).
 */

export interface JsonSchema {
  readonly type?: string | ReadonlyArray<string>
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: ReadonlyArray<string>
  readonly enum?: ReadonlyArray<unknown>
  readonly const?: unknown
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly $ref?: string
  readonly $defs?: Readonly<Record<string, JsonSchema>>
  readonly title?: string
  readonly description?: string
}

export type Read = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: string }

export interface Field {
  readonly element: HTMLElement
  readonly read: () => Read
}

let counter = 0
const nextId = () => `field-${++counter}`

const resolve = (schema: JsonSchema, root: JsonSchema): JsonSchema => {
  if (schema.$ref === undefined) return schema
  const name = decodeURIComponent(schema.$ref.replace(/^#\/\$defs\//, "")).replaceAll("~1", "/").replaceAll("~0", "~")
  return root.$defs?.[name] ?? {}
}

/** The constants of an enum, or of a union of constants. */
const choicesOf = (schema: JsonSchema): ReadonlyArray<unknown> | undefined => {
  if (schema.enum !== undefined) return schema.enum
  if (schema.anyOf !== undefined && schema.anyOf.every((member) => "const" in member || member.enum?.length === 1)) {
    return schema.anyOf.map((member) => ("const" in member ? member.const : member.enum?.[0]))
  }
  return undefined
}

const labelled = (label: string, input: HTMLElement, id: string) => {
  const wrapper = document.createElement("div")
  const element = document.createElement("label")
  element.htmlFor = id
  element.textContent = label
  wrapper.append(element, input)
  return wrapper
}

/** The field of `schema`, labelled `label`; `required` says whether an empty value is refused. */
export const field = (schema: JsonSchema, label: string, required: boolean, root: JsonSchema = schema): Field => {
  const resolved = resolve(schema, root)
  const id = nextId()
  const choices = choicesOf(resolved)
  if (choices !== undefined) {
    const select = document.createElement("select")
    select.id = id
    if (!required) select.append(new Option("(none)", ""))
    choices.forEach((choice, index) => select.append(new Option(String(choice), String(index))))
    return {
      element: labelled(label, select, id),
      read: () => (select.value === ""
        ? { ok: true, value: undefined }
        : { ok: true, value: choices[Number(select.value)] })
    }
  }
  const type = Array.isArray(resolved.type) ? resolved.type[0] : resolved.type
  if (type === "object" && resolved.properties !== undefined) {
    const fieldset = document.createElement("fieldset")
    const legend = document.createElement("legend")
    legend.textContent = label
    fieldset.append(legend)
    const fields = Object.entries(resolved.properties).map(([name, property]) => {
      const child = field(property, name, (resolved.required ?? []).includes(name), root)
      fieldset.append(child.element)
      return [name, child] as const
    })
    return {
      element: fieldset,
      read: () => {
        const value: Record<string, unknown> = {}
        for (const [name, child] of fields) {
          const read = child.read()
          if (!read.ok) return { ok: false, error: read.error.startsWith(name) ? read.error : `${name}: ${read.error}` }
          if (read.value !== undefined) value[name] = read.value
        }
        return { ok: true, value }
      }
    }
  }
  const input = document.createElement("input")
  input.id = id
  if (type === "boolean") {
    input.type = "checkbox"
    return { element: labelled(label, input, id), read: () => ({ ok: true, value: input.checked }) }
  }
  if (type === "number" || type === "integer") {
    input.type = "text"
    input.inputMode = type === "integer" ? "numeric" : "decimal"
    return {
      element: labelled(label, input, id),
      read: () => {
        const text = input.value.trim()
        if (text === "") return required ? { ok: false, error: `${label} is required` } : { ok: true, value: undefined }
        const value = Number(text)
        if (!Number.isFinite(value)) return { ok: false, error: `${label} must be a number` }
        if (type === "integer" && !Number.isInteger(value)) {
          return { ok: false, error: `${label} must be a whole number` }
        }
        return { ok: true, value }
      }
    }
  }
  if (type === "string") {
    input.type = "text"
    return {
      element: labelled(label, input, id),
      read: () =>
        input.value === "" && required
          ? { ok: false, error: `${label} is required` }
          : { ok: true, value: input.value === "" ? undefined : input.value }
    }
  }
  const area = document.createElement("textarea")
  area.id = id
  area.rows = 3
  return {
    element: labelled(`${label} (JSON)`, area, id),
    read: () => {
      if (area.value.trim() === "") {
        return required
          ? { ok: false, error: `${label} is required` }
          : { ok: true, value: undefined }
      }
      try {
        return { ok: true, value: JSON.parse(area.value) as unknown }
      } catch {
        return { ok: false, error: `${label} is not JSON` }
      }
    }
  }
}
