/**
 * A summary of a V8 `.cpuprofile` (what `node --cpu-prof` writes): self time per function and per
 * area (the svc folder, the package, Node's internals, GC), so a profile of the svc process can be
 * read in a terminal and quoted in docs/performance.md.
 */
import * as fs from "node:fs"
import { SourceMap } from "node:module"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber?: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** The source map beside a bundled file (`<file>.map`), read once; null when there is none. */
const sourceMaps = new Map<string, SourceMap | null>()
const sourceMapOf = (file: string): SourceMap | null => {
  let map = sourceMaps.get(file)
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(fs.readFileSync(`${file}.map`, "utf8")))
    } catch {
      map = null
    }
    sourceMaps.set(file, map)
  }
  return map
}

/**
 * A frame of the bundle (`dist/`, scripts/build.ts) as the frame of its source: the file and line
 * its source map names, so the areas and stages below read the sources' paths whether svc ran
 * from `dist/` or from the sources. Other frames, and a bundle without its map, are unchanged.
 */
export const originalFrame = (frame: CallFrame): CallFrame => {
  if (!frame.url.startsWith("file://") || !frame.url.includes("/dist/")) return frame
  const file = fileURLToPath(frame.url)
  const map = sourceMapOf(file)
  if (map === null) return frame
  const entry = map.findEntry(frame.lineNumber, frame.columnNumber ?? 0)
  if (!("originalSource" in entry) || typeof entry.originalSource !== "string") return frame
  const source = entry.originalSource.startsWith("file://")
    ? entry.originalSource
    : pathToFileURL(path.resolve(path.dirname(file), entry.originalSource)).href
  return { functionName: frame.functionName, url: source, lineNumber: entry.originalLine }
}

/** The profile in `file`, with the bundle's frames mapped to their sources ({@link originalFrame}). */
const readProfile = (file: string): Profile => {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as Profile
  return { ...profile, nodes: profile.nodes.map((node) => ({ ...node, callFrame: originalFrame(node.callFrame) })) }
}

/** Where a frame's code lives: `svc:<folder>`, `effect:<module>`, a package, `node:<module>`, or a V8 bucket. */
export const areaOf = (url: string, functionName: string): string => {
  if (url === "") {
    if (functionName === "(garbage collector)") return "(gc)"
    if (functionName === "(idle)" || functionName === "(program)" || functionName === "(root)") return functionName
    return "(native)"
  }
  const svc = /\/packages\/([^/]+)\/src\/(?:([^/]+)\/)?/.exec(url)
  if (svc !== null) return `svc:${svc[1]}/${svc[2] ?? ""}`
  const effect = /\/node_modules\/(effect|@effect\/[^/]+)\/(?:dist|src)\/(?:[^/]+\/)*?([^/]+?)\.[jt]s$/.exec(url)
  if (effect !== null) return `${effect[1]}:${effect[2]}`
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (pkg !== null) return pkg[1] as string
  if (url.startsWith("node:")) return url
  return url.replace(/^.*\//, "")
}

export interface ProfileSummary {
  readonly totalMs: number
  /** Busy time: everything but `(idle)`. */
  readonly busyMs: number
  readonly byArea: ReadonlyArray<{ readonly area: string; readonly ms: number }>
  readonly byFunction: ReadonlyArray<{ readonly name: string; readonly ms: number }>
}

/** Self time per area and per function of the profile in `file`. */
export const summarizeProfile = (file: string): ProfileSummary => {
  const profile = readProfile(file)
  const byId = new Map<number, ProfileNode>()
  for (const node of profile.nodes) byId.set(node.id, node)
  const selfUs = new Map<number, number>()
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i] as number
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
  const areas = new Map<string, number>()
  const functions = new Map<string, number>()
  let total = 0
  let idle = 0
  for (const [id, us] of selfUs) {
    const frame = (byId.get(id) as ProfileNode).callFrame
    total += us
    if (frame.functionName === "(idle)") idle += us
    const area = areaOf(frame.url, frame.functionName)
    areas.set(area, (areas.get(area) ?? 0) + us)
    const name = `${frame.functionName || "(anonymous)"} ${area}${frame.url === "" ? "" : `:${frame.lineNumber + 1}`}`
    functions.set(name, (functions.get(name) ?? 0) + us)
  }
  const sorted = (map: Map<string, number>) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).map(([key, us]) => ({ key, ms: us / 1000 }))
  return {
    totalMs: total / 1000,
    busyMs: (total - idle) / 1000,
    byArea: sorted(areas).map(({ key, ms }) => ({ area: key, ms })),
    byFunction: sorted(functions).map(({ key, ms }) => ({ name: key, ms }))
  }
}

/** The summary as text: the top `top` areas and functions, as a share of busy time. */
export const formatProfile = (summary: ProfileSummary, top = 25): string => {
  const pct = (ms: number) => `${((100 * ms) / summary.busyMs).toFixed(1).padStart(5)}%`
  const lines = [
    `busy ${summary.busyMs.toFixed(0)} ms of ${summary.totalMs.toFixed(0)} ms sampled`,
    "self time by area:"
  ]
  for (const { area, ms } of summary.byArea.filter((a) => a.area !== "(idle)").slice(0, top))
    lines.push(`  ${pct(ms)}  ${area}`)
  lines.push("self time by function:")
  for (const { name, ms } of summary.byFunction.filter((f) => !f.name.startsWith("(idle)")).slice(0, top))
    lines.push(`  ${pct(ms)}  ${name}`)
  return lines.join("\n")
}

/**
 * The part of a proxied request a frame's code belongs to, for the per-request ledger
 * (docs/performance.md "Where each request's CPU goes"); `undefined` for code that only serves
 * its caller (Node's streams, sockets, timers, natives): its time goes to the nearest caller
 * that has a part.
 */
export type Stage =
  | "caller's HTTP (node:http)"
  | "upstream exchange (undici, svc outbound)"
  | "request events (record, journal, insert)"
  | "rate limits and cool-downs (svc, Redis client)"
  | "proxy handler (svc: routing, auth, stages)"
  | "Effect runtime"
  | "garbage collection"
  | "start-up (module loading)"
  | "V8 (program)"
  | "event loop and other"

const eventFiles =
  /\/packages\/(?:server\/src\/events\/|server\/src\/proxy\/ProxyEvents\.ts|sql\/src\/(?:RequestEvent|Pglite|PgClient))/
const limitFiles =
  /\/packages\/(?:server\/src\/ratelimit\/|server\/src\/stores\/(?:RateLimit|CounterStore|CoolDown)|domain\/src\/(?:RateLimit|CoolDown|ReactiveLimit|RetryAfter))/
const eventPackages = new Set(["pg", "pg-protocol", "pg-pool", "pg-types", "@effect/sql-pg", "@electric-sql/pglite"])
const limitPackages = new Set(["ioredis", "redis-parser", "denque", "cluster-key-slot", "standard-as-callback"])
const callerModules = new Set(["node:_http_server", "node:_http_outgoing", "node:_http_incoming", "node:_http_common"])

/** The {@link Stage} a frame's own code belongs to. */
export const stageOf = (url: string, functionName: string): Stage | undefined => {
  if (url === "") {
    if (functionName === "(garbage collector)") return "garbage collection"
    if (functionName === "(program)") return "V8 (program)"
    return undefined
  }
  if (url.includes("/packages/")) {
    if (eventFiles.test(url)) return "request events (record, journal, insert)"
    if (limitFiles.test(url)) return "rate limits and cool-downs (svc, Redis client)"
    if (url.includes("/packages/server/src/outbound/")) return "upstream exchange (undici, svc outbound)"
    return "proxy handler (svc: routing, auth, stages)"
  }
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1]
  if (pkg !== undefined) {
    if (pkg === "undici") return "upstream exchange (undici, svc outbound)"
    if (eventPackages.has(pkg)) return "request events (record, journal, insert)"
    if (limitPackages.has(pkg)) return "rate limits and cool-downs (svc, Redis client)"
    if (pkg === "effect" && url.includes("/unstable/sql/")) return "request events (record, journal, insert)"
    if (pkg === "effect" || pkg.startsWith("@effect/")) return "Effect runtime"
    return undefined
  }
  if (url.endsWith("/test/bench/bareProxy.ts")) return "proxy handler (svc: routing, auth, stages)"
  if (callerModules.has(url)) return "caller's HTTP (node:http)"
  if (url.startsWith("node:internal/modules/")) return "start-up (module loading)"
  return undefined
}

/** Busy time per {@link Stage}: each sample goes to the innermost frame on its stack that has a stage. */
export const stageTimes = (file: string): { readonly busyMs: number; readonly byStage: ReadonlyMap<Stage, number> } => {
  const profile = readProfile(file)
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const stageOfNode = new Map<number, Stage | "(idle)">()
  const resolve = (id: number): Stage | "(idle)" => {
    const known = stageOfNode.get(id)
    if (known !== undefined) return known
    const frame = (byId.get(id) as ProfileNode).callFrame
    const up = parent.get(id)
    const stage =
      frame.functionName === "(idle)"
        ? "(idle)"
        : (stageOf(frame.url, frame.functionName) ?? (up === undefined ? "event loop and other" : resolve(up)))
    stageOfNode.set(id, stage)
    return stage
  }
  const byStage = new Map<Stage, number>()
  let busyUs = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const stage = resolve(profile.samples[i] as number)
    if (stage === "(idle)") continue
    const us = profile.timeDeltas[i] ?? 0
    busyUs += us
    byStage.set(stage, (byStage.get(stage) ?? 0) + us)
  }
  return { busyMs: busyUs / 1000, byStage: new Map([...byStage].map(([stage, us]) => [stage, us / 1000])) }
}

/** The ledger as text: per stage, its share of busy time and its µs of CPU per request over `requests`. */
export const formatStages = (times: ReturnType<typeof stageTimes>, requests: number): string => {
  const lines = [
    `CPU per request by stage (${requests} requests, ${((1000 * times.busyMs) / requests).toFixed(1)} µs busy each):`
  ]
  for (const [stage, ms] of [...times.byStage].sort((a, b) => b[1] - a[1]))
    lines.push(
      `  ${((100 * ms) / times.busyMs).toFixed(1).padStart(5)}%  ${((1000 * ms) / requests).toFixed(1).padStart(6)} µs  ${stage}`
    )
  return lines.join("\n")
}
