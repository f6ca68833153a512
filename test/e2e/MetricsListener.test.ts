/**
 * The Prometheus scrape listener, black-box (SECURITY.md "Observability endpoints are not public";
 * docs/telemetry.md "Prometheus"): with `telemetry.prometheus.enabled` the process serves
 * `GET /metrics` on `telemetry.prometheus.host:port` only — loopback by default, printed in the
 * start-up banner — and every service port answers `/metrics` with the 404 of any unknown path.
 * A scrape is neither an HTTP request in the metrics nor a span, and a request is counted once
 * (one listener, one store per process). `port: 0` works, processes on one host get their own
 * ports, and the listener closes with the process's drain.
 */
import * as https from "node:https"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, launch, type Svc } from "../support/Api.ts"
import { type OtlpReceiver, startHttpReceiver } from "../support/OtlpReceiver.ts"
import { freePort, freePorts, portEnv, type RunningSvc, startSvc, tempDir } from "../support/SvcProcess.ts"
import { seedEmbedded } from "../support/EmbeddedTemplate.ts"

interface Answer {
  readonly status: number
  readonly contentType: string
  readonly body: string
}

const getHttp = async (url: string): Promise<Answer> => {
  const response = await fetch(url, { signal: AbortSignal.timeout(5_000) })
  return {
    status: response.status,
    contentType: response.headers.get("content-type") ?? "",
    body: await response.text()
  }
}

/** admin-api speaks TLS with the self-signed development certificate. */
const getHttps = (url: string): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const request = https.get(url, { rejectUnauthorized: false, timeout: 5_000 }, (response) => {
      let body = ""
      response.on("data", (chunk: Buffer) => {
        body += chunk.toString("utf8")
      })
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, contentType: String(response.headers["content-type"]), body })
      )
    })
    request.on("error", reject)
  })

/** The samples of `metric` in a scrape: labels text and value. */
const samples = (text: string, metric: string) =>
  [...text.matchAll(new RegExp(`^${metric}(\\{[^}]*\\})? (\\S+)$`, "gm"))].map((m) => ({
    labels: m[1] ?? "",
    value: Number(m[2])
  }))

const total = (text: string, metric: string, labelFilter = "") =>
  samples(text, metric)
    .filter((s) => s.labels.includes(labelFilter))
    .reduce((n, s) => n + s.value, 0)

const bannerMetrics = (output: string) => /^ {2}metrics\s+http:\/\/([^:/\s]+):(\d+)\/metrics$/m.exec(output)

const waitForBanner = async (running: RunningSvc, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  while (!running.output().includes(" ready (") && Date.now() < deadline) {
    if (running.child.exitCode !== null) throw new Error(`svc exited early:\n${running.output()}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  if (!running.output().includes(" ready (")) throw new Error(`svc not ready:\n${running.output()}`)
  return running.output()
}

describe("the scrape listener of the embedded process", () => {
  let receiver: OtlpReceiver
  let svc: Svc
  const scrape = () => getHttp(`http://127.0.0.1:${svc.ports.metrics}/metrics`)
  const api = (p: string) => fetch(`http://127.0.0.1:${svc.ports.api}${p}`).then((r) => r.text())

  beforeAll(async () => {
    receiver = await startHttpReceiver()
    svc = await launch("svc-e2e-metrics-listener-", {
      env: {
        SVC__telemetry__enabled: "true",
        SVC__telemetry__exporter__protocol: "http/protobuf",
        SVC__telemetry__exporter__endpoint: receiver.endpoint,
        SVC__telemetry__exporter__insecure: "true",
        SVC__telemetry__prometheus__enabled: "true",
        OTEL_BSP_SCHEDULE_DELAY: "200",
        OTEL_BLRP_SCHEDULE_DELAY: "200"
      }
    })
  }, 120_000)

  afterAll(async () => {
    await svc?.stop()
    await receiver?.close()
  })

  it("a scrape is neither counted as a request nor traced; a request is counted once", async () => {
    await api("/openapi.json")
    await api("/openapi.json")
    const first = await scrape()
    expect(first.status).toBe(200)
    expect(first.contentType).toBe("text/plain; version=0.0.4; charset=utf-8")
    expect(first.body).toContain("# TYPE http_server_request_duration_seconds histogram")
    // One listener over the process's one store: each request once, whichever services run here.
    expect(total(first.body, "http_server_request_duration_seconds_count"), first.body).toBe(2)
    expect(total(first.body, "http_server_request_duration_seconds_count", 'svc_service="api"')).toBe(2)
    // Nothing is in flight while the scrape is answered: the scrape is not a request.
    const active = samples(first.body, "http_server_active_requests")
    expect(active.length).toBeGreaterThan(0)
    expect(active.every((s) => s.value === 0)).toBe(true)
    let last = first
    for (let i = 0; i < 5; i++) last = await scrape()
    expect(total(last.body, "http_server_request_duration_seconds_count")).toBe(2)
    expect(samples(last.body, "http_server_active_requests").every((s) => s.value === 0)).toBe(true)
    // The spans of the later requests arrive; none was ever made for a scrape.
    await api("/openapi.json?after-scrapes")
    const spans = await eventually(
      async () => receiver.spans(),
      (all) => all.filter((s) => s.kind === 2 && s.attributes["url.path"] === "/openapi.json").length >= 3,
      20_000
    )
    expect(spans.filter((s) => String(s.attributes["url.path"]).startsWith("/metrics"))).toEqual([])
    expect(spans.filter((s) => s.kind === 2).length).toBe(3)
  })

  it("listens on loopback only, at the address the banner prints", async () => {
    const printed = bannerMetrics(svc.output())
    expect(printed?.[1]).toBe("127.0.0.1")
    expect(Number(printed?.[2])).toBe(svc.ports.metrics)
    expect((await getHttp(`http://localhost:${svc.ports.metrics}/metrics`)).status).toBe(200)
    // Any other path of the listener is unknown.
    expect((await getHttp(`http://127.0.0.1:${svc.ports.metrics}/`)).status).toBe(404)
    expect((await getHttp(`http://127.0.0.1:${svc.ports.metrics}/metrics/x`)).status).toBe(404)
    // Through the machine's other addresses, nothing listens.
    const external = Object.values(os.networkInterfaces())
      .flat()
      .filter((a) => a !== undefined && !a.internal && a.family === "IPv4")
      .map((a) => a?.address)
    for (const address of external) {
      await expect(getHttp(`http://${address}:${svc.ports.metrics}/metrics`), String(address)).rejects.toThrow()
    }
  })

  it("answers /metrics on every service's port with the 404 of an unknown path", async () => {
    const { ports } = svc
    const services = [
      ["api", (p: string) => getHttp(`http://127.0.0.1:${ports.api}${p}`)],
      ["public", (p: string) => getHttp(`http://127.0.0.1:${ports.public}${p}`)],
      ["worker", (p: string) => getHttp(`http://127.0.0.1:${ports.worker}${p}`)],
      ["admin-api", (p: string) => getHttps(`https://localhost:${ports.adminApi}${p}`)]
    ] as const
    for (const [service, get] of services) {
      const unknown = await get("/no-such-path")
      expect(unknown.status, service).toBe(404)
      expect(await get("/metrics"), service).toEqual(unknown)
      expect(await get("/metrics?format=prometheus"), service).toEqual(unknown)
    }
  })
})

describe("scrape listeners of several processes on one host", () => {
  const dirs: Array<string> = []
  const processes: Array<RunningSvc> = []

  afterAll(async () => {
    for (const running of processes) await running.stop("SIGKILL")
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true })
  })

  const start = async (services: ReadonlyArray<string>, metricsPort: number) => {
    const dir = await tempDir("svc-e2e-metrics-listeners-")
    await seedEmbedded(dir)
    dirs.push(dir)
    const ports = await freePorts()
    const running = startSvc(["serve", ...services.flatMap((s) => ["--service", s])], {
      cwd: dir,
      env: {
        ...portEnv(ports),
        SVC__telemetry__prometheus__enabled: "true",
        SVC__telemetry__prometheus__port: String(metricsPort),
        SVC__http__drain_timeout: "2s"
      }
    })
    processes.push(running)
    return { ports, running }
  }

  it("port 0 gets a port printed in the banner; each process scrapes its own store; the drain closes it", async () => {
    const fixed = await freePort()
    const [a, b] = await Promise.all([start(["api", "public"], 0), start(["worker"], fixed)])
    const [outputA, outputB] = await Promise.all([waitForBanner(a.running), waitForBanner(b.running)])
    const portA = Number(bannerMetrics(outputA)?.[2])
    expect(portA).toBeGreaterThan(0)
    expect(Number(bannerMetrics(outputB)?.[2])).toBe(fixed)
    expect(portA).not.toBe(fixed)

    expect((await getHttp(`http://127.0.0.1:${a.ports.api}/no-such-path`)).status).toBe(404)
    expect((await getHttp(`http://127.0.0.1:${b.ports.worker}/no-such-path`)).status).toBe(404)
    const scrapeA = await eventually(
      () => getHttp(`http://127.0.0.1:${portA}/metrics`),
      (s) => s.body.includes("http_server_request_duration_seconds_count"),
      10_000
    )
    const scrapeB = await eventually(
      () => getHttp(`http://127.0.0.1:${fixed}/metrics`),
      (s) => s.body.includes("http_server_request_duration_seconds_count"),
      10_000
    )
    expect(total(scrapeA.body, "http_server_request_duration_seconds_count", 'svc_service="api"')).toBe(1)
    expect(scrapeA.body).not.toContain('svc_service="worker"')
    expect(total(scrapeB.body, "http_server_request_duration_seconds_count", 'svc_service="worker"')).toBe(1)
    expect(scrapeB.body).not.toContain('svc_service="api"')

    // SIGTERM: the listener closes with the services' drain, and the process exits 0.
    a.running.child.kill("SIGTERM")
    expect(await a.running.exited).toBe(0)
    expect(a.running.output()).toContain("http: drained")
    await expect(getHttp(`http://127.0.0.1:${portA}/metrics`)).rejects.toThrow()
    // The other process's listener is untouched.
    expect((await getHttp(`http://127.0.0.1:${fixed}/metrics`)).status).toBe(200)
  }, 120_000)
})
