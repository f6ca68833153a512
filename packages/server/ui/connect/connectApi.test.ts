/** The Connect UI's API module against the public service's HttpApi declarations, at run time too. */
import { PublicApi } from "@svc/domain/http/Apis"
import { describe, expect, it } from "vitest"
import { endpoints } from "./connectApi.ts"

describe("connectApi", () => {
  it("declares every call with the method and path of its HttpApi endpoint", () => {
    const groups = PublicApi.groups as unknown as Record<
      string,
      { readonly endpoints: Record<string, { readonly method: string; readonly path: string }> }
    >
    for (const [key, declared] of Object.entries(endpoints)) {
      const endpoint = groups[declared.group]?.endpoints[declared.name]
      expect(endpoint, `${key}: ${declared.group}.${declared.name}`).toBeDefined()
      expect({ method: endpoint?.method, path: endpoint?.path }, key).toEqual({
        method: declared.method,
        path: declared.path
      })
    }
  })
})
