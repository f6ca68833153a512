// @vitest-environment happy-dom
/**
 * The setup form as a component (happy-dom): required and range checks before anything is sent,
 * converted values on submit, server details beside their field, and an edit that keeps values
 * but never a secret.
 */
import { h, render } from "preact"
import { act } from "preact/test-utils"
import { afterEach, describe, expect, it } from "vitest"
import { type ObjectSchema, SchemaForm } from "./SchemaForm.tsx"

const schema: ObjectSchema = {
  properties: {
    tenant: { type: "string", title: "Workspace", minLength: 2 },
    api_key: { type: "string", title: "API key", writeOnly: true },
    max_items: { type: "integer", title: "Items per sync", minimum: 1, maximum: 500, default: 50 },
    archived: { type: "boolean", title: "Sync archived" }
  },
  required: ["tenant", "api_key"]
}

let root: HTMLElement

const mount = (props: Partial<Parameters<typeof SchemaForm>[0]> = {}) => {
  const submitted: Array<Record<string, unknown>> = []
  root = document.createElement("div")
  document.body.appendChild(root)
  act(() => {
    render(
      h(SchemaForm, {
        idPrefix: "t",
        schema,
        submitLabel: "Connect",
        busy: false,
        onSubmit: (values) => submitted.push(values),
        ...props
      }),
      root
    )
  })
  return submitted
}

const field = (label: string): HTMLInputElement => {
  const found = [...root.querySelectorAll("label")].find((l) => l.textContent?.startsWith(label))
  const input = found === undefined ? null : root.querySelector<HTMLInputElement>(`#${found.htmlFor}`)
  if (input === null) throw new Error(`no field ${label}`)
  return input
}

const type = (label: string, value: string) =>
  act(() => {
    const input = field(label)
    input.value = value
    input.dispatchEvent(new Event("input", { bubbles: true }))
  })

const submit = () =>
  act(() => {
    root.querySelector("form")?.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }))
  })

const problemOf = (label: string) => {
  const input = field(label)
  const described = input.getAttribute("aria-describedby")
  return described === null ? undefined : root.querySelector(`#${described}`)?.textContent
}

afterEach(() => {
  render(null, root)
  root.remove()
})

describe("SchemaForm", () => {
  it("checks required fields and ranges before sending anything", () => {
    const submitted = mount()
    submit()
    expect(submitted).toEqual([])
    expect(field("Workspace").getAttribute("aria-invalid")).toBe("true")
    expect(problemOf("Workspace")).toBe("This field is required.")
    type("Workspace", "a")
    type("Items per sync", "900")
    submit()
    expect(problemOf("Workspace")).toBe("At least 2 characters.")
    expect(problemOf("Items per sync")).toBe("At most 500.")
    expect(submitted).toEqual([])
  })

  it("sends converted values; a secret is a masked input", () => {
    const submitted = mount()
    expect(field("API key").type).toBe("password")
    expect(field("Items per sync").value).toBe("50")
    type("Workspace", "acme")
    type("API key", "key-123")
    submit()
    expect(submitted).toEqual([{ tenant: "acme", api_key: "key-123", max_items: 50, archived: false }])
  })

  it("shows the server's details beside their field", () => {
    mount({ serverDetails: [{ field: "body.values.tenant", message: "unknown workspace" }] })
    expect(problemOf("Workspace")).toBe("unknown workspace")
  })

  it("starts an edit from the values kept, secrets empty", () => {
    const submitted = mount({ initialValues: { tenant: "acme", api_key: "must-not-show", max_items: 120 } })
    expect(field("Workspace").value).toBe("acme")
    expect(field("Items per sync").value).toBe("120")
    expect(field("API key").value).toBe("")
    submit()
    expect(submitted).toEqual([])
    expect(problemOf("API key")).toBe("This field is required.")
  })
})
