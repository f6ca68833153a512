/**
 * A summary of a V8 `.cpuprofile` (what `node --cpu-prof` writes): self time per function and per
 * area (the svc folder, the package, Node's internals, GC), so a profile of the svc process can be
 * read in a terminal and quoted in docs/performance.md.
 */
import * as fs from "node:fs"

interface ProfileNode {
  readonly id: number
  readonly callFrame: {
    readonly functionName: string
    readonly url: string
    readonly lineNumber: number
  }
  readonly children?: ReadonlyArray<number>
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
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
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as Profile
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
