/**
 * The runner transport's mutual TLS with real processes on PostgreSQL (issue item 4): a worker
 * and an api process with `cluster.tls` (certificates from `svc certs --out`); a raw TCP client,
 * a TLS client without a certificate and one with a certificate of another CA are refused before
 * any message is read; an attacker built from the public effect library, who reaches the runner
 * port and nothing else, gets a one-hour cool-down executed on a plain runner (capped by the
 * entity at the connector's max_retry_after) but nothing on the TLS runner; afterwards the api
 * process still proxies and starts a migration through the TLS runner. Loopback only, bounded.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as path from "node:path"
import * as tls from "node:tls"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { caller, definition, eventually, expectStatus, resources, type Svc } from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import {
  freePort,
  freePorts,
  type Ports,
  portEnv,
  type RunningSvc,
  runSvc,
  startSvc,
  waitForHttp
} from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const attackerMain = fileURLToPath(new URL("../support/attackerClient.ts", import.meta.url))

interface Attack {
  readonly ok: boolean
  readonly result?: { readonly consecutive429s: number; readonly until: number | null }
  readonly error?: string
}

/** Runs the attacker against a runner; its own 10 s timeout bounds it, the kill at 30 s is a backstop. */
const attack = (port: number, connectionId: string): Promise<Attack> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [attackerMain, "127.0.0.1", String(port), connectionId], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8")
    })
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString("utf8")
    })
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.once("exit", () => {
      clearTimeout(timer)
      const line = out.split("\n").find((l) => l.startsWith("{"))
      if (line === undefined) reject(new Error(`attacker printed no answer:\n${out}\n${err}`))
      else resolve(JSON.parse(line) as Attack)
    })
  })

/** What a peer saw: bytes received before the runner closed the connection, and the error if any. */
interface Refusal {
  readonly received: Buffer
  readonly secureConnect: boolean
  readonly error: string | undefined
}

/** Connects with `connect`, writes `payload` once connected, and waits (at most 20 s) for the close. */
const probe = (connect: () => net.Socket, connectEvent: "connect" | "secureConnect", payload: Buffer) =>
  new Promise<Refusal>((resolve, reject) => {
    const socket = connect()
    const chunks: Array<Buffer> = []
    let secureConnect = false
    let error: string | undefined
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error("the runner kept the connection open for 20 s"))
    }, 20_000)
    socket.on(connectEvent, () => {
      if (connectEvent === "secureConnect") secureConnect = true
      socket.write(payload)
    })
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("error", (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message
    })
    socket.on("close", () => {
      clearTimeout(timer)
      resolve({ received: Buffer.concat(chunks), secureConnect, error })
    })
  })

// A runner protocol frame would be a length-prefixed msgpack message; any bytes will do.
const bytes = Buffer.from(`00000020${"de".repeat(32)}`, "hex")

describe("the runner transport with mutual TLS (worker and api on PostgreSQL)", () => {
  let workspace: ProductionWorkspace | undefined
  let plainWorkspace: ProductionWorkspace | undefined
  const processes: Array<RunningSvc> = []
  let upstream: Upstream | undefined
  let certs = ""
  let otherCerts = ""
  let runnerPort = 0
  let plainRunnerPort = 0
  let ports: Ports
  let svc: Svc

  const pem = (dir: string, file: string) => fs.readFile(path.join(dir, file), "utf8")

  const startWorker = async (dir: string) => {
    const healthPort = await freePort()
    const port = await freePort()
    const worker = startSvc(["serve", "--service", "worker"], {
      cwd: dir,
      env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(port) }
    })
    processes.push(worker)
    await waitForHttp(`http://127.0.0.1:${healthPort}/ping`, worker)
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status,
      (status) => status === 200
    )
    return port
  }

  beforeAll(async () => {
    workspace = await productionWorkspace("svc-e2e-cluster-tls-")
    const dir = workspace.dir
    certs = path.join(dir, "certs")
    otherCerts = path.join(dir, "other-ca")
    for (const out of [certs, otherCerts]) {
      const made = await runSvc(["certs", "--out", out], { cwd: dir })
      expect(made.code, made.output).toBe(0)
      expect(made.output).toContain(`cluster: { tls: { ca: ${out}/ca.pem, cert: ${out}/runner.pem`)
    }
    await workspace.writeConfig([
      "outbound: { allow_private_networks: true }",
      "cluster: { tls: { ca: certs/ca.pem, cert: certs/runner.pem, key: certs/runner-key.pem } }"
    ])
    const migrated = await runSvc(["migrate"], { cwd: dir })
    expect(migrated.code, migrated.output).toBe(0)
    runnerPort = await startWorker(dir)
    ports = await freePorts()
    const api = startSvc(["serve", "--service", "api"], { cwd: dir, env: portEnv(ports) })
    processes.push(api)
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, api)
    const token = await workspace.opsToken()
    svc = {
      ports,
      adminToken: token,
      output: () => api.output(),
      call: caller(ports, token),
      sign: async () => token,
      stop: async () => {
        await api.stop()
      }
    }

    // The same deployment without cluster.tls, on its own database: a plain runner on loopback.
    plainWorkspace = await productionWorkspace("svc-e2e-cluster-plain-")
    await plainWorkspace.writeConfig()
    const plainMigrated = await runSvc(["migrate"], { cwd: plainWorkspace.dir })
    expect(plainMigrated.code, plainMigrated.output).toBe(0)
    plainRunnerPort = await startWorker(plainWorkspace.dir)
  }, 180_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop("SIGKILL")))
    await upstream?.close()
    await workspace?.close()
    await plainWorkspace?.close()
  }, 60_000)

  it("a raw TCP client that writes bytes gets no answer and is disconnected", async () => {
    const seen = await probe(() => net.connect(runnerPort, "127.0.0.1"), "connect", bytes)
    // At most a TLS alert record (content type 21), never a runner message.
    expect(seen.received.length === 0 || seen.received[0] === 21, seen.received.toString("hex")).toBe(true)
  }, 30_000)

  it("TLS without a client certificate, or with one of another CA, is refused at the handshake", async () => {
    const ca = await pem(certs, "ca.pem")
    const foreign = { cert: await pem(otherCerts, "runner.pem"), key: await pem(otherCerts, "runner-key.pem") }
    // TLS 1.2: the client's handshake itself fails, nothing is ever written.
    for (const credentials of [{}, foreign]) {
      const seen = await probe(
        () => tls.connect({ host: "127.0.0.1", port: runnerPort, ca, maxVersion: "TLSv1.2", ...credentials }),
        "secureConnect",
        bytes
      )
      expect(seen.secureConnect).toBe(false)
      expect(seen.error).toBeDefined()
      expect(seen.received.length).toBe(0)
    }
    // TLS 1.3 (the default): the server's verdict arrives after the client's Finished; the peer is
    // told `certificate required` / `unknown ca` and closed, and receives no application data.
    const noCert = await probe(() => tls.connect({ host: "127.0.0.1", port: runnerPort, ca }), "secureConnect", bytes)
    expect(noCert.error).toBe("ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED")
    expect(noCert.received.length).toBe(0)
    const otherCa = await probe(
      () => tls.connect({ host: "127.0.0.1", port: runnerPort, ca, ...foreign }),
      "secureConnect",
      bytes
    )
    expect(otherCa.received.length).toBe(0)
    // The runner's own certificate, from the right CA, is accepted (the handshake completes).
    const own = { cert: await pem(certs, "runner.pem"), key: await pem(certs, "runner-key.pem") }
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = tls.connect({ host: "127.0.0.1", port: runnerPort, ca, ...own })
      socket.once("secureConnect", () => {
        resolve(socket.authorized)
        socket.destroy()
      })
      socket.once("error", () => resolve(false))
    })
    expect(accepted).toBe(true)
  }, 60_000)

  it("the issue's attacker cools a connection down through a plain runner, and gets nothing done with TLS", async () => {
    const connectionId = "cxn_attacked00000000000000000"
    const started = Date.now()
    const plain = await attack(plainRunnerPort, connectionId)
    expect(plain.ok, plain.error).toBe(true)
    expect(plain.result?.consecutive429s).toBe(1)
    // The one-hour Retry-After is capped by the entity at the spec default max_retry_after (15m).
    const until = plain.result?.until ?? 0
    expect(until).toBeGreaterThan(started + 14 * 60_000)
    expect(until).toBeLessThanOrEqual(Date.now() + 15 * 60_000)

    const refused = await attack(runnerPort, connectionId)
    expect(refused.ok).toBe(false)
    const stored = (on: ProductionWorkspace) =>
      Effect.runPromise(
        on.sql<{ readonly consecutive429s: number }>`
          SELECT consecutive_429s FROM connection_controls WHERE connection_id = ${connectionId}`
      )
    // The plain runner executed the report (its state row); the TLS runner's database has none.
    expect(await stored(plainWorkspace!)).toEqual([{ consecutive429s: 1 }])
    expect(await stored(workspace!)).toEqual([])
  }, 60_000)

  it("afterwards the api process still proxies and starts a migration through the TLS runner", async () => {
    upstream = await startUpstream()
    upstream.route("/json", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":1}' }))
    const r = resources(svc)
    const ns = await r.freshNamespace("clustertls")
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
      }
    })
    const created = await r.connection(connector.id, { credentials: { api_key: "k-123" } })
    const answer = await fetch(`http://127.0.0.1:${ports.api}/api/v1/connections/${created.id}/_proxy_raw`, {
      headers: { authorization: `Bearer ${svc.adminToken}`, "x-svc-upstream-url": `${upstream.origin}/json` }
    })
    expect(answer.status).toBe(200)
    expect(await answer.json()).toEqual({ ok: 1 })

    const v2 = expectStatus<{ version: number }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, {
        body: {
          definition: {
            ...definition("demo", "api_key"),
            auth: { type: "api_key", placement: "bearer" },
            proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
          }
        }
      }),
      201
    )
    await r.publish(connector.id, v2.version)
    const started = expectStatus<{ task_id: string }>(
      await svc.call("POST", `/api/v1/connections/${created.id}/_migrate_version`, {
        body: { target_version: v2.version }
      }),
      202
    )
    expect(started.task_id).toMatch(/^tsk_/)
    const moved = await eventually(
      async () =>
        expectStatus<{ connectorVersion: number }>(await svc.call("GET", `/api/v1/connections/${created.id}`), 200),
      (connection) => connection.connectorVersion === v2.version
    )
    expect(moved.connectorVersion).toBe(v2.version)
  }, 90_000)
})
