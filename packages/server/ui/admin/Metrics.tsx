/**
 * Charts from `POST /api/v1/metrics/query`: requests, errors and p95 latency per connector over a
 * chosen range, drawn as SVG lines (colours from `--svc-chart-*`), each with a table of its values
 * for screen readers and copying.
 */
import { useState } from "preact/hooks"
import { Chart, type Series } from "./Chart.tsx"
import { ErrorBox, useLoad } from "./common.tsx"
import { adminApi } from "./adminApi.ts"

const ranges = {
  "15m": { ms: 15 * 60_000, step: "1m" },
  "1h": { ms: 60 * 60_000, step: "1m" },
  "6h": { ms: 6 * 60 * 60_000, step: "5m" },
  "24h": { ms: 24 * 60 * 60_000, step: "15m" }
} as const
type RangeKey = keyof typeof ranges

/** The metrics screen: range and namespace, then the three charts. */
export const MetricsView = () => {
  const [range, setRange] = useState<RangeKey>("1h")
  const [namespace, setNamespace] = useState("root.**")
  const [applied, setApplied] = useState({ range, namespace })
  const [end, setEnd] = useState(() => Date.now())
  const start = end - ranges[applied.range].ms
  const result = useLoad(
    () =>
      adminApi.queryMetrics({
        range: {
          start: new Date(start).toISOString(),
          end: new Date(end).toISOString(),
          step: ranges[applied.range].step
        },
        namespace: applied.namespace,
        queries: [
          { refId: "requests", metric: "request_events", aggregation: "count", groupBy: ["connector_id"] },
          { refId: "errors", metric: "request_events.errors", aggregation: "count", groupBy: ["connector_id"] },
          { refId: "p95", metric: "request_events.duration_ms", aggregation: "p95", groupBy: ["connector_id"] }
        ]
      }),
    [applied, end]
  )
  const connectors = useLoad(() => adminApi.listConnectors({ limit: "100" }), [])
  const series = result.data?.series ?? []
  const nameOf = (s: Series) => {
    const id = s.labels.connector_id ?? ""
    if (id === "") return "(no connector)"
    return connectors.data?.items.find((c) => c.id === id)?.name ?? id
  }
  return (
    <section aria-label="Metrics">
      <h1>Metrics</h1>
      <form
        class="svc-row svc-card"
        onSubmit={(e) => {
          e.preventDefault()
          setApplied({ range, namespace })
          setEnd(Date.now())
        }}
      >
        <div class="svc-field">
          <label for="metrics-range">Range</label>
          <select id="metrics-range" value={range} onChange={(e) => setRange(e.currentTarget.value as RangeKey)}>
            {Object.keys(ranges).map((key) => (
              <option key={key} value={key}>
                Last {key}
              </option>
            ))}
          </select>
        </div>
        <div class="svc-field">
          <label for="metrics-namespace">Namespace</label>
          <input id="metrics-namespace" value={namespace} onInput={(e) => setNamespace(e.currentTarget.value)} />
        </div>
        <button type="submit" class="svc-button svc-primary">
          Refresh
        </button>
      </form>
      <ErrorBox error={result.error} />
      {result.loading && <p role="status">Loading…</p>}
      <div class="svc-card">
        <Chart
          title="Requests"
          unit="requests"
          summable
          series={series.filter((s) => s.refId === "requests")}
          start={start}
          end={end}
          nameOf={nameOf}
        />
        <Chart
          title="Errors"
          unit="errors"
          summable
          series={series.filter((s) => s.refId === "errors")}
          start={start}
          end={end}
          nameOf={nameOf}
        />
        <Chart
          title="p95 latency"
          unit="ms"
          summable={false}
          series={series.filter((s) => s.refId === "p95")}
          start={start}
          end={end}
          nameOf={nameOf}
        />
      </div>
    </section>
  )
}
