import { type ConnectorDefinition, decodeConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { answeredSteps, setupPlan } from "./SetupSteps.ts"

const definition = (input: Record<string, unknown>): ConnectorDefinition =>
  Effect.runSync(decodeConnectorDefinition({ type: "demo", proxy: { allowed_hosts: ["api.example.com"] }, ...input }))

const step = (id: string, properties: Record<string, unknown>) => ({
  id,
  json_schema: { type: "object", properties }
})

describe("answeredSteps", () => {
  it("lists every form before svc:verify with its non-secret stored values, never a secret", () => {
    const plan = setupPlan(
      definition({
        auth: { type: "basic" },
        probes: [{ id: "check", url: "https://api.example.com/me", verify: true }],
        setup_flow: {
          preconnect: {
            steps: [step("site", { site: { type: "string" }, site_token: { type: "string", writeOnly: true } })]
          },
          configure: {
            steps: [step("options", { region: { type: "string" }, pin: { type: "string", format: "password" } })]
          }
        }
      })
    )
    const answered = answeredSteps(
      plan,
      { site: "acme", site_token: "t0ken", region: "eu", pin: "1234", other: "x" },
      { kind: "basic", username: "ops", password: "hunter2" }
    )
    expect(answered.map((a) => [a.stepId, a.phase, a.values])).toEqual([
      ["site", "preconnect", { site: "acme" }],
      ["svc:credentials", "credentials", { username: "ops" }],
      ["options", "configure", { region: "eu" }]
    ])
    const text = JSON.stringify(answered)
    for (const secret of ["t0ken", "1234", "hunter2"]) expect(text).not.toContain(secret)
  })

  it("answers an API key credentials form with no value at all", () => {
    const plan = setupPlan(
      definition({
        auth: { type: "api_key", placement: "bearer" },
        probes: [{ id: "check", url: "https://api.example.com/me", verify: true }]
      })
    )
    expect(answeredSteps(plan, {}, { kind: "api_key", api_key: "k-1" }).map((a) => a.values)).toEqual([{}])
  })
})
