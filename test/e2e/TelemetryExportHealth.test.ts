/**
 * Exporter health black-box (issue 33; docs/telemetry.md "Exporter health"): the embedded
 * default exporting to a collector that answers 503 with `Retry-After`. svc keeps serving, logs
 * the failure once (at most once a minute per signal), counts
 * `svc.telemetry.export.failures.total{signal}` on the Prometheus listener, and `/healthz` shows
 * the failing exporters while the service stays `ok`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, launch, type Svc } from "../support/Api.ts"
import { type OtlpReceiver, startHttpReceiver } from "../support/OtlpReceiver.ts"

interface HealthBody {
  readonly status: string
  readonly telemetry?: Record<string, { status: string; error?: string; failures: number }>
}

describe("a failing OTLP collector", () => {
  let receiver: OtlpReceiver
  let svc: Svc

  beforeAll(async () => {
    receiver = await startHttpReceiver(() => ({ status: 503, headers: { "retry-after": "1" } }))
    svc = await launch("svc-export-health-", {
      env: {
        SVC__telemetry__enabled: "true",
        SVC__telemetry__exporter__protocol: "http/protobuf",
        SVC__telemetry__exporter__endpoint: receiver.endpoint,
        SVC__telemetry__exporter__insecure: "true",
        SVC__telemetry__prometheus__enabled: "true",
        OTEL_BSP_SCHEDULE_DELAY: "200",
        OTEL_BLRP_SCHEDULE_DELAY: "200",
        OTEL_METRIC_EXPORT_INTERVAL: "300"
      }
    })
  }, 120_000)

  afterAll(async () => {
    await svc?.stop()
    await receiver?.close()
  })

  it("is logged once, counted by signal and shown on /healthz, and svc keeps serving", async () => {
    const healthz = async () => (await svc.call<HealthBody>("GET", "/healthz")).body
    const failing = await eventually(healthz, (b) => b.telemetry?.metrics?.status === "failing")
    expect(failing.status).toBe("ok")
    expect(failing.telemetry?.metrics).toMatchObject({ status: "failing", error: "http 503" })
    expect(Object.keys(failing.telemetry ?? {}).sort()).toEqual(["logs", "metrics", "traces"])
    // The collector saw the attempts (Retry-After: 1 spaces the retries of a batch).
    expect(receiver.exports().some((e) => e.signal === "metrics")).toBe(true)

    const scrape = async () => (await fetch(`http://127.0.0.1:${svc.ports.metrics}/metrics`)).text()
    const text = await eventually(scrape, (t) =>
      /svc_telemetry_export_failures_total\{signal="metrics"\} [1-9]/.test(t)
    )
    expect(text).toMatch(/svc_telemetry_export_failures_total\{signal="metrics"\} [1-9]/)

    // Several failed attempts so far, one warning for the signal (the next one a minute later at the earliest).
    await eventually(healthz, (b) => (b.telemetry?.metrics?.failures ?? 0) >= 3)
    const warnings = svc
      .output()
      .split("\n")
      .filter((l) => l.includes("OTLP metrics export failed (http 503)"))
    expect(warnings).toHaveLength(1)
    // Nothing of the collector's answer or the exported data is in the line.
    expect(warnings[0]).not.toContain("retry-after")
    expect((await fetch(`http://127.0.0.1:${svc.ports.api}/ping`)).status).toBe(200)
  }, 120_000)
})
