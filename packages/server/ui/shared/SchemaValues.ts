/**
 * The model of a form rendered from JSON Schema (SchemaForm.tsx): the subset of JSON Schema a setup
 * step uses, which properties are secret, a field's starting value, and the check and conversion
 * of one raw value (the same rules the browser shows before anything is sent).
 */
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

export const typeOf = (schema: PropertySchema): string => {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type
  if (type !== undefined) return type as string
  return schema.enum !== undefined ? "enum" : "string"
}

/** True for a property whose value must be masked. */
export const isSecret = (schema: PropertySchema): boolean => schema.writeOnly === true || schema.format === "password"

export const initialValue = (schema: PropertySchema): string | boolean => {
  if (typeOf(schema) === "boolean") return schema.default === true
  if (schema.default === undefined || schema.default === null) return ""
  return String(schema.default)
}

/** Checks one raw value against its schema; answers the converted value or a problem. */
export const convert = (
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
export const detailField = (field: string): string => field.replace(/^body\./, "").replace(/^values\./, "")
