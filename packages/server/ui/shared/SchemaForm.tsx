/**
 * A form rendered from a setup step's JSON Schema (an object of flat properties): text, number and
 * integer inputs, checkboxes for booleans, selects for enums, masked inputs for secret fields
 * (`writeOnly: true` or `format: "password"`). Each control has a label, required fields say so,
 * and problems (checked here first, then the server's `details`) are shown beside their field.
 */
import type { InputHTMLAttributes, JSX } from "preact"
import { useState } from "preact/hooks"
import type { ErrorDetail } from "./api.ts"

/** The subset of JSON Schema a setup step uses. */
export interface PropertySchema {
  readonly type?: string | ReadonlyArray<string>
  readonly title?: string
  readonly description?: string
  readonly enum?: ReadonlyArray<unknown>
  readonly default?: unknown
  readonly format?: string
  readonly writeOnly?: boolean
  readonly minLength?: number
  readonly maxLength?: number
  readonly minimum?: number
  readonly maximum?: number
  readonly pattern?: string
}

export interface ObjectSchema {
  readonly title?: string
  readonly description?: string
  readonly properties?: Readonly<Record<string, PropertySchema>>
  readonly required?: ReadonlyArray<string>
}

const typeOf = (schema: PropertySchema): string => {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type
  if (type !== undefined) return type as string
  return schema.enum !== undefined ? "enum" : "string"
}

/** True for a property whose value must be masked. */
export const isSecret = (schema: PropertySchema): boolean => schema.writeOnly === true || schema.format === "password"

const initialValue = (schema: PropertySchema): string | boolean => {
  if (typeOf(schema) === "boolean") return schema.default === true
  if (schema.default === undefined || schema.default === null) return schema.enum !== undefined ? "" : ""
  return String(schema.default)
}

/** Checks one raw value against its schema; answers the converted value or a problem. */
const convert = (
  schema: PropertySchema,
  raw: string | boolean,
  required: boolean
): { readonly value?: unknown; readonly problem?: string } => {
  const type = typeOf(schema)
  if (type === "boolean") return { value: raw === true }
  const text = String(raw)
  if (text === "") return required ? { problem: "This field is required." } : {}
  if (schema.enum !== undefined) {
    const match = schema.enum.find((option) => String(option) === text)
    return match === undefined ? { problem: "Choose one of the options." } : { value: match }
  }
  if (type === "number" || type === "integer") {
    const value = Number(text)
    if (!Number.isFinite(value)) return { problem: "Enter a number." }
    if (type === "integer" && !Number.isInteger(value)) return { problem: "Enter a whole number." }
    if (schema.minimum !== undefined && value < schema.minimum) return { problem: `At least ${schema.minimum}.` }
    if (schema.maximum !== undefined && value > schema.maximum) return { problem: `At most ${schema.maximum}.` }
    return { value }
  }
  if (schema.minLength !== undefined && text.length < schema.minLength) {
    return { problem: `At least ${schema.minLength} characters.` }
  }
  if (schema.maxLength !== undefined && text.length > schema.maxLength) {
    return { problem: `At most ${schema.maxLength} characters.` }
  }
  if (schema.pattern !== undefined) {
    try {
      if (!new RegExp(schema.pattern, "u").test(text)) return { problem: "This value does not have the expected form." }
    } catch {
      // A pattern this browser cannot compile is left to the server.
    }
  }
  return { value: text }
}

/** Server detail fields (`body.values.api_key`, `values.api_key`, `api_key`) mapped to property names. */
const detailField = (field: string): string => field.replace(/^body\./, "").replace(/^values\./, "")

export interface SchemaFormProps {
  /** Prefix of the control ids (unique on the page). */
  readonly idPrefix: string
  readonly schema: ObjectSchema
  readonly submitLabel: string
  readonly busy: boolean
  /** Field problems from the server's error body. */
  readonly serverDetails?: ReadonlyArray<ErrorDetail>
  /** Values to start from instead of the defaults (an edit); secret fields always start empty. */
  readonly initialValues?: Readonly<Record<string, unknown>>
  readonly onSubmit: (values: Record<string, unknown>) => void
}

/** The form; `onSubmit` gets converted values (empty optional fields left out). */
export const SchemaForm = (props: SchemaFormProps) => {
  const properties = Object.entries(props.schema.properties ?? {})
  const required = new Set(props.schema.required ?? [])
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries(
      properties.map(([name, schema]) => {
        const kept = props.initialValues?.[name]
        if (kept === undefined || kept === null || isSecret(schema)) return [name, initialValue(schema)]
        return [name, typeof kept === "boolean" ? kept : String(kept)]
      })
    )
  )
  const [problems, setProblems] = useState<Record<string, string>>({})
  const serverProblems: Record<string, string> = {}
  for (const detail of props.serverDetails ?? []) serverProblems[detailField(detail.field)] = detail.message

  const submit = (event: Event) => {
    event.preventDefault()
    const found: Record<string, string> = {}
    const out: Record<string, unknown> = {}
    for (const [name, schema] of properties) {
      const result = convert(schema, values[name] ?? "", required.has(name))
      if (result.problem !== undefined) found[name] = result.problem
      else if (result.value !== undefined) out[name] = result.value
    }
    setProblems(found)
    if (Object.keys(found).length === 0) props.onSubmit(out)
  }

  return (
    <form class="svc-form" onSubmit={submit} noValidate>
      {props.schema.description !== undefined && <p class="svc-muted">{props.schema.description}</p>}
      {properties.map(([name, schema]) => {
        const id = `${props.idPrefix}-${name}`
        const problem = problems[name] ?? serverProblems[name]
        const type = typeOf(schema)
        const label = schema.title ?? name
        const describedBy = [
          schema.description === undefined ? "" : `${id}-help`,
          problem === undefined ? "" : `${id}-error`
        ]
          .filter((x) => x !== "")
          .join(" ")
        const common = {
          id,
          name,
          "aria-invalid": problem !== undefined,
          "aria-required": required.has(name),
          ...(describedBy === "" ? {} : { "aria-describedby": describedBy })
        }
        const set = (value: string | boolean) => setValues({ ...values, [name]: value })
        let control: JSX.Element
        if (type === "boolean") {
          control = (
            <input
              {...common}
              type="checkbox"
              checked={values[name] === true}
              onChange={(e) => set(e.currentTarget.checked)}
            />
          )
        } else if (schema.enum !== undefined) {
          control = (
            <select {...common} value={String(values[name] ?? "")} onChange={(e) => set(e.currentTarget.value)}>
              <option value="">Choose…</option>
              {schema.enum.map((option) => (
                <option key={String(option)} value={String(option)}>
                  {String(option)}
                </option>
              ))}
            </select>
          )
        } else {
          const inputType: string = isSecret(schema)
            ? "password"
            : type === "number" || type === "integer"
              ? "number"
              : schema.format === "email"
                ? "email"
                : schema.format === "uri"
                  ? "url"
                  : "text"
          const attributes = {
            ...common,
            type: inputType,
            autocomplete: isSecret(schema) ? "off" : "on",
            spellcheck: false,
            ...(type === "integer" ? { step: 1 } : type === "number" ? { step: "any" } : {}),
            value: String(values[name] ?? ""),
            onInput: (e: Event) => set((e.currentTarget as HTMLInputElement).value)
          } as InputHTMLAttributes<HTMLInputElement>
          control = <input {...attributes} />
        }
        return (
          <div class={type === "boolean" ? "svc-field svc-field-check" : "svc-field"} key={name}>
            {type === "boolean" ? (
              <>
                {control}
                <label for={id}>{label}</label>
              </>
            ) : (
              <>
                <label for={id}>
                  {label}
                  {required.has(name) && <span class="svc-required"> (required)</span>}
                </label>
                {control}
              </>
            )}
            {schema.description !== undefined && (
              <p class="svc-help" id={`${id}-help`}>
                {schema.description}
              </p>
            )}
            {problem !== undefined && (
              <p class="svc-field-error" id={`${id}-error`} role="alert">
                {problem}
              </p>
            )}
          </div>
        )
      })}
      <button type="submit" class="svc-button svc-primary" disabled={props.busy}>
        {props.busy ? "Working…" : props.submitLabel}
      </button>
    </form>
  )
}
