/**
 * The list-latency scenario (issue 3): svc on the embedded default seeded with many connections
 * through the public API (bounded concurrency), with a label mix that lets selectors pick about
 * 1 %, 5 %, 10 % and 99 % of the rows; and the list requests measured on it.
 */
import { Pool } from "undici"
import { nowMs, readToken, startSvcReady, svcWorkspace } from "./Ready.ts"

/** How the rows were created: count, wall time, rate and concurrency. */
export interface SeedResult {
  readonly what: string
  readonly count: number
  readonly ms: number
  readonly rate: number
  readonly concurrency: number
}

/** The seeded namespaces `root.bench.n0` … `n9`, below the connector's `root.bench`. */
export const seedNamespace = (index: number): string => `root.bench.n${index}`

/** Namespace and labels of seeded connection `i` of `count`. */
export const seedRow = (i: number, count: number): { namespace: string; labels: Record<string, string> } => ({
  namespace: seedNamespace(Math.min(9, Math.floor((i * 10) / count))),
  labels: {
    ...(i % 100 === 0 ? { tier: "gold" } : {}),
    team: `t${i % 10}`,
    env: Math.floor(i / 10) % 2 === 0 ? "prod" : "dev"
  }
})

const seedConcurrency = 4
const progressEvery = 1_000

const list = (selector: string) =>
  `/api/v1/connections?${new URLSearchParams(selector === "" ? { limit: "100" } : { labelSelector: selector, limit: "100" })}`

/** The measured requests: a label, the path, and the share of the seeded rows that match. */
export const listQueries: ReadonlyArray<{ readonly label: string; readonly path: string }> = [
  { label: "no selector (100%)", path: list("") },
  { label: "tier=gold (1%)", path: list("tier=gold") },
  { label: "team=t3,env=prod (5%)", path: list("team=t3,env=prod") },
  { label: "!tier (99%)", path: list("!tier") },
  { label: `svc/ns/-/id=${seedNamespace(3)} (10%)`, path: list(`svc/ns/-/id=${seedNamespace(3)}`) }
]

/** POSTs or PUTs JSON and answers the parsed body; throws unless the status is `expect`. */
export type Post = (method: "POST" | "PUT", urlPath: string, body: unknown, expect: number) => Promise<unknown>

export const poster =
  (pool: Pool, headers: Record<string, string>): Post =>
  async (method, urlPath, body, expect) => {
    const response = await pool.request({ method, path: urlPath, headers, body: JSON.stringify(body) })
    const text = await response.body.text()
    if (response.statusCode !== expect) {
      throw new Error(
        `${method} ${urlPath} answered ${response.statusCode} (expected ${expect}): ${text.slice(0, 300)}`
      )
    }
    return JSON.parse(text)
  }

/** Creates the namespaces, one published auth-`none` connector and `count` connections. */
export const seedConnections = async (
  origin: string,
  token: string,
  count: number,
  progress: (message: string) => void
): Promise<SeedResult> => {
  const pool = new Pool(origin, { connections: seedConcurrency, keepAliveTimeout: 60_000 })
  const post = poster(pool, { authorization: `Bearer ${token}`, "content-type": "application/json" })
  try {
    await post("POST", "/api/v1/namespaces", { path: "root.bench" }, 201)
    for (let n = 0; n < 10; n++) await post("POST", "/api/v1/namespaces", { path: seedNamespace(n) }, 201)
    const definition = { type: "bench", auth: { type: "none" } }
    const connector = (await post("POST", "/api/v1/connectors", { namespace: "root.bench", definition }, 201)) as {
      readonly id: string
    }
    await post("PUT", `/api/v1/connectors/${connector.id}/versions/1/_state`, { state: "primary" }, 200)
    progress(`  seeding ${count} connections into ${seedNamespace(0)} … n9, ${seedConcurrency} POSTs in flight`)
    const t0 = nowMs()
    let next = 0
    let done = 0
    const worker = async () => {
      while (next < count) {
        const i = next++
        await post("POST", "/api/v1/connections", { connectorId: connector.id, ...seedRow(i, count) }, 201)
        done++
        if (done % progressEvery === 0 || done === count) {
          const s = (nowMs() - t0) / 1000
          progress(`  seeded ${done}/${count} connections in ${s.toFixed(1)} s (${(done / s).toFixed(0)}/s)`)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(seedConcurrency, count) }, worker))
    const ms = nowMs() - t0
    return { what: "connections", count, ms, rate: (count / ms) * 1000, concurrency: seedConcurrency }
  } finally {
    await pool.destroy()
  }
}

/** A started, seeded svc: origin, the admin token header, the seeding figures and a stop. */
export const startSeededSvc = async (count: number, progress: (message: string) => void) => {
  const { dir, ports } = await svcWorkspace()
  const { svc } = await startSvcReady(dir, ports)
  const origin = `http://127.0.0.1:${ports.api}`
  const stop = async () => {
    await svc.stop()
  }
  try {
    const token = await readToken(dir)
    const seed = await seedConnections(origin, token, count, progress)
    return { origin, headers: { authorization: `Bearer ${token}` }, seed, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
