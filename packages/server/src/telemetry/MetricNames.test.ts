/**
 * Every metric svc defines is documented, and every documented metric is defined and exported:
 * the names of the metrics tables of docs/telemetry.md, docs/rate-limits.md and
 * docs/request-events.md against the metrics defined by the instruments of `Telemetry.ts`, the
 * exporter health counter and the Effect counters of the rate limiter and the request-event
 * writer — then each one, updated once, is in the Prometheus text of the one registry.
 */
import { readFileSync } from "node:fs"
import { Effect, Metric } from "effect"
import { describe, expect, it } from "vitest"
import { droppedEvents, writtenEvents } from "../events/RequestEventBuffer.ts"
import { reportFailures, ruleFailures, storeFailures } from "../ratelimit/RequestLimiter.ts"
import { makeExportHealth } from "./ExportHealth.ts"
import { definedMetrics, Meter, prometheusName } from "./Metrics.ts"
import { instruments } from "./Telemetry.ts"
import { prometheusText } from "./TelemetryLayer.ts"

const docs = new URL("../../../../docs/", import.meta.url)

/** The metric names in the first column of the first table under the `Metrics` heading of `file`. */
const documented = (file: string): Array<string> => {
  const lines = readFileSync(new URL(file, docs), "utf8").split("\n")
  const heading = lines.findIndex((l) => /^#{2,3} Metrics\s*$/.test(l))
  expect(heading, `${file} has a Metrics heading`).toBeGreaterThanOrEqual(0)
  const names: Array<string> = []
  let inTable = false
  for (const line of lines.slice(heading + 1)) {
    if (line.startsWith("|")) {
      inTable = true
      const first = line.split("|")[1] ?? ""
      for (const m of first.matchAll(/`([a-z_][a-z0-9_.*]*)`/g)) names.push(m[1]!)
    } else if (inTable) break
  }
  expect(names.length, `${file} lists metrics`).toBeGreaterThan(0)
  return names
}

describe("metric names", () => {
  const meter = new Meter()
  const all = instruments(meter)
  makeExportHealth(["traces", "metrics", "logs"], meter)
  const effectCounters = [storeFailures, ruleFailures, reportFailures, droppedEvents, writtenEvents]
  const inDocs = [...documented("telemetry.md"), ...documented("rate-limits.md"), ...documented("request-events.md")]
  // effect's own cluster gauges are documented as a family.
  const svcDocumented = new Set(inDocs.filter((n) => !n.startsWith("effect_")))

  it("every defined metric is documented, and every documented one is defined", () => {
    // Test files share a worker (`isolate: false`): the `t.*` instruments of Metrics.test.ts may be defined too.
    const defined = new Set(definedMetrics().filter((n) => !n.startsWith("t.")))
    expect([...defined].filter((n) => !svcDocumented.has(n)).sort()).toEqual([])
    expect([...svcDocumented].filter((n) => !defined.has(n)).sort()).toEqual([])
    expect(inDocs.filter((n) => n.endsWith("*"))).toEqual(["effect_cluster_*"])
  })

  it("every metric reaches the Prometheus text of the one registry", async () => {
    for (const instrument of Object.values(all)) {
      if (instrument.info.kind === "histogram") instrument.record(1, {})
      else instrument.add(1, {})
    }
    meter
      .instrument({ name: "svc.telemetry.export.failures.total", description: "", unit: "1", kind: "counter" })
      .add(1, { signal: "traces" })
    await Effect.runPromise(
      Effect.forEach(effectCounters, (c) => Metric.update(c, 1)).pipe(
        Effect.provideService(Metric.MetricRegistry, meter.registry)
      )
    )
    const text = prometheusText(meter)
    const typed = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1])
    expect(typed.sort()).toEqual([...svcDocumented].map(prometheusName).sort())
  })
})
