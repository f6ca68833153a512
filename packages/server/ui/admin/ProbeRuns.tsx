/**
 * A connection's probes in the admin UI: each probe of its connector version, run on demand, with
 * what the provider answered — status, duration and the raw error (host names, socket errors),
 * which the Connect UI never shows an end user.
 */
import type { ProbeResult } from "@svc/domain/Connection"
import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { Badge } from "../shared/components.tsx"
import { adminApi } from "./adminApi.ts"
import { ErrorBox, useLoad } from "./common.tsx"

export const ProbeRuns = (props: {
  readonly connectionId: string
  readonly connectorId: string
  readonly version: number
}) => {
  const version = useLoad(
    () => adminApi.getVersion(props.connectorId, props.version),
    [props.connectorId, props.version]
  )
  const [results, setResults] = useState<Readonly<Record<string, ProbeResult>>>({})
  const [error, setError] = useState<string | undefined>()
  const run = async (probeId: string) => {
    setError(undefined)
    try {
      const result = await adminApi.runProbe(props.connectorId, probeId, props.connectionId)
      setResults((before) => ({ ...before, [probeId]: result }))
    } catch (e) {
      setError(describeError(e))
    }
  }
  const probes = version.data?.definition.probes ?? []
  return (
    <div>
      <h3>Probes</h3>
      <ErrorBox error={error ?? version.error} />
      {probes.length === 0 ? (
        <p class="svc-muted">The connector version defines no probe.</p>
      ) : (
        <ul class="svc-list" data-testid="probe-runs">
          {probes.map((probe) => {
            const result = results[probe.id]
            return (
              <li key={probe.id} data-probe-id={probe.id}>
                <span class="svc-mono">{probe.id}</span>
                {result !== undefined && (
                  <>
                    <Badge tone={result.outcome === "success" ? "good" : "bad"} testId="probe-outcome">
                      {result.outcome}
                    </Badge>
                    <span class="svc-muted">
                      {result.statusCode === undefined ? "no answer" : `HTTP ${result.statusCode}`} ·{" "}
                      {result.durationMs} ms
                    </span>
                    {result.error !== undefined && (
                      <span class="svc-mono" data-testid="probe-error">
                        {result.error}
                      </span>
                    )}
                  </>
                )}
                <span class="svc-spacer" />
                <button
                  type="button"
                  class="svc-button"
                  aria-label={`Run probe ${probe.id}`}
                  onClick={() => run(probe.id)}
                >
                  Run
                </button>
              </li>
            )
          })}
        </ul>
      )}
    </div>
  )
}
