/**
 * The `cli` commands that call a running svc (spec 4.8) against an embedded-default `svc serve`,
 * run in the svc's working directory so they find `.svc/dev-keys/` by themselves: in this process
 * (test/support/CliInProcess.ts: main.ts's layers, exit codes and output) where a test is about
 * parsing and output, `packages/cli/bin/cli` as a child process where the process matters (SIGINT,
 * `HOME`, an exit code through the launcher). `list connectors|connections` in every output format with
 * filters, order and paging; `tasks get [--wait]`; `events tail` following new proxied requests
 * until SIGINT; configuration from `--config` and `~/.svc.yaml`; one-line errors and their exit
 * codes for an unreachable server, 401, 403 and 404; an example in every new command's help.
 */
import { spawn } from "node:child_process"
import { generateKeyPairSync } from "node:crypto"
import * as fs from "node:fs/promises"
import { createServer } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  type ConnectorBody,
  eventually,
  expectStatus,
  launch,
  rand,
  resources,
  type Svc
} from "../support/Api.ts"
import { startCliInProcess } from "../support/CliInProcess.ts"
import { tempDir } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const bin = path.resolve(import.meta.dirname, "../../packages/cli/bin/cli")

let svc: Svc
let upstream: Upstream
let home: string
let apiUrl: string

beforeAll(async () => {
  svc = await launch("svc-cli-", { env: { SVC__outbound__allow_private_networks: "true" } })
  upstream = await startUpstream()
  upstream.route("/", () => ({ status: 200, headers: { "content-type": "application/json" }, body: "{}" }))
  home = await tempDir("svc-cli-home-")
  apiUrl = `http://127.0.0.1:${svc.ports.api}`
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
  if (home !== undefined) await fs.rm(home, { recursive: true, force: true })
})

interface Outcome {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

interface Running {
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exit: Promise<Outcome>
  readonly interrupt: () => void
}

interface StartOptions {
  readonly cwd?: string
  readonly home?: string
  readonly input?: string
  readonly columns?: number
  /** Spawn `bin/cli` (default: run the command in this process). */
  readonly process?: boolean
}

/**
 * Runs `cli` in `cwd` (default: the svc's directory) with HOME set to `home`, `input` on stdin,
 * `NO_COLOR=1` and no `COLUMNS` unless `columns`: in this process, or as `bin/cli` when `process`.
 */
const start = (args: ReadonlyArray<string>, options: StartOptions = {}): Running => {
  if (options.process !== true) {
    return startCliInProcess(args, {
      cwd: options.cwd ?? svc.dir ?? "",
      home: options.home ?? home,
      env: { NO_COLOR: "1", ...(options.columns === undefined ? {} : { COLUMNS: String(options.columns) }) },
      ...(options.input === undefined ? {} : { input: options.input })
    })
  }
  // tables fit COLUMNS when it is set: the runner's own never leaks in
  const { COLUMNS: _runnerColumns, ...inherited } = process.env
  const child = spawn(bin, args, {
    cwd: options.cwd ?? svc.dir,
    env: {
      ...inherited,
      HOME: options.home ?? home,
      NO_COLOR: "1",
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`,
      ...(options.columns === undefined ? {} : { COLUMNS: String(options.columns) })
    }
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => (stdout += chunk))
  child.stderr.on("data", (chunk) => (stderr += chunk))
  child.stdin.end(options.input ?? "")
  const exit = new Promise<Outcome>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  )
  return { stdout: () => stdout, stderr: () => stderr, exit, interrupt: () => child.kill("SIGINT") }
}

/** Runs `cli` to its end against the svc's api (`api: false`: without `--apiUrl`). */
const cli = (args: ReadonlyArray<string>, options: StartOptions & { api?: boolean } = {}) =>
  start(options.api === false ? args : [...args, "--apiUrl", apiUrl], options).exit

const lines = (text: string) => text.split("\n").filter((line) => line !== "")
const jsonLines = <T>(text: string): Array<T> => lines(text).map((line) => JSON.parse(line) as T)

/** The stderr of a failure: exactly one line, `error: …`. */
const oneErrorLine = (outcome: Outcome): string => {
  const all = lines(outcome.stderr)
  expect(all, outcome.stderr).toHaveLength(1)
  expect(all[0]).toMatch(/^error: /)
  expect(outcome.stdout).toBe("")
  return all[0] ?? ""
}

const closedPort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const definition = (type: string) => ({
  type,
  auth: { type: "none" },
  proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
})

describe("cli list", () => {
  let ns: string
  let alpha1: ConnectorBody
  let alpha2: ConnectorBody
  let beta: ConnectorBody
  let connections: Array<ConnectionBody>

  beforeAll(async () => {
    const r = resources(svc)
    ns = await r.freshNamespace("cli")
    alpha1 = await r.publishedConnector(ns, { name: "alpha-1", definition: definition("alpha") })
    alpha2 = await r.publishedConnector(ns, { name: "alpha-2", definition: definition("alpha") })
    beta = await r.connector(ns, { name: "beta-1", definition: definition("beta") })
    connections = []
    for (const name of ["c-1", "c-2", "c-3"]) connections.push(await r.connection(alpha1.id, { name }))
  }, 60_000)

  it("list connectors -o json: --state and --type filter, one JSON array, nothing on stderr", async () => {
    const out = await cli([
      "list",
      "connectors",
      "--namespace",
      ns,
      "--state",
      "primary",
      "--type",
      "alpha",
      "-o",
      "json"
    ])
    expect(out.code, out.stderr).toBe(0)
    expect(out.stderr).toBe("")
    const items = JSON.parse(out.stdout) as Array<ConnectorBody>
    expect(items.map((c) => c.id).sort()).toEqual([alpha1.id, alpha2.id].sort())
    expect(items.every((c) => c.state === "primary" && c.type === "alpha")).toBe(true)
  })

  it("list connectors -o jsonl --order 'name DESC': one object per line in that order", async () => {
    const out = await cli(["list", "connectors", "--namespace", ns, "--order", "name DESC", "-o", "jsonl"])
    expect(out.code, out.stderr).toBe(0)
    expect(jsonLines<ConnectorBody>(out.stdout).map((c) => c.name)).toEqual(["beta-1", "alpha-2", "alpha-1"])
  })

  it("list connectors (table, the default): a header and aligned columns", async () => {
    const out = await cli(["list", "connectors", "--namespace", ns, "--order", "name ASC"])
    expect(out.code, out.stderr).toBe(0)
    const [header, ...rows] = lines(out.stdout)
    expect(header).toMatch(/^ID +NAME +NAMESPACE +TYPE +VERSION +STATE +CREATED$/)
    expect(rows).toHaveLength(3)
    for (const column of ["NAME", "NAMESPACE", "TYPE", "STATE", "CREATED"]) {
      const at = header?.indexOf(column) ?? -1
      for (const row of rows) expect(row[at - 1], `${column} in ${row}`).toBe(" ")
      for (const row of rows) expect(row[at], `${column} in ${row}`).not.toBe(" ")
    }
    expect(rows.map((row) => row.split(/ +/).slice(0, 2))).toEqual([
      [alpha1.id, "alpha-1"],
      [alpha2.id, "alpha-2"],
      [beta.id, "beta-1"]
    ])
    expect(rows[2]).toMatch(/ beta +1 +draft /)
  })

  it("follows cursors page by page with a progress line on stderr; --limit caps the total", async () => {
    const all = await cli(["list", "connectors", "--namespace", ns, "--pageSize", "1", "-o", "jsonl"])
    expect(all.code, all.stderr).toBe(0)
    expect(jsonLines<ConnectorBody>(all.stdout)).toHaveLength(3)
    expect(lines(all.stderr)).toEqual([
      "listing connectors: 2 so far (page 2)",
      "listing connectors: 3 so far (page 3)",
      "listed 3 connectors in 3 pages"
    ])
    const capped = await cli(["list", "connectors", "--namespace", ns, "--pageSize", "1", "--limit", "2", "-o", "json"])
    expect(capped.code, capped.stderr).toBe(0)
    expect((JSON.parse(capped.stdout) as Array<unknown>).length).toBe(2)
  })

  it("list connections: --connectorId, --state, every format", async () => {
    const json = await cli(["list", "connections", "--connectorId", alpha1.id, "--state", "configured", "-o", "json"])
    expect(json.code, json.stderr).toBe(0)
    expect((JSON.parse(json.stdout) as Array<ConnectionBody>).map((c) => c.id).sort()).toEqual(
      connections.map((c) => c.id).sort()
    )
    const jsonl = await cli(["list", "connections", "--namespace", ns, "--order", "name DESC", "-o", "jsonl"])
    expect(jsonLines<ConnectionBody>(jsonl.stdout).map((c) => c.name)).toEqual(["c-3", "c-2", "c-1"])
    const table = await cli(["list", "connections", "--connectorId", alpha1.id, "-o", "table", "--order", "name ASC"])
    const [header, ...rows] = lines(table.stdout)
    expect(header).toMatch(/^ID +NAME +NAMESPACE +CONNECTOR +VERSION +STATE +HEALTH +CREATED$/)
    expect(rows.map((row) => row.split(/ +/).slice(0, 7))).toEqual(
      connections.map((c) => [c.id, c.name, ns, alpha1.id, "1", "configured", "healthy"])
    )
    // a terminal of 60 columns (COLUMNS): the widest columns give way, every line fits
    const narrow = await cli(["list", "connections", "--connectorId", alpha1.id, "--order", "name ASC"], {
      columns: 60
    })
    const narrowLines = lines(narrow.stdout)
    expect(narrowLines).toHaveLength(connections.length + 1)
    for (const line of narrowLines) expect(line.length).toBeLessThanOrEqual(60)
    expect(narrowLines[1]).toContain("…")
    const none = await cli(["list", "connections", "--connectorId", alpha1.id, "--state", "disconnected"])
    expect(none.code).toBe(0)
    expect(none.stdout).toBe("")
    expect(none.stderr).toBe("no connections\n")
  })
})

describe("cli tasks get", () => {
  it("--wait follows a disconnect-all to completed with a progress bar; without it prints the state", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("clitask")
    const connector = await r.publishedConnector(ns, { definition: definition("task") })
    for (let i = 0; i < 5; i++) await r.connection(connector.id)
    const { taskId } = expectStatus<{ taskId: string }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`, { body: {} }),
      202
    )
    const waited = await cli(["tasks", "get", taskId, "--wait", "--interval", "200ms"])
    expect(waited.code, waited.stderr).toBe(0)
    const task = JSON.parse(waited.stdout) as { id: string; state: string; progress?: { total: number; done: number } }
    expect(task).toMatchObject({ id: taskId, state: "completed", progress: { total: 5, done: 5 } })
    expect(lines(waited.stderr).at(-1)).toBe("[##############################] 5/5 100% disconnect_all completed")

    const table = await cli(["tasks", "get", taskId, "-o", "table"])
    expect(table.code, table.stderr).toBe(0)
    expect(lines(table.stdout).slice(0, 4)).toEqual([
      `id        ${taskId}`,
      "type      disconnect_all",
      "state     completed",
      "progress  5/5"
    ])
  })

  it("an unknown task is one line and exit 6 (404)", async () => {
    const out = await cli(["tasks", "get", `tsk_${rand()}`])
    expect(out.code).toBe(6)
    expect(oneErrorLine(out)).toMatch(/^error: get task tsk_[0-9a-f]+: 404 not_found: /)
  })
})

describe("cli events tail", () => {
  let connectionId: string

  const proxyCall = async (suffix: string) =>
    expectStatus(
      await svc.call("POST", `/api/v1/connections/${connectionId}/_proxy`, {
        body: { url: `${upstream.origin}/tail/${suffix}`, method: "GET" }
      }),
      200
    )

  /** Waits until the running tail printed `count` lines on stdout. */
  const printed = (tail: Running, count: number) =>
    eventually(
      async () => lines(tail.stdout()),
      (all) => all.length >= count,
      30_000
    )

  beforeAll(async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("clitail")
    const connector = await r.publishedConnector(ns, { definition: definition("tail") })
    connectionId = (await r.connection(connector.id)).id
  }, 60_000)

  it("-o jsonl prints the newest events, then each new one once, oldest first, until SIGINT", async () => {
    await proxyCall("a")
    await proxyCall("b")
    await eventually(
      async () =>
        expectStatus<{ items: Array<unknown> }>(
          await svc.call("GET", `/api/v1/metrics/request-events?connectionId=${connectionId}`),
          200
        ).items.length,
      (n) => n === 2
    )
    // a real process: SIGINT ends it with 130
    const tail = start(
      ["events", "tail", "--connectionId", connectionId, "-o", "jsonl", "--interval", "200ms", "--apiUrl", apiUrl],
      { process: true }
    )
    expect((await printed(tail, 2)).length).toBe(2)
    await proxyCall("c")
    await proxyCall("d")
    const all = await printed(tail, 4)
    tail.interrupt()
    const outcome = await tail.exit
    expect(outcome.code).toBe(130)
    const events = jsonLines<{ id: string; connection_id: string; path: string; timestamp: string }>(outcome.stdout)
    expect(events.map((e) => e.path)).toEqual(["/tail/a", "/tail/b", "/tail/c", "/tail/d"])
    expect(new Set(events.map((e) => e.id)).size).toBe(4)
    expect(events.every((e) => e.connection_id === connectionId)).toBe(true)
    expect(all).toHaveLength(4)
    expect(outcome.stderr).toBe("")
  })

  it("the table line is compact; filters apply; -n 1 starts with only the newest", async () => {
    const tail = start([
      "events",
      "tail",
      "--connectionId",
      connectionId,
      "--statusCodeRange",
      "200-299",
      "--response_source",
      "upstream",
      "-n",
      "1",
      "--interval",
      "200ms",
      "--apiUrl",
      apiUrl
    ])
    const first = await printed(tail, 1)
    expect(first).toHaveLength(1)
    expect(first[0]).toMatch(
      new RegExp(
        `^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{3}  GET     200  upstream +\\d+ms  ${connectionId}  127\\.0\\.0\\.1:\\d+/tail/d$`
      )
    )
    await proxyCall("e")
    const after = await printed(tail, 2)
    tail.interrupt()
    await tail.exit
    expect(after[1]).toMatch(/\/tail\/e$/)
  })

  it("a filter the server would refuse is a usage error before any call", async () => {
    const out = await cli(["events", "tail", "--statusCodeRange", "500-200"])
    expect(out.code).toBe(1)
    expect(out.stderr).toContain("--statusCodeRange")
    expect(out.stdout).toBe("")
  })
})

describe("cli configuration and errors", () => {
  it("finds the api and key from --config or ~/.svc.yaml when run outside the svc directory", async () => {
    const config = [
      `admin_private_key_path: ${path.join(svc.dir ?? "", ".svc/dev-keys/jwt-private.pem")}`,
      "server:",
      `  api: ${apiUrl}`
    ].join("\n")
    const configPath = path.join(home, "cli.yaml")
    await fs.writeFile(configPath, config)
    // real processes: the second one finds ~/.svc.yaml through the process's HOME
    const viaFlag = await cli(["list", "connectors", "--config", configPath, "--limit", "1", "-o", "json"], {
      cwd: home,
      api: false,
      process: true
    })
    expect(viaFlag.code, viaFlag.stderr).toBe(0)
    expect(JSON.parse(viaFlag.stdout)).toHaveLength(1)

    const otherHome = await tempDir("svc-cli-home2-")
    try {
      await fs.writeFile(path.join(otherHome, ".svc.yaml"), config)
      const viaHome = await cli(["list", "connectors", "--limit", "1", "-o", "jsonl"], {
        cwd: otherHome,
        home: otherHome,
        api: false,
        process: true
      })
      expect(viaHome.code, viaHome.stderr).toBe(0)
      expect(lines(viaHome.stdout)).toHaveLength(1)
    } finally {
      await fs.rm(otherHome, { recursive: true, force: true })
    }
  })

  it("sign-jwt --admin and verify-jwt find the embedded default's key by themselves", async () => {
    const signed = await cli(["sign-jwt", "--admin"], { api: false })
    expect(signed.code, signed.stderr).toBe(0)
    const token = signed.stdout.trim()
    const whoami = expectStatus<{ actor: { externalId: string } }>(
      await svc.call("GET", "/api/v1/auth/whoami", { token }),
      200
    )
    expect(whoami.actor.externalId).toBe("admin")
    const verified = await cli(["verify-jwt"], { api: false, input: signed.stdout })
    expect(verified.code, verified.stderr).toBe(0)
    expect(JSON.parse(verified.stdout)).toMatchObject({ header: { alg: "RS256" }, claims: { sub: "admin" } })
  })

  it("sign-jwt --actorId for an actor that does not exist: the 401 says how to create it", async () => {
    const signed = await cli(["sign-jwt", "--actorId", "ops", "--apis", "api"], { api: false })
    expect(signed.code, signed.stderr).toBe(0)
    const response = await svc.call("GET", "/api/v1/auth/whoami", { token: signed.stdout.trim() })
    expect(response.status).toBe(401)
    expect(response.body).toEqual({
      error: "the token names an unknown actor: create it (POST /api/v1/actors) or list it in system_auth.actors",
      code: "unknown_actor"
    })
  })

  it("without a key anywhere: one line naming every way to give one, exit 1", async () => {
    const out = await cli(["list", "connectors"], { cwd: home })
    expect(out.code).toBe(1)
    const line = oneErrorLine(out)
    expect(line).toContain("--privateKeyPath")
    expect(line).toContain(".svc/dev-keys/jwt-private.pem")
  })

  it("an unreachable server is one line and exit 3", async () => {
    const out = await cli(["list", "connections", "--apiUrl", `http://127.0.0.1:${await closedPort()}`], {
      api: false,
      process: true
    })
    expect(out.code).toBe(3)
    expect(oneErrorLine(out)).toMatch(
      /^error: list connections: cannot reach the api at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/
    )
  })

  it("a key the server does not know is 401, exit 4", async () => {
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      publicKeyEncoding: { type: "spki", format: "pem" },
      privateKeyEncoding: { type: "pkcs8", format: "pem" }
    })
    const keyPath = path.join(home, "stranger.pem")
    await fs.writeFile(keyPath, privateKey)
    const out = await cli(["list", "connectors", "--privateKeyPath", keyPath])
    expect(out.code).toBe(4)
    expect(oneErrorLine(out)).toMatch(/^error: list connectors: 401 /)
  })

  it("an actor without the permission is 403, exit 5", async () => {
    const externalId = `cli-none-${rand()}`
    expectStatus(
      await svc.call("POST", "/api/v1/actors", { body: { externalId, namespace: "root", permissions: [] } }),
      201
    )
    const out = await cli(["list", "connectors", "--actorId", externalId])
    expect(out.code).toBe(5)
    expect(oneErrorLine(out)).toMatch(/^error: list connectors: 403 /)
  })

  it("every new command's --help shows its flags and an example", async () => {
    const helps: Array<[ReadonlyArray<string>, ReadonlyArray<string>]> = [
      [
        ["list", "connectors"],
        ["--state", "--type", "--order", "--limit", "--output", "--apiUrl", "cli list connectors"]
      ],
      [
        ["list", "connections"],
        ["--state", "--connectorId", "--order", "--limit", "cli list connections"]
      ],
      [
        ["tasks", "get"],
        ["--wait", "--interval", "cli tasks get tsk_"]
      ],
      [
        ["events", "tail"],
        [
          "--connectionId",
          "--connectorId",
          "--namespace",
          "--statusCodeRange",
          "--response_source",
          "--interval",
          "cli events tail"
        ]
      ]
    ]
    for (const [command, needles] of helps) {
      const out = await cli([...command, "--help"], { api: false })
      expect(out.code, out.stderr).toBe(0)
      expect(out.stdout).toContain("EXAMPLES")
      for (const needle of needles) expect(out.stdout, `${command.join(" ")} --help`).toContain(needle)
    }
  })
})
