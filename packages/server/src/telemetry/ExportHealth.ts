/**
 * Health of the OTLP exporters (docs/telemetry.md "Exporter health"). Every export attempt goes
 * through the HttpClient of `observe`, below effect's exporter (which retries a transient failure
 * up to three times, then pauses that signal for 60 s and drops what it had buffered): an attempt
 * answered outside 2xx, or not answered, counts one `svc.telemetry.export.failures.total{signal}`
 * and marks the signal failing; a warning is logged at most once a minute per signal, and one
 * line when it recovers. `/healthz` shows the state of each signal (`report`). A 503 or 429 with
 * `Retry-After` holds the next attempt of that signal back for the time asked (capped at 60 s).
 */
import { Clock, Duration, Effect, Result } from "effect"
import { Headers, HttpClient, type HttpClientError, type HttpClientResponse } from "effect/http"
import type { Meter } from "./Metrics.ts"

export type Signal = "traces" | "metrics" | "logs"

/** The state of one signal's exporter, as `/healthz` shows it. */
export interface ExporterState {
  readonly status: "ok" | "failing"
  /** The last failure: `http <status>` or the transport error's kind; never a header or body. */
  readonly error?: string
  /** Failed attempts since the process started. */
  readonly failures: number
}

const logEveryMs = 60_000
const maxHoldMs = 60_000

interface Tracked {
  failing: boolean
  error: string | undefined
  failures: number
  lastLogged: number | undefined
  holdUntil: number
}

const signalOf = (url: string): Signal | undefined => {
  if (url.endsWith("/v1/traces")) return "traces"
  if (url.endsWith("/v1/metrics")) return "metrics"
  if (url.endsWith("/v1/logs")) return "logs"
  return undefined
}

/** The exporters' health over `meter` (where the failure counter is recorded; undefined: not counted). */
export const makeExportHealth = (signals: ReadonlyArray<Signal>, meter: Meter | undefined) => {
  const failures = meter?.instrument({
    name: "svc.telemetry.export.failures.total",
    description: "OTLP export attempts that failed (non-2xx answer or no answer), by signal.",
    unit: "1",
    kind: "counter"
  })
  const tracked = new Map<Signal, Tracked>(
    signals.map((s) => [s, { failing: false, error: undefined, failures: 0, lastLogged: undefined, holdUntil: 0 }])
  )

  const failed = (signal: Signal, error: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      const t = tracked.get(signal)
      if (t === undefined) return Effect.void
      t.failing = true
      t.error = error
      t.failures++
      failures?.add(1, { signal })
      if (t.lastLogged !== undefined && at - t.lastLogged < logEveryMs) return Effect.void
      t.lastLogged = at
      return Effect.logWarning(
        `OTLP ${signal} export failed (${error}); ${t.failures} failed attempt(s) so far; retried, then paused 60 s (logged at most once a minute)`
      )
    })

  const succeeded = (signal: Signal) =>
    Effect.suspend(() => {
      const t = tracked.get(signal)
      if (t === undefined || !t.failing) return Effect.void
      t.failing = false
      t.error = undefined
      return Effect.logInfo(`OTLP ${signal} export recovered`)
    })

  /** Holds the attempt back while a `Retry-After` of its signal runs. */
  const held = (signal: Signal) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      const wait = (tracked.get(signal)?.holdUntil ?? 0) - at
      return wait > 0 ? Effect.sleep(Duration.millis(wait)) : Effect.void
    })

  const noteRetryAfter = (signal: Signal, response: HttpClientResponse.HttpClientResponse) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      if (response.status !== 429 && response.status !== 503) return Effect.void
      const header = response.headers["retry-after"]
      if (header === undefined) return Effect.void
      const parsed = Headers.parseRetryAfter(header)
      if (Result.isFailure(parsed)) return Effect.void
      const ms = Math.min(Duration.toMillis(Headers.retryAfterDelay(parsed.success, at)), maxHoldMs)
      const t = tracked.get(signal)
      if (t !== undefined) t.holdUntil = at + ms
      return Effect.void
    })

  /** `client` with every export attempt observed. */
  const observe = <E extends HttpClientError.HttpClientError, R>(client: HttpClient.HttpClient.With<E, R>) =>
    HttpClient.transform(client, (effect, request) => {
      const signal = signalOf(request.url)
      if (signal === undefined) return effect
      return held(signal).pipe(
        Effect.andThen(effect),
        Effect.tap((response) => {
          if (response.status >= 200 && response.status <= 299) return succeeded(signal)
          return Effect.andThen(noteRetryAfter(signal, response), failed(signal, `http ${response.status}`))
        }),
        Effect.tapError((error) => failed(signal, error.reason._tag))
      )
    })

  /** The state of each exported signal. */
  const report = (): Record<string, ExporterState> => {
    const out: Record<string, ExporterState> = {}
    for (const [signal, t] of tracked) {
      out[signal] = t.failing
        ? { status: "failing", error: t.error ?? "unknown", failures: t.failures }
        : { status: "ok", failures: t.failures }
    }
    return out
  }

  return { observe, report }
}

export type ExportHealth = ReturnType<typeof makeExportHealth>
