/**
 * The Grafana dashboard (docs/grafana/svc-proxy-oauth2.json) against what svc exposes: every
 * panel's expression and every template query, with Grafana's variables put in, parses as PromQL
 * (Prometheus's own grammar, `@prometheus-io/lezer-promql`, and `promtool check rules` when
 * Debian's `prometheus` package is installed, as in CI), and every metric one names is a series
 * name of svc's Prometheus exposition, built from the one registry with every instrument and
 * Effect counter recorded once. `promtool check metrics` lints that exposition too.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { parser } from "@prometheus-io/lezer-promql"
import { droppedEvents, writtenEvents } from "@svc/server/events/RequestEventBuffer"
import { reportFailures, ruleFailures, storeFailures } from "@svc/server/ratelimit/RequestLimiter"
import { makeExportHealth } from "@svc/server/telemetry/ExportHealth"
import { Meter } from "@svc/server/telemetry/Metrics"
import { instruments } from "@svc/server/telemetry/Telemetry"
import { prometheusText } from "@svc/server/telemetry/TelemetryLayer"
import { Effect, Metric } from "effect"
import { describe, expect, it } from "vitest"

const dashboard = JSON.parse(
  readFileSync(new URL("../../docs/grafana/svc-proxy-oauth2.json", import.meta.url), "utf8")
) as { panels: Array<Panel>; templating: { list: Array<{ name: string; query?: unknown }> } }

interface Panel {
  readonly title?: string
  readonly panels?: Array<Panel>
  readonly targets?: Array<{ readonly expr?: string }>
}

/** Every expression of the dashboard: panel targets, then template queries (`label_values(m, l)` → `m`). */
const expressions = (): Array<{ readonly where: string; readonly expr: string }> => {
  const out: Array<{ where: string; expr: string }> = []
  const walk = (panels: ReadonlyArray<Panel>) => {
    for (const p of panels) {
      if (p.panels !== undefined) walk(p.panels)
      for (const t of p.targets ?? []) if (t.expr !== undefined) out.push({ where: `panel "${p.title}"`, expr: t.expr })
    }
  }
  walk(dashboard.panels)
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === "object" && v.query !== null ? (v.query as { query?: string }).query : v.query
    const m = typeof q === "string" ? /^label_values\(\s*([^,)]+)/.exec(q) : null
    if (m !== null) out.push({ where: `variable $${v.name}`, expr: m[1]!.trim() })
  }
  return out
}

/** Grafana's variables as a query would run: any service, the `team` label, a 5-minute window. */
const substitute = (expr: string) =>
  expr.replaceAll("$__rate_interval", "5m").replaceAll("$service", ".*").replaceAll("$label", "team")

/** The metric names an expression selects, and whether Prometheus's grammar found an error. */
const selected = (expr: string): { names: Array<string>; error: boolean } => {
  const tree = parser.parse(expr)
  const names: Array<string> = []
  let error = false
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) error = true
      if (node.name === "VectorSelector") {
        const id = node.node.getChild("Identifier")
        if (id !== null) names.push(expr.slice(id.from, id.to))
      }
    }
  })
  return { names, error }
}

/** svc's exposition with every metric recorded once (labels as the dashboard filters on them). */
const exposition = async (): Promise<string> => {
  const meter = new Meter()
  const all = instruments(meter)
  makeExportHealth(["traces"], meter)
  const labels = {
    "http.request.method": "GET",
    "http.response.status_code": 200,
    "svc.request.type": "proxy",
    "svc.service": "api",
    "http.route": "/ping",
    "svc.label.team": "red",
    "svc.queue.task_type": "archive",
    result: "success",
    reason: "invalid_grant",
    revocation_kind: "access_token"
  }
  for (const instrument of Object.values(all)) {
    if (instrument.info.kind === "histogram") instrument.record(0.2, labels)
    else instrument.add(1, labels)
  }
  meter.instruments.get("svc.telemetry.export.failures.total")?.add(1, { signal: "traces" })
  await Effect.runPromise(
    Effect.forEach([storeFailures, ruleFailures, reportFailures, droppedEvents, writtenEvents], (c) =>
      Metric.update(c, 1)
    ).pipe(Effect.provideService(Metric.MetricRegistry, meter.registry))
  )
  return prometheusText(meter)
}

const promtool = spawnSync("promtool", ["--version"]).status === 0

describe("Grafana dashboard", () => {
  it("every panel parses as PromQL and names only metrics svc exposes", async () => {
    const text = await exposition()
    const exposed = new Set([...text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/gm)].map((m) => m[1]!))
    const found = expressions()
    expect(found.length).toBeGreaterThanOrEqual(21)
    const problems: Array<string> = []
    for (const { where, expr } of found) {
      const { names, error } = selected(substitute(expr))
      if (error) problems.push(`${where}: does not parse: ${expr}`)
      if (names.length === 0) problems.push(`${where}: selects no metric: ${expr}`)
      for (const name of names) if (!exposed.has(name)) problems.push(`${where}: ${name} is not exposed`)
    }
    expect(problems).toEqual([])
    // One series per name and label set: no metric defined twice (effect keys a series by its description too).
    const series = text
      .split("\n")
      .filter((l) => l !== "" && !l.startsWith("#"))
      .map((l) => l.slice(0, l.lastIndexOf(" ")))
    expect(series.filter((s, i) => series.indexOf(s) !== i)).toEqual([])
  })

  it.runIf(promtool)("promtool accepts every expression and lints the exposition clean", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "svc-grafana-"))
    try {
      const rules = expressions().map(
        ({ expr }, i) => `      - record: dashboard:expr_${i}\n        expr: ${JSON.stringify(substitute(expr))}`
      )
      const file = path.join(dir, "rules.yml")
      writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join("\n")}\n`)
      const checked = spawnSync("promtool", ["check", "rules", file], { encoding: "utf8" })
      expect(checked.stderr + checked.stdout).toContain(`SUCCESS: ${rules.length} rules found`)
      expect(checked.status).toBe(0)
      const linted = spawnSync("promtool", ["check", "metrics"], { input: await exposition(), encoding: "utf8" })
      expect(linted.stdout + linted.stderr).toBe("")
      expect(linted.status).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
