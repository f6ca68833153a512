/**
 * The memory group (issue 16: RSS flat, at most 30 MB of growth over 100,000 proxied requests
 * after warm-up): svc on the embedded default in front of the bench upstream (the same connector
 * and connection as the proxy group), `_proxy_raw` `GET /json` from 64 keep-alive connections of
 * an in-process undici pool: 20,000 requests of warm-up, the resident set (`/proc`), 100,000
 * requests (`--quick`: 5,000 and 20,000), the resident set again after 1 s. Twice: with the heap
 * limits svc's launcher chooses (`packages/server/src/Launcher.ts`, the default), and with the
 * launcher turned off (`SVC_NODE_OPTIONS=`, Node's own sizing), which tells growth that is
 * garbage V8 has not yet collected from growth that stays (docs/performance.md "Memory").
 */
import { pin } from "./Cpu.ts"
import { proxyJsonRequest, rawRoute, startEmbeddedSvc, startUpstream } from "./Proxy.ts"
import { measureRssGrowth, type RssGrowth, rssGrowthGoalMb } from "./RssGrowth.ts"

export interface ProxyMemoryReport {
  readonly label: string
  readonly goalMb: number
  readonly result?: RssGrowth
  readonly skipped?: string
}

/** Seconds the group may take: twice start-up and set-up, then about 100,000 requests at 2,000/s or more. */
export const proxyMemoryBudgetS = 240

/** Both runs of the group: the launcher's heap limits (the default), then Node's own sizing. */
export const measureProxyMemory = async (options: {
  readonly quick: boolean
  readonly progress: (message: string) => void
}): Promise<ReadonlyArray<ProxyMemoryReport>> => [
  await measureOne(options, "svc _proxy_raw, embedded default, 64 connections", {}),
  await measureOne(options, "the same, launcher off (SVC_NODE_OPTIONS=, Node's heap sizing)", {
    SVC_NODE_OPTIONS: ""
  })
]

const measureOne = async (
  options: { readonly quick: boolean; readonly progress: (message: string) => void },
  label: string,
  env: Record<string, string>
): Promise<ProxyMemoryReport> => {
  const requests = options.quick ? 20_000 : 100_000
  const warmupRequests = options.quick ? 5_000 : 20_000
  options.progress(`proxy memory, ${label}: ${warmupRequests} requests of warm-up, then RSS over ${requests} requests`)
  const upstream = await startUpstream("generator")
  try {
    const svc = await startEmbeddedSvc(upstream.origin, env)
    try {
      pin(svc.pid, "servers")
      const shape = rawRoute(svc, svc.connections[0])(proxyJsonRequest)
      const result = await measureRssGrowth({
        pid: svc.pid as number,
        url: `${svc.origin}${shape.path}`,
        method: "GET",
        headers: shape.headers,
        warmupRequests,
        requests,
        connections: 64
      })
      if (result === undefined) return { label, goalMb: rssGrowthGoalMb, skipped: "/proc cannot be read" }
      options.progress(
        `  RSS ${result.rssAfterWarmupMb.toFixed(0)} -> ${result.rssAfterMb.toFixed(0)} MB, ${result.errors} errors`
      )
      return { label, goalMb: rssGrowthGoalMb, result }
    } finally {
      await svc.stop()
    }
  } catch (error) {
    return {
      label,
      goalMb: rssGrowthGoalMb,
      skipped: `failed: ${error instanceof Error ? error.message : String(error)}`
    }
  } finally {
    await upstream.stop()
  }
}

/** One run as printed. */
const formatRun = (report: ProxyMemoryReport): string => {
  if (report.result === undefined) return `  ${report.label}: ${report.skipped ?? "not run"}\n`
  const r = report.result
  const sign = r.growthMb >= 0 ? "+" : ""
  return (
    `  ${report.label}: ${r.requests} requests in ${r.seconds.toFixed(1)} s, ${r.errors} errors; ` +
    `RSS ${r.rssAfterWarmupMb.toFixed(0)} -> ${r.rssAfterMb.toFixed(0)} MB (${sign}${r.growthMb.toFixed(1)} MB: ` +
    `${r.growthMb <= report.goalMb ? "goal met" : "goal missed"})\n`
  )
}

/** The group as printed under the table. */
export const formatProxyMemory = (reports: ReadonlyArray<ProxyMemoryReport>): string =>
  `proxy memory (RSS of the svc process, after warm-up; goal: growth <= ${rssGrowthGoalMb} MB)\n` +
  reports.map(formatRun).join("")
