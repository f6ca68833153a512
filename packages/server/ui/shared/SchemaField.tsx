/**
 * One field of a SchemaForm: its labelled control (a checkbox for a boolean, a select for an enum,
 * a masked input for a secret, else a text, number, email or URL input), its help text and its
 * problem, tied to the control with `aria-describedby`.
 */
import type { InputHTMLAttributes, JSX } from "preact"
import { isSecret, type PropertySchema, typeOf } from "./SchemaValues.ts"

export interface SchemaFieldProps {
  /** The control's id (unique on the page). */
  readonly id: string
  readonly name: string
  readonly schema: PropertySchema
  readonly required: boolean
  readonly value: string | boolean | undefined
  /** The problem shown beside the field (checked in the page, or the server's). */
  readonly problem: string | undefined
  readonly onChange: (value: string | boolean) => void
}

const inputTypeOf = (schema: PropertySchema, type: string): string => {
  if (isSecret(schema)) return "password"
  if (type === "number" || type === "integer") return "number"
  if (schema.format === "email") return "email"
  return schema.format === "uri" ? "url" : "text"
}

const Control = (props: SchemaFieldProps & { readonly type: string; readonly describedBy: string }) => {
  const { id, name, schema, type, value, onChange } = props
  const common = {
    id,
    name,
    "aria-invalid": props.problem !== undefined,
    "aria-required": props.required,
    ...(props.describedBy === "" ? {} : { "aria-describedby": props.describedBy })
  }
  if (type === "boolean") {
    return (
      <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />
    )
  }
  if (schema.enum !== undefined) {
    return (
      <select {...common} value={String(value ?? "")} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">Choose…</option>
        {schema.enum.map((option) => (
          <option key={String(option)} value={String(option)}>
            {String(option)}
          </option>
        ))}
      </select>
    )
  }
  const attributes = {
    ...common,
    type: inputTypeOf(schema, type),
    autocomplete: isSecret(schema) ? "off" : "on",
    spellcheck: false,
    ...(type === "integer" ? { step: 1 } : type === "number" ? { step: "any" } : {}),
    value: String(value ?? ""),
    onInput: (e: Event) => onChange((e.currentTarget as HTMLInputElement).value)
  } as InputHTMLAttributes<HTMLInputElement>
  return <input {...attributes} />
}

/** A labelled field: the label after a checkbox, before any other control. */
export const SchemaField = (props: SchemaFieldProps) => {
  const { id, schema, problem } = props
  const type = typeOf(schema)
  const label = schema.title ?? props.name
  const describedBy = [schema.description === undefined ? "" : `${id}-help`, problem === undefined ? "" : `${id}-error`]
    .filter((x) => x !== "")
    .join(" ")
  const control: JSX.Element = <Control {...props} type={type} describedBy={describedBy} />
  return (
    <div class={type === "boolean" ? "svc-field svc-field-check" : "svc-field"}>
      {type === "boolean" ? (
        <>
          {control}
          <label for={id}>{label}</label>
        </>
      ) : (
        <>
          <label for={id}>
            {label}
            {props.required && <span class="svc-required"> (required)</span>}
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
}
