/**
 * Application metrics, black-box on the embedded default (spec 4.7): `POST /api/v1/metrics/query`
 * counts the requests proxied through a connection by status, and the worker's resource snapshots
 * (every second here) count the connections by state, including a disconnection; the schema
 * endpoint lists every metric; an invalid query is a 400 naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, expectError, expectStatus, launch, resources, type Svc } from "../support/Api.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

interface Series {
  readonly refId: string
  readonly labels: Record<string, string>
  readonly points: ReadonlyArray<{ readonly timestamp: string; readonly value: number }>
}

let svc: Svc
let upstream: Upstream

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/ok", () => ({ status: 200, body: "{}" }))
  upstream.route("/fail", () => ({ status: 503, body: "down" }))
  svc = await launch("svc-metrics-", {
    env: { SVC__outbound__allow_private_networks: "true", SVC__appMetrics__resourceSnapshotInterval: "1s" }
  })
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
})

const query = async (body: unknown) =>
  expectStatus<{ series: ReadonlyArray<Series> }>(await svc.call("POST", "/api/v1/metrics/query", { body }), 200)

const lastHour = () => ({
  start: new Date(Date.now() - 3_600_000).toISOString(),
  end: new Date(Date.now() + 60_000).toISOString(),
  step: "1h"
})

const sum = (series: Series | undefined) => (series?.points ?? []).reduce((total, point) => total + point.value, 0)

describe("metrics", () => {
  it("counts proxied requests by status and errors; snapshots count connections by state", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("metrics")
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "none" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
      }
    })
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) ids.push((await r.connection(connector.id)).id)
    for (const path of ["/ok", "/ok", "/fail"]) {
      expectStatus(
        await svc.call("POST", `/api/v1/connections/${ids[0]}/_proxy`, {
          body: { url: `${upstream.origin}${path}`, method: "GET" }
        }),
        200
      )
    }

    const byStatus = await eventually(
      () =>
        query({
          range: lastHour(),
          namespace: ns,
          queries: [
            { refId: "S", metric: "request_events", aggregation: "count", groupBy: ["response_status_code"] },
            { refId: "E", metric: "request_events.errors", aggregation: "count" }
          ]
        }),
      (result) => sum(result.series.find((s) => s.refId === "E")) === 1,
      20_000
    )
    const statuses = Object.fromEntries(
      byStatus.series.filter((s) => s.refId === "S").map((s) => [s.labels.response_status_code, sum(s)])
    )
    expect(statuses).toEqual({ "200": 2, "503": 1 })

    // The snapshots see the three connections, then the disconnected one gone.
    const connections = () =>
      query({
        range: {
          start: new Date(Date.now() - 60_000).toISOString(),
          end: new Date(Date.now() + 1_000).toISOString(),
          step: "1m"
        },
        namespace: ns,
        queries: [{ refId: "C", metric: "resources.connections", aggregation: "count", groupBy: ["state"] }]
      })
    const latest = (result: { series: ReadonlyArray<Series> }, state: string) =>
      result.series.find((s) => s.labels.state === state)?.points.at(-1)?.value ?? 0
    expect(
      latest(await eventually(connections, (result) => latest(result, "configured") === 3, 20_000), "configured")
    ).toBe(3)
    const task = expectStatus<{ taskId: string }>(
      await svc.call("POST", `/api/v1/connections/${ids[2]}/_disconnect`),
      202
    )
    await eventually(
      async () => expectStatus<{ state: string }>(await svc.call("GET", `/api/v1/tasks/${task.taskId}`), 200),
      (body) => body.state !== "active"
    )
    expect(
      latest(await eventually(connections, (result) => latest(result, "configured") === 2, 20_000), "configured")
    ).toBe(2)
  }, 90_000)

  it("lists every metric in the schema; an invalid query is a 400 naming the field", async () => {
    const schema = expectStatus<{ metrics: ReadonlyArray<{ name: string; source: string }> }>(
      await svc.call("GET", "/api/v1/metrics/schema"),
      200
    )
    expect(schema.metrics.map((m) => m.name)).toContain("resources.rate_limits")
    expect(schema.metrics).toHaveLength(9)
    const bad = expectError(
      await svc.call("POST", "/api/v1/metrics/query", {
        body: { range: lastHour(), queries: [{ refId: "A", metric: "request_events", aggregation: "p95" }] }
      }),
      400,
      "invalid_request"
    )
    expect(bad.details?.map((d) => d.field)).toEqual(["body.queries[0].aggregation"])
  })
})
