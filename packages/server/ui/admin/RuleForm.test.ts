// @vitest-environment happy-dom
/**
 * The rate-limit rule form as a component (happy-dom): a client-side problem stops the request;
 * the server's 400 details land beside their fields; a valid form sends the definition.
 */
import { h, render } from "preact"
import { act } from "preact/test-utils"
import { afterEach, describe, expect, it, vi } from "vitest"
import { RuleForm } from "./RuleForm.tsx"

let root: HTMLElement

const mount = () => {
  const saved: Array<unknown> = []
  root = document.createElement("div")
  document.body.appendChild(root)
  act(() => {
    render(h(RuleForm, { editing: undefined, onSaved: (rule) => saved.push(rule), onCancel: () => undefined }), root)
  })
  return saved
}

const input = (id: string): HTMLInputElement => {
  const found = root.querySelector<HTMLInputElement>(`#rl-${id}`)
  if (found === null) throw new Error(`no #rl-${id}`)
  return found
}

const type = (id: string, value: string) =>
  act(() => {
    input(id).value = value
    input(id).dispatchEvent(new Event("input", { bubbles: true }))
  })

const submit = async () => {
  await act(async () => {
    root.querySelector("form")?.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }))
    await new Promise((resolve) => setTimeout(resolve, 0))
  })
}

const problem = (id: string) => root.querySelector(`#rl-${id}-error`)?.textContent

afterEach(() => {
  render(null, root)
  root.remove()
  vi.unstubAllGlobals()
})

describe("RuleForm", () => {
  it("refuses a bad limit before any request", async () => {
    const fetch = vi.fn()
    vi.stubGlobal("fetch", fetch)
    mount()
    type("limit", "0")
    await submit()
    expect(problem("limit")).toBe("A whole number greater than 0.")
    expect(input("limit").getAttribute("aria-invalid")).toBe("true")
    expect(fetch).not.toHaveBeenCalled()
  })

  it("shows the server's 400 details beside their fields, then sends a valid rule", async () => {
    const answers = [
      new Response(
        JSON.stringify({
          error: "invalid rate limit",
          code: "invalid_rate_limit",
          details: [
            { field: "body.name", message: "must be lower-case letters, digits and -" },
            { field: "body.definition.selector.label_selector", message: "not a label selector" }
          ]
        }),
        { status: 400, headers: { "content-type": "application/json" } }
      ),
      new Response(JSON.stringify({ id: "rl_1", name: "per-minute" }), { status: 201 })
    ]
    const fetch = vi.fn(async () => answers.shift() ?? new Response("", { status: 500 }))
    vi.stubGlobal("fetch", fetch)
    const saved = mount()
    type("name", "Per Minute")
    type("label-selector", "tier in")
    await submit()
    expect(problem("name")).toBe("must be lower-case letters, digits and -")
    expect(problem("label-selector")).toBe("not a label selector")
    type("name", "per-minute")
    type("label-selector", "tier=gold")
    await submit()
    expect(saved).toEqual([{ id: "rl_1", name: "per-minute" }])
    const [, init] = fetch.mock.calls[1] as unknown as [string, { body: string; method: string }]
    expect(init.method).toBe("POST")
    expect(JSON.parse(init.body)).toMatchObject({
      name: "per-minute",
      namespace: "root",
      definition: { selector: { label_selector: "tier=gold" } }
    })
  })
})
