/**
 * The metrics screen's line chart: several series over [start, end) drawn as SVG lines (colours
 * from `--svc-chart-*`), with a table of the values for screen readers and copying.
 */
export interface Point {
  readonly timestamp: string
  readonly value: number
}

export interface Series {
  readonly refId: string
  readonly metric: string
  readonly aggregation: string
  readonly labels: Readonly<Record<string, string>>
  readonly points: ReadonlyArray<Point>
}

const width = 640
const height = 180
const pad = { left: 44, right: 12, top: 10, bottom: 22 }

const formatValue = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(1))

/** One line chart of several series over [start, end). */
export const Chart = (props: {
  readonly title: string
  readonly unit: string
  readonly series: ReadonlyArray<Series>
  readonly start: number
  readonly end: number
  readonly nameOf: (series: Series) => string
  /** Counts add up to a total; a latency does not. */
  readonly summable: boolean
}) => {
  const max = Math.max(1, ...props.series.flatMap((s) => s.points.map((p) => p.value)))
  const x = (t: number) => pad.left + ((t - props.start) / (props.end - props.start)) * (width - pad.left - pad.right)
  const y = (v: number) => height - pad.bottom - (v / max) * (height - pad.top - pad.bottom)
  const total = props.series.reduce((n, s) => n + s.points.reduce((m, p) => m + p.value, 0), 0)
  const id = props.title.toLowerCase().replace(/[^a-z0-9]+/g, "-")
  return (
    <figure class="svc-chart" data-testid={`chart-${id}`}>
      <figcaption class="svc-name">{props.title}</figcaption>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-labelledby={`${id}-desc`}
        class="svc-chart-svg"
        data-series={props.series.length}
      >
        <title id={`${id}-desc`}>
          {props.title}: {props.series.length} series, max {formatValue(max)} {props.unit}
        </title>
        <line class="svc-chart-axis" x1={pad.left} y1={y(0)} x2={width - pad.right} y2={y(0)} />
        <line class="svc-chart-axis" x1={pad.left} y1={pad.top} x2={pad.left} y2={y(0)} />
        <text class="svc-chart-label" x={pad.left - 6} y={y(max) + 4} text-anchor="end">
          {formatValue(max)}
        </text>
        <text class="svc-chart-label" x={pad.left - 6} y={y(0)} text-anchor="end">
          0
        </text>
        <text class="svc-chart-label" x={pad.left} y={height - 4}>
          {new Date(props.start).toLocaleTimeString()}
        </text>
        <text class="svc-chart-label" x={width - pad.right} y={height - 4} text-anchor="end">
          {new Date(props.end).toLocaleTimeString()}
        </text>
        {props.series.map((s, index) => {
          const points = s.points.map((p) => `${x(Date.parse(p.timestamp)).toFixed(1)},${y(p.value).toFixed(1)}`)
          return (
            <g key={`${s.refId}-${index}`} class={`svc-chart-series-${index % 6}`}>
              {points.length > 1 && <polyline points={points.join(" ")} />}
              {s.points
                .filter((p) => p.value > 0)
                .map((p) => (
                  <circle key={p.timestamp} cx={x(Date.parse(p.timestamp))} cy={y(p.value)} r={2.5} />
                ))}
            </g>
          )
        })}
      </svg>
      <ul class="svc-chart-legend">
        {props.series.map((s, index) => (
          <li key={`${s.refId}-${index}`} class={`svc-chart-series-${index % 6}`}>
            {props.nameOf(s)}
          </li>
        ))}
      </ul>
      <details>
        <summary>{props.summable ? `Values (${formatValue(total)} in total)` : "Values"}</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">Series</th>
              <th scope="col">Time</th>
              <th scope="col">{props.unit}</th>
            </tr>
          </thead>
          <tbody>
            {props.series.flatMap((s) =>
              s.points
                .filter((p) => p.value !== 0)
                .map((p) => (
                  <tr key={`${props.nameOf(s)}-${p.timestamp}`}>
                    <td>{props.nameOf(s)}</td>
                    <td>{new Date(p.timestamp).toLocaleString()}</td>
                    <td>{formatValue(p.value)}</td>
                  </tr>
                ))
            )}
          </tbody>
        </table>
      </details>
    </figure>
  )
}
