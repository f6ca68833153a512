/** The actor form's model: permission lines parsed, problems named by line. */
import { describe, expect, it } from "vitest"
import { checkActor, parsePermissions, permissionsText } from "./ActorForm.ts"

describe("actor form model", () => {
  it("parses one permission per line, skipping blanks and comments", () => {
    expect(parsePermissions("# tenant\nroot.acme connections,notifications get,list\n\nroot.** tasks get")).toEqual({
      permissions: [
        { namespace: "root.acme", resources: ["connections", "notifications"], verbs: ["get", "list"] },
        { namespace: "root.**", resources: ["tasks"], verbs: ["get"] }
      ]
    })
    expect(parsePermissions("root.acme connections")).toEqual({
      problem: "Line 1: write <namespace> <resources> <verbs>."
    })
    expect(parsePermissions("\nroot , get")).toEqual({ problem: "Line 2: name at least one resource and one verb." })
  })

  it("round-trips through the text form", () => {
    const permissions = [{ namespace: "root", resources: ["connectors"], verbs: ["get", "list"] }]
    expect(parsePermissions(permissionsText(permissions))).toEqual({ permissions })
  })

  it("names each missing or bad field", () => {
    expect(checkActor({ externalId: " ", namespace: "", permissions: "x" })).toEqual({
      externalId: "The external id is required (the token's sub).",
      namespace: "A namespace is required.",
      permissions: "Line 1: write <namespace> <resources> <verbs>."
    })
    expect(checkActor({ externalId: "ops", namespace: "root", permissions: "" })).toEqual({})
  })
})
