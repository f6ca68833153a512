/**
 * The same kit from plain vitest (or jest): `SvcTest.start` answers a handle with the base URL,
 * tokens, the seeded resources and the fake upstream; `stop()` ends it.
 */
import { SvcTest, type SvcTestHandle } from "@svc/testing/SvcTest"
import { afterAll, beforeAll, expect, test } from "vitest"

let svc: SvcTestHandle

beforeAll(async () => {
  const started = performance.now()
  svc = await SvcTest.start({
    fixture: ({ upstream }) => ({
      namespaces: [{ path: "root.shop" }],
      connectors: {
        billing: {
          namespace: "root.shop",
          definition: {
            type: "billing",
            auth: { type: "api_key", placement: "header", header_name: "x-api-key" },
            proxy: { allowed_hosts: [upstream.host], allow_private_networks: true }
          }
        }
      },
      connections: { acme: { connector: "billing", namespace: "root.shop", credentials: { api_key: "s3cret" } } }
    })
  })
  await fetch(`${svc.baseUrl}/ping`)
  console.log(`svc-testing: start to first request ${Math.round(performance.now() - started)} ms`)
}, 120_000)

afterAll(() => svc?.stop())

test("an invoice is posted upstream with the connection's key", async () => {
  svc.upstream.route("/invoices", (request) => ({ status: 201, body: request.text }))
  const response = await fetch(`${svc.baseUrl}/api/v1/connections/${svc.seeded.connections.acme!.id}/_proxy`, {
    method: "POST",
    headers: { authorization: `Bearer ${svc.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ method: "POST", url: `${svc.upstream.origin}/invoices`, bodyJson: { total: 12 } })
  })
  expect(response.status).toBe(200)
  expect(await response.json()).toMatchObject({ statusCode: 201 })
  const [sent] = svc.upstream.seen()
  expect(sent?.method).toBe("POST")
  expect(sent?.headers["x-api-key"]).toBe("s3cret")
  expect(JSON.parse(sent?.text ?? "")).toEqual({ total: 12 })
})

test("a token for an actor without permissions is refused", async () => {
  const token = await svc.token("nobody")
  const response = await fetch(`${svc.baseUrl}/api/v1/connections`, { headers: { authorization: `Bearer ${token}` } })
  expect(response.status).toBe(401)
})
