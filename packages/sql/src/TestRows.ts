/** Fixtures of the repository tests: fixed timestamps and the envelope columns of a resource row. */
import { jsonb } from "./ResourceRepo.ts"

/**
 * `at(seconds)`: 2025-01-01T00:00:00Z plus `seconds` and `ms` (a sub-second offset exercises
 * timestamp precision); `envelope`: the envelope columns of a row created at `createdAt` (default
 * `at(0)`) with these user labels and no annotations.
 */
export const fixtures = (ms = 0) => {
  const at = (seconds: number): Date => new Date(Date.UTC(2025, 0, 1) + seconds * 1000 + ms)
  const envelope = (namespace: string, name: string, createdAt: Date = at(0), labels: Record<string, string> = {}) => ({
    namespace,
    name,
    labels: jsonb(labels),
    annotations: jsonb({}),
    createdAt,
    updatedAt: createdAt
  })
  return { at, envelope }
}

/** The fixtures without a sub-second offset. */
export const { at, envelope } = fixtures()
