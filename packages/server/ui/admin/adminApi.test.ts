/** The admin UI's API module against the admin-api's HttpApi declarations, at run time too. */
import { AdminApiV1 } from "@svc/domain/http/Apis"
import { describe, expect, it } from "vitest"
import { fill } from "../shared/endpoints.ts"
import { endpoints } from "./adminApi.ts"

describe("adminApi", () => {
  it("declares every call with the method and path of its HttpApi endpoint", () => {
    const groups = AdminApiV1.groups as unknown as Record<
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

  it("fills path parameters, encoded", () => {
    expect(fill("/api/v1/connectors/:id/versions/:version/_state", { id: "cxr_1", version: 2 })).toBe(
      "/api/v1/connectors/cxr_1/versions/2/_state"
    )
    expect(fill("/api/v1/connections/:id/labels/:key", { id: "c", key: "a/b c" })).toBe(
      "/api/v1/connections/c/labels/a%2Fb%20c"
    )
    expect(() => fill("/api/v1/tasks/:taskId", {})).toThrow("no value for :taskId")
  })
})
