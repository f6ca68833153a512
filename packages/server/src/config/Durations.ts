/** Duration keys of the configuration in milliseconds, with their defaults and minimums. */
import { parseDuration } from "@svc/domain/Duration"

/** A decoded duration string in milliseconds, or the default when absent. */
export const durationMs = (text: string | undefined, fallback: number): number =>
  text === undefined ? fallback : (parseDuration(text) ?? fallback)

/** A duration key in milliseconds: the default when absent, a problem when below `minimumMs`. */
export const intervalMs = (
  text: string | undefined,
  at: string,
  fallback: number,
  minimumMs: number,
  problems: Array<string>
): number => {
  const ms = durationMs(text, fallback)
  if (ms < minimumMs) problems.push(`${at}: must be at least ${minimumMs}ms`)
  return Math.max(minimumMs, ms)
}

/** `http.drain_timeout` default: in-flight requests get 8 s after SIGTERM/SIGINT. */
export const defaultDrainTimeoutMs = 8_000

/**
 * After the drain, the rest of the shutdown (request-event flush, stores) gets this long; the
 * process exits within `http.drain_timeout` + this (10 s by default), by force if it must.
 */
export const shutdownGraceMs = 2_000

/** `migrations.hook_timeout`: default 5 s, from 10 ms to 60 s (a hook holds a sandbox thread). */
export const hookTimeoutMs = (text: string | undefined, problems: Array<string>): number => {
  const ms = intervalMs(text, "migrations.hook_timeout", 5_000, 10, problems)
  if (ms > 60_000) problems.push("migrations.hook_timeout: must be at most 60s")
  return Math.min(ms, 60_000)
}

/** `appMetrics.requestEvents.retention` and `appMetrics.resourceSnapshots.retention` default: 30 days. */
export const defaultRetentionMs = 30 * 24 * 60 * 60 * 1000

/** The shortest retention accepted: one hour. */
export const minimumRetentionMs = 60 * 60 * 1000
