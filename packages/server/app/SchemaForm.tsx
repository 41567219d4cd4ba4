/**
 * A form generated from a JSON Schema (a client tool's result): strings, numbers and integers, booleans, enums (and
 * unions of constants), nested objects; anything else is a JSON text field. The values are kept as text and read on
 * submit: `read` gives the value, or the first field that is invalid (the card refuses to send it).
 */
import type { ReactNode } from "react"
import { useId } from "react"

export interface JsonSchema {
  readonly type?: string | ReadonlyArray<string>
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: ReadonlyArray<string>
  readonly enum?: ReadonlyArray<unknown>
  readonly const?: unknown
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly $ref?: string
  readonly $defs?: Readonly<Record<string, JsonSchema>>
  readonly description?: string
}

export type Read = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: string }

/** The form's values: the text (or checkbox) of each field, by its path (`position.lat`). */
export type Values = Readonly<Record<string, string | boolean>>

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

const typeOf = (schema: JsonSchema) => (Array.isArray(schema.type) ? schema.type[0] : schema.type) as string | undefined

const join = (path: string, name: string) => (path === "" ? name : `${path}.${name}`)

// =============================================================================
// Reading the values
// =============================================================================

export const read = (
  schema: JsonSchema,
  values: Values,
  root: JsonSchema = schema,
  path = "",
  required = true
): Read => {
  const resolved = resolve(schema, root)
  const label = path === "" ? "the result" : path
  const raw = values[path]
  const choices = choicesOf(resolved)
  if (choices !== undefined) {
    if (raw === undefined || raw === "") {
      return required ? { ok: false, error: `${label} is required` } : { ok: true, value: undefined }
    }
    return { ok: true, value: choices[Number(raw)] }
  }
  const type = typeOf(resolved)
  if (type === "object" && resolved.properties !== undefined) {
    const value: Record<string, unknown> = {}
    for (const [name, property] of Object.entries(resolved.properties)) {
      const field = read(property, values, root, join(path, name), (resolved.required ?? []).includes(name))
      if (!field.ok) return field
      if (field.value !== undefined) value[name] = field.value
    }
    return { ok: true, value }
  }
  if (type === "boolean") return { ok: true, value: raw === true }
  const text = typeof raw === "string" ? raw : ""
  if (text.trim() === "") {
    return required ? { ok: false, error: `${label} is required` } : { ok: true, value: undefined }
  }
  if (type === "number" || type === "integer") {
    const value = Number(text.trim())
    if (!Number.isFinite(value)) return { ok: false, error: `${label} must be a number` }
    if (type === "integer" && !Number.isInteger(value)) return { ok: false, error: `${label} must be a whole number` }
    return { ok: true, value }
  }
  if (type === "string") return { ok: true, value: text }
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch {
    return { ok: false, error: `${label} is not JSON` }
  }
}

// =============================================================================
// The fields
// =============================================================================

interface FieldProps {
  readonly schema: JsonSchema
  readonly root: JsonSchema
  readonly path: string
  readonly label: string
  readonly required: boolean
  readonly values: Values
  readonly onChange: (path: string, value: string | boolean) => void
}

const Field = (props: FieldProps): ReactNode => {
  const id = useId()
  const resolved = resolve(props.schema, props.root)
  const choices = choicesOf(resolved)
  const type = typeOf(resolved)
  const hint = resolved.description === undefined ? null : <small className="hint">{resolved.description}</small>
  const value = props.values[props.path]
  const text = typeof value === "string" ? value : ""
  const label = `${props.label}${props.required ? "" : " (optional)"}`
  if (choices !== undefined) {
    return (
      <div className="field">
        <label htmlFor={id}>{label}</label>
        <select id={id} value={text} onChange={(event) => props.onChange(props.path, event.target.value)}>
          <option value="">Choose…</option>
          {choices.map((choice, index) => <option key={index} value={String(index)}>{String(choice)}</option>)}
        </select>
        {hint}
      </div>
    )
  }
  if (type === "object" && resolved.properties !== undefined) {
    return (
      <fieldset>
        <legend>{props.label}</legend>
        {Object.entries(resolved.properties).map(([name, property]) => (
          <Field
            key={name}
            {...props}
            schema={property}
            path={join(props.path, name)}
            label={name}
            required={(resolved.required ?? []).includes(name)}
          />
        ))}
      </fieldset>
    )
  }
  if (type === "boolean") {
    return (
      <div className="field check">
        <input
          id={id}
          type="checkbox"
          checked={value === true}
          onChange={(event) => props.onChange(props.path, event.target.checked)}
        />
        <label htmlFor={id}>{props.label}</label>
        {hint}
      </div>
    )
  }
  const json = type !== "string" && type !== "number" && type !== "integer"
  return (
    <div className="field">
      <label htmlFor={id}>{json ? `${label} (JSON)` : label}</label>
      {json
        ? (
          <textarea
            id={id}
            rows={3}
            value={text}
            onChange={(event) => props.onChange(props.path, event.target.value)}
          />
        )
        : (
          <input
            id={id}
            type="text"
            inputMode={type === "integer" ? "numeric" : type === "number" ? "decimal" : undefined}
            value={text}
            onChange={(event) => props.onChange(props.path, event.target.value)}
          />
        )}
      {hint}
    </div>
  )
}

export const Fields = (
  props: { readonly schema: JsonSchema; readonly values: Values; readonly onChange: FieldProps["onChange"] }
): ReactNode => (
  <Field
    schema={props.schema}
    root={props.schema}
    path=""
    label="Result"
    required
    values={props.values}
    onChange={props.onChange}
  />
)
