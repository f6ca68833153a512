/**
 * Abandoned setups (docs/connections.md, `connections.setup_ttl`): a connection left in `setup`
 * longer than the TTL since its last change is disconnected by the worker's cleanup and no longer
 * listed; a configured connection is left alone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectStatus, launch, resources, type Svc } from "../support/Api.ts"

let svc: Svc
let ns: string
let formsConnectorId: string

interface Progress {
  readonly connection: { readonly id: string; readonly state: string; readonly setupStepId: string | null }
  readonly next: { readonly type: string; readonly stepId?: string }
}

const listed = async (): Promise<ReadonlyArray<string>> =>
  expectStatus<{ items: ReadonlyArray<{ id: string }> }>(
    await svc.call("GET", `/api/v1/connections?namespace=${ns}&limit=100`),
    200
  ).items.map((c) => c.id)

beforeAll(async () => {
  svc = await launch("svc-e2e-setup-cleanup-", { env: { SVC__connections__setup_ttl: "3s" } })
  const r = resources(svc)
  ns = await r.freshNamespace("cleanup")
  const forms = await r.publishedConnector(ns, {
    definition: {
      type: "forms",
      auth: { type: "none" },
      setup_flow: {
        configure: {
          steps: [
            { id: "a", json_schema: { type: "object", properties: { x: { type: "string" } }, required: ["x"] } },
            { id: "b", json_schema: { type: "object", properties: { y: { type: "string" } }, required: ["y"] } }
          ]
        }
      }
    }
  })
  formsConnectorId = forms.id
}, 120_000)

afterAll(async () => {
  await svc?.stop()
})

describe("abandoned setups", () => {
  it("are disconnected after connections.setup_ttl without a change; finished ones stay", async () => {
    const initiate = async () =>
      expectStatus<Progress>(
        await svc.call("POST", "/api/v1/connections/_initiate", { body: { connectorId: formsConnectorId } }),
        201
      )
    const abandoned = await initiate()
    expect(abandoned.connection.state).toBe("setup")
    const finished = await initiate()
    const submit = async (id: string, stepId: string, values: Record<string, unknown>) =>
      expectStatus<Progress>(
        await svc.call("POST", `/api/v1/connections/${id}/_setup`, { body: { stepId, values } }),
        200
      )
    await submit(finished.connection.id, "a", { x: "1" })
    expect((await submit(finished.connection.id, "b", { y: "2" })).connection.state).toBe("configured")
    expect(await listed()).toEqual(expect.arrayContaining([abandoned.connection.id, finished.connection.id]))

    const deadline = Date.now() + 60_000
    while ((await listed()).includes(abandoned.connection.id) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    const after = await listed()
    expect(after).not.toContain(abandoned.connection.id)
    expect(after).toContain(finished.connection.id)
    expect((await svc.call("GET", `/api/v1/connections/${abandoned.connection.id}`)).status).toBe(404)
    // The finished one is untouched.
    expect(
      expectStatus<{ state: string }>(await svc.call("GET", `/api/v1/connections/${finished.connection.id}`), 200).state
    ).toBe("configured")
  }, 120_000)
})
