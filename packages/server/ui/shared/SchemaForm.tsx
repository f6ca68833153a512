/**
 * A form rendered from a setup step's JSON Schema (an object of flat properties): text, number and
 * integer inputs, checkboxes for booleans, selects for enums, masked inputs for secret fields
 * (`writeOnly: true` or `format: "password"`). Each control has a label, required fields say so,
 * and problems (checked here first, then the server's `details`) are shown beside their field.
 * The model (schema subset, checks, conversion) is SchemaValues.ts; one field is SchemaField.tsx.
 */
import { useState } from "preact/hooks"
import type { ErrorDetail } from "./api.ts"
import { SchemaField } from "./SchemaField.tsx"
import { convert, detailField, initialValue, isSecret, type ObjectSchema } from "./SchemaValues.ts"

export { isSecret, type ObjectSchema, type PropertySchema } from "./SchemaValues.ts"

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
      {properties.map(([name, schema]) => (
        <SchemaField
          key={name}
          id={`${props.idPrefix}-${name}`}
          name={name}
          schema={schema}
          required={required.has(name)}
          value={values[name]}
          problem={problems[name] ?? serverProblems[name]}
          onChange={(value) => setValues({ ...values, [name]: value })}
        />
      ))}
      <button type="submit" class="svc-button svc-primary" disabled={props.busy}>
        {props.busy ? "Working…" : props.submitLabel}
      </button>
    </form>
  )
}
