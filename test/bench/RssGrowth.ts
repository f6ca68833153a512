/**
 * Memory of the svc process over many proxied requests (issue 16: RSS flat, at most 30 MB of
 * growth over 100,000 requests after warm-up). A fixed count of requests, `connections` in
 * flight on keep-alive sockets, from an in-process undici pool: the warm-up count first (JIT,
 * caches, pools and buffers reach their working size), then the resident set is read, then the
 * measured count, then the resident set again after the requests settled.
 */
import { Pool } from "undici"
import { rssMb } from "./ProcessUsage.ts"

export interface RssGrowthOptions {
  readonly pid: number
  readonly url: string
  readonly method: "GET" | "POST"
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | undefined
  readonly warmupRequests: number
  readonly requests: number
  readonly connections: number
}

export interface RssGrowth {
  readonly requests: number
  readonly errors: number
  readonly seconds: number
  readonly rssAfterWarmupMb: number
  readonly rssAfterMb: number
  readonly growthMb: number
}

/** The goal of issue 16: growth of at most this much over 100,000 requests after warm-up. */
export const rssGrowthGoalMb = 30

const send = async (pool: Pool, options: RssGrowthOptions, count: number): Promise<number> => {
  const url = new URL(options.url)
  const path = url.pathname + url.search
  let next = 0
  let errors = 0
  const worker = async () => {
    while (next < count) {
      next++
      try {
        const response = await pool.request({
          method: options.method,
          path,
          headers: options.headers,
          ...(options.body === undefined ? {} : { body: options.body })
        })
        await response.body.dump()
        if (response.statusCode >= 400) errors++
      } catch {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: options.connections }, worker))
  return errors
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 1_000))

/** Runs the warm-up and the measured requests; undefined when `/proc` cannot be read. */
export const measureRssGrowth = async (options: RssGrowthOptions): Promise<RssGrowth | undefined> => {
  const pool = new Pool(new URL(options.url).origin, {
    connections: options.connections,
    keepAliveTimeout: 60_000,
    headersTimeout: 10_000,
    bodyTimeout: 10_000
  })
  try {
    await send(pool, options, options.warmupRequests)
    await settle()
    const before = rssMb(options.pid)
    const started = Date.now()
    const errors = await send(pool, options, options.requests)
    const seconds = (Date.now() - started) / 1000
    await settle()
    const after = rssMb(options.pid)
    if (before === undefined || after === undefined) return undefined
    return {
      requests: options.requests,
      errors,
      seconds,
      rssAfterWarmupMb: before,
      rssAfterMb: after,
      growthMb: after - before
    }
  } finally {
    await pool.destroy()
  }
}
