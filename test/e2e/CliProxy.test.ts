/**
 * `cli signing-proxy` and `cli proxy` (spec 4.8) against an embedded-default `svc serve`, run in
 * the svc's working directory so they find `.svc/dev-keys/` (and the admin-api's `.svc/tls/`
 * certificate) by themselves: in this process (test/support/CliInProcess.ts: main.ts's layers,
 * exit codes and output), except one-shot mode, whose curl and wget write to the process's own
 * stdout and stderr, as `packages/cli/bin/cli` child processes. A token-less caller
 * reaches authenticated routes of the api and the admin-api through the signing proxy; bodies
 * stream both ways (each side waits for the other's first chunk, so a relay that buffered a whole
 * body would never finish); the port comes from the configured environment variable plus
 * 10 per clone; `/login-redirect`; the connection proxy forwards to `<upstream-base>/path?q`
 * with the connection, never the caller's Authorization; one-shot mode runs the real `curl` and
 * `wget`, passes their output and exit code through, and fails in one line for an unknown
 * connection without running the command.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { definition as plainDefinition, eventually, launch, rand, resources, type Svc } from "../support/Api.ts"
import { startCliInProcess } from "../support/CliInProcess.ts"
import { freePort, tempDir } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const bin = path.resolve(import.meta.dirname, "../../packages/cli/bin/cli")

let svc: Svc
let upstream: Upstream
let streaming: StreamingUpstream
let home: string
let apiUrl: string
let connectionId: string

interface Outcome {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

interface Running {
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exit: Promise<Outcome>
  /** Whether it has ended. */
  readonly ended: () => boolean
  /** SIGINT (a process) or its interruption (in process). */
  readonly interrupt: () => void
}

const running: Array<Running> = []

/**
 * Runs `cli` in the svc's directory with HOME set to `home`, `NO_COLOR=1` and `env`: in this
 * process, or as `bin/cli` (with the test process's environment besides) when `process`.
 */
const start = (args: ReadonlyArray<string>, env: Record<string, string> = {}, options: { process?: boolean } = {}) => {
  let ended = false
  const track = (run: Omit<Running, "ended">): Running => {
    const tracked = { ...run, ended: () => ended }
    run.exit.then(() => (ended = true))
    running.push(tracked)
    return tracked
  }
  if (options.process !== true) {
    return track(startCliInProcess(args, { cwd: svc.dir ?? "", home, env: { NO_COLOR: "1", ...env } }))
  }
  const child = spawn(bin, args, {
    cwd: svc.dir,
    env: {
      ...process.env,
      HOME: home,
      NO_COLOR: "1",
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`,
      ...env
    }
  })
  let stdout = ""
  let stderr = ""
  child.stdout?.on("data", (chunk) => (stdout += chunk))
  child.stderr?.on("data", (chunk) => (stderr += chunk))
  child.stdin?.end()
  const exit = new Promise<Outcome>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })))
  return track({ stdout: () => stdout, stderr: () => stderr, exit, interrupt: () => child.kill("SIGINT") })
}

/** A one-shot `cli proxy … curl|wget …`: a real process (the command writes to its stdout and stderr). */
const oneShot = (args: ReadonlyArray<string>) => start(args, {}, { process: true }).exit

/** Starts a listening command and answers its base URL, read from its start line on stderr. */
const serve = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const proc = start(args, env)
  const line = await eventually(
    async () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(proc.stderr()),
    (match) => match !== null || proc.ended(),
    30_000
  )
  if (line === null) throw new Error(`no start line; stderr:\n${proc.stderr()}`)
  return { url: line[1] ?? "", proc }
}

const lines = (text: string) => text.split("\n").filter((line) => line !== "")

/** A GET of `listener` + `target` with exactly `headers` (a forged Host included): status, body code. */
const forged = (listener: string, target: string, headers: Record<string, string>) =>
  new Promise<{ status: number; code: string | undefined }>((resolve, reject) => {
    const { hostname, port } = new URL(listener)
    const request = http.request({ host: hostname, port, path: target, headers, setHost: false }, (answer) => {
      let body = ""
      answer.setEncoding("utf8")
      answer.on("data", (chunk: string) => (body += chunk))
      answer.on("end", () => {
        let code: string | undefined
        try {
          code = (JSON.parse(body) as { code?: string }).code
        } catch {
          code = undefined
        }
        resolve({ status: answer.statusCode ?? 0, code })
      })
    })
    request.on("error", reject)
    request.end()
  })

/** The refusals SECURITY.md asks of a local listener acting with a credential (DNS rebinding, cross-site pages). */
const expectWebPagesRefused = async (listener: string, target: string) => {
  const own = new URL(listener).host
  const port = new URL(listener).port
  const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
    [{ host: `evil.example:${port}` }, "foreign_host"],
    [{ host: `127.0.0.1:${Number(port) + 1}` }, "foreign_host"],
    [{ host: own, origin: "https://evil.example" }, "cross_site_request"],
    [{ host: own, origin: "null" }, "cross_site_request"],
    [{ host: own, "sec-fetch-site": "cross-site" }, "cross_site_request"],
    [{ host: own, "sec-fetch-site": "same-site" }, "cross_site_request"]
  ]
  for (const [headers, code] of cases) {
    expect({ headers, ...(await forged(listener, target, headers)) }).toEqual({ headers, status: 403, code })
  }
}

/** An upstream the test drives chunk by chunk, and the last request it saw. */
interface StreamingUpstream {
  readonly origin: string
  /** Resolves with the first request chunk of the exchange since the last `rearm`. */
  firstChunk: Promise<string>
  readonly rearm: () => void
  /** Lets the upstream write its second response chunk and end. */
  releaseSecond: () => void
  /** The whole request body of the last exchange and its headers. */
  last: { body: string; headers: http.IncomingHttpHeaders } | undefined
  readonly close: () => Promise<void>
}

/**
 * An upstream that answers 200 with `first:<request body>` once the request ended, then holds
 * the response open until `releaseSecond`, then writes `|second` and ends.
 */
const startStreamingUpstream = async (): Promise<StreamingUpstream> => {
  let resolveFirst: (chunk: string) => void = () => {}
  let release: () => void = () => {}
  const state: StreamingUpstream = {
    origin: "",
    firstChunk: Promise.resolve(""),
    releaseSecond: () => release(),
    last: undefined,
    rearm: () => {
      state.firstChunk = new Promise((resolve) => (resolveFirst = resolve))
    },
    close: async () => {}
  }
  state.rearm()
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (chunk: Buffer) => {
      if (body === "") resolveFirst(chunk.toString())
      body += chunk.toString()
    })
    req.on("end", () => {
      state.last = { body, headers: req.headers }
      res.writeHead(200, { "content-type": "text/plain" })
      res.write(`first:${body}`)
      release = () => res.end("|second")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return Object.assign(state, {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  })
}

/**
 * A chunked upload through `url` to the streaming upstream: sends `part-1`, waits until the
 * upstream has it, sends `part-2`; reads the first answer chunk, then releases the second.
 * Answers status and whole body. Never finishes if either direction is buffered whole.
 */
const streamThrough = async (url: string, headers: Record<string, string>) => {
  streaming.rearm()
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers }, (res) => {
      let body = ""
      res.on("data", (chunk: Buffer) => {
        if (body === "") streaming.releaseSecond()
        body += chunk.toString()
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.write("part-1")
    streaming.firstChunk.then(() => req.end("part-2"), reject)
  })
}

beforeAll(async () => {
  svc = await launch("svc-cliproxy-", { env: { SVC__outbound__allow_private_networks: "true" } })
  upstream = await startUpstream()
  streaming = await startStreamingUpstream()
  home = await tempDir("svc-cliproxy-home-")
  apiUrl = `http://127.0.0.1:${svc.ports.api}`
  const r = resources(svc)
  const ns = await r.freshNamespace("cliproxy")
  const connector = await r.publishedConnector(ns, {
    definition: {
      ...plainDefinition("cliproxy"),
      proxy: {
        allowed_hosts: [`127.0.0.1:${upstream.port}`, streaming.origin.replace("http://", "")],
        allow_private_networks: true
      }
    }
  })
  connectionId = (await r.connection(connector.id)).id
}, 120_000)

afterEach(async () => {
  for (const proc of running.splice(0)) {
    if (!proc.ended()) proc.interrupt()
    await proc.exit
  }
})

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
  await streaming?.close()
  if (home !== undefined) await fs.rm(home, { recursive: true, force: true })
})

describe("cli signing-proxy", () => {
  it("a token-less caller reaches an authenticated api route; a caller's own Authorization is replaced", async () => {
    const direct = await fetch(`${apiUrl}/api/v1/auth/whoami`)
    expect(direct.status).toBe(401)
    const { url, proc } = await serve(["signing-proxy", "--proxyTo", "api", "--port", "0"], {})
    // --proxyTo api without config is the embedded default 8081: point it at this svc instead
    expect(proc.stderr()).toContain("-> api http://127.0.0.1:8081/")
    const { url: proxied } = await serve(["signing-proxy", "--proxyTo", apiUrl, "--port", "0"])
    const anonymous = await fetch(`${proxied}/api/v1/auth/whoami`)
    expect(anonymous.status).toBe(200)
    const whoami = (await anonymous.json()) as { actor: { externalId: string }; token: { service: string } }
    expect(whoami.actor.externalId).toBe("admin")
    expect(whoami.token.service).toBe("api")
    const forged = await fetch(`${proxied}/api/v1/connectors?limit=1`, { headers: { authorization: "Bearer forged" } })
    expect(forged.status).toBe(200)
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  })

  it("refuses a foreign Host and cross-site pages with 403; its own names and same-origin pass", async () => {
    const { url, proc } = await serve(["signing-proxy", "--proxyTo", apiUrl, "--port", "0"])
    await expectWebPagesRefused(url, "/api/v1/auth/whoami")
    const port = new URL(url).port
    for (const headers of [
      { host: `localhost:${port}` },
      { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}`, "sec-fetch-site": "same-origin" }
    ]) {
      expect((await forged(url, "/api/v1/auth/whoami", headers)).status).toBe(200)
    }
    expect(proc.stderr()).toContain("-> 403: this local proxy answers only requests addressed to 127.0.0.1:")
  })

  it("streams a chunked upload and a held-open answer both ways (through _proxy_raw to an upstream)", async () => {
    const { url, proc } = await serve(["signing-proxy", "--apiUrl", apiUrl, "--port", "0"])
    expect(proc.stderr()).toContain(`-> api ${apiUrl}/`)
    const answer = await streamThrough(`${url}/api/v1/connections/${connectionId}/_proxy_raw`, {
      "x-svc-upstream-url": `${streaming.origin}/upload`,
      "content-type": "text/plain"
    })
    expect(answer).toEqual({ status: 200, body: "first:part-1part-2|second" })
    expect(streaming.last?.headers.authorization).toBeUndefined()
    expect(streaming.last?.headers["transfer-encoding"]).toBe("chunked")
    await eventually(
      async () => proc.stderr(),
      (text) => text.includes(`POST /api/v1/connections/${connectionId}/_proxy_raw -> 200`),
      10_000
    )
  })

  it("--proxyTo admin-api (config server.admin_api) verifies the embedded default's own certificate", async () => {
    const config = path.join(home, `admin-${rand()}.yaml`)
    await fs.writeFile(config, `server:\n  admin_api: https://127.0.0.1:${svc.ports.adminApi}\n`)
    const { url, proc } = await serve(["signing-proxy", "--proxyTo", "admin-api", "--port", "0", "--config", config])
    expect(proc.stderr()).toContain(`(trusting ${path.join(svc.dir ?? "", ".svc/tls/admin-api.crt")})`)
    const reply = await fetch(`${url}/api/v1/auth/whoami`)
    expect(reply.status).toBe(200)
    expect(((await reply.json()) as { token: { service: string } }).token.service).toBe("admin-api")
  })

  it("the port is the configured environment variable's plus 10 per --clone; --enableLoginRedirect", async () => {
    const port = await freePort()
    const config = path.join(home, `port-${rand()}.yaml`)
    await fs.writeFile(config, "signing_proxy:\n  port:\n    env_var: CLIPROXY_TEST_PORT\n    default: 1\n")
    const { url, proc } = await serve(
      [
        "signing-proxy",
        "--proxyTo",
        apiUrl,
        "--clone",
        "2",
        "--config",
        config,
        "--enableLoginRedirect",
        "--marketplaceUrl",
        `http://127.0.0.1:${svc.ports.public}`
      ],
      { CLIPROXY_TEST_PORT: String(port - 20) }
    )
    expect(url).toBe(`http://127.0.0.1:${port}`)
    expect(proc.stderr()).toContain("port from $CLIPROXY_TEST_PORT + 10×2 (--clone)")
    const redirect = await fetch(`${url}/login-redirect?return_to=/after`, { redirect: "manual" })
    expect(redirect.status).toBe(302)
    const location = new URL(redirect.headers.get("location") ?? "")
    expect(`${location.origin}${location.pathname}`).toBe(`http://127.0.0.1:${svc.ports.public}/marketplace/login`)
    expect(location.searchParams.get("return_to")).toBe("/after")
    expect(location.searchParams.get("token")?.split(".")).toHaveLength(3)
  })

  it("an unusable port value is one line and exit 1; --port with --clone is a usage error", async () => {
    const bad = await start(["signing-proxy", "--proxyTo", apiUrl], { SVC_SIGNING_PROXY_PORT: "http" }).exit
    expect(bad.code).toBe(1)
    expect(lines(bad.stderr)).toEqual([
      'error: environment variable SVC_SIGNING_PROXY_PORT="http" is not a port (0-65535)'
    ])
    const usage = await start(["signing-proxy", "--port", "9000", "--clone", "1"]).exit
    expect(usage.code).toBe(1)
    expect(usage.stderr).toContain("--port and --clone are mutually exclusive")
  })
})

describe("cli proxy", () => {
  it("forwards 127.0.0.1:<port>/path?q to <upstream-base>/path?q through the connection", async () => {
    upstream.route("/base/items", (request) => ({
      status: 201,
      headers: { "content-type": "application/json", "x-upstream": "yes" },
      body: JSON.stringify({ method: request.method, body: request.body.toString() })
    }))
    const { url } = await serve([
      "proxy",
      "--connection",
      connectionId,
      "--upstream-base",
      `${upstream.origin}/base`,
      "--port",
      "0",
      "--apiUrl",
      apiUrl
    ])
    const reply = await fetch(`${url}/items?x=1&y=two`, {
      method: "POST",
      headers: { authorization: "Bearer caller-secret", "x-custom": "kept" },
      body: "payload"
    })
    expect(reply.status).toBe(201)
    expect(reply.headers.get("x-upstream")).toBe("yes")
    expect(await reply.json()).toEqual({ method: "POST", body: "payload" })
    const seen = upstream.seen().filter((request) => request.path === "/base/items")
    expect(seen).toHaveLength(1)
    expect(seen[0]?.url).toBe("/base/items?x=1&y=two")
    expect(seen[0]?.headers.authorization).toBeUndefined()
    expect(seen[0]?.headers["x-custom"]).toBe("kept")
    // an upstream answer that is an error passes through as it is
    expect((await fetch(`${url}/unrouted`)).status).toBe(404)
  })

  it("refuses a foreign Host and cross-site pages with 403 before anything reaches svc or the upstream", async () => {
    upstream.route("/base/rebound", () => ({ status: 200, body: "reached" }))
    const { url } = await serve([
      "proxy",
      "--connection",
      connectionId,
      "--upstream-base",
      `${upstream.origin}/base`,
      "--port",
      "0",
      "--apiUrl",
      apiUrl
    ])
    await expectWebPagesRefused(url, "/rebound")
    expect(upstream.seen().filter((request) => request.path === "/base/rebound")).toHaveLength(0)
    expect((await forged(url, "/rebound", { host: `[::1]:${new URL(url).port}` })).status).toBe(200)
    expect(upstream.seen().filter((request) => request.path === "/base/rebound")).toHaveLength(1)
  })

  it("streams both ways through _proxy_raw", async () => {
    const { url } = await serve([
      "proxy",
      "--connection",
      connectionId,
      "--upstream-base",
      streaming.origin,
      "--port",
      "0",
      "--apiUrl",
      apiUrl
    ])
    const answer = await streamThrough(`${url}/stream`, { "content-type": "text/plain" })
    expect(answer).toEqual({ status: 200, body: "first:part-1part-2|second" })
  })

  it("works as curl's forward proxy (-x): http:// URLs of the upstream host go through; other hosts and CONNECT are refused", async () => {
    upstream.route("/base/forwarded", (request) => ({
      status: 200,
      headers: { "content-type": "text/plain" },
      body: `forwarded ${request.method} ${request.url}`
    }))
    const { url } = await serve([
      "proxy",
      "--connection",
      connectionId,
      "--upstream-base",
      `${upstream.origin}/base`,
      "--port",
      "0",
      "--apiUrl",
      apiUrl
    ])
    const host = new URL(upstream.origin).host
    const curl = (args: ReadonlyArray<string>) =>
      new Promise<Outcome>((resolve) => {
        const child = spawn("curl", ["-s", "-x", url, ...args])
        let stdout = ""
        let stderr = ""
        child.stdout.on("data", (chunk) => (stdout += chunk))
        child.stderr.on("data", (chunk) => (stderr += chunk))
        child.on("close", (code) => resolve({ code, stdout, stderr }))
      })
    expect(await curl([`http://${host}/forwarded?via=proxy`])).toEqual({
      code: 0,
      stdout: "forwarded GET /base/forwarded?via=proxy",
      stderr: ""
    })
    const other = await curl(["-w", "%{http_code}", "http://elsewhere.invalid/forwarded"])
    expect(other.stdout).toContain("wrong_upstream_host")
    expect(other.stdout.endsWith("421")).toBe(true)
    // https:// through a proxy is a CONNECT tunnel: refused, curl fails instead of hanging
    const tunnel = await curl(["-S", "https://example.invalid/"])
    expect(tunnel.code).not.toBe(0)
    expect(tunnel.stderr).toContain("405")
  })

  it("one-shot: runs the real curl with its URL pointed at a local listener; output and exit 0 pass through", async () => {
    upstream.route("/v1/oneshot", (request) => ({
      status: 200,
      headers: { "content-type": "text/plain" },
      body: `hello ${request.query.get("who")} ${request.headers["x-test"]} ${request.method}`
    }))
    const out = await oneShot([
      "proxy",
      "--apiUrl",
      apiUrl,
      "--connection",
      connectionId,
      "curl",
      "-s",
      "-H",
      "X-Test: one",
      "-X",
      "PUT",
      `${upstream.origin}/v1/oneshot?who=curl`
    ])
    expect(out).toEqual({ code: 0, stdout: "hello curl one PUT", stderr: "" })
    const seen = upstream.seen().filter((request) => request.path === "/v1/oneshot")
    expect(seen.at(-1)?.url).toBe("/v1/oneshot?who=curl")
  })

  it("one-shot with --upstream-base: the command's URL path goes to that base (spec 4.8, flags first)", async () => {
    upstream.route("/base/oneshot", (request) => ({
      status: 200,
      headers: { "content-type": "text/plain" },
      body: `based ${request.query.get("who")}`
    }))
    const out = await oneShot([
      "proxy",
      "--apiUrl",
      apiUrl,
      "--connection",
      connectionId,
      "--upstream-base",
      `${upstream.origin}/base`,
      "curl",
      "-s",
      "https://api.example.invalid/oneshot?who=base"
    ])
    expect(out).toEqual({ code: 0, stdout: "based base", stderr: "" })
    expect(
      upstream
        .seen()
        .filter((request) => request.path === "/base/oneshot")
        .at(-1)?.url
    ).toBe("/base/oneshot?who=base")
  })

  it("one-shot: curl's exit code passes through (curl -f on an upstream 404 exits 22)", async () => {
    const out = await oneShot([
      "proxy",
      "--apiUrl",
      apiUrl,
      "--connection",
      connectionId,
      "curl",
      "-sf",
      `${upstream.origin}/missing`
    ])
    expect(out).toEqual({ code: 22, stdout: "", stderr: "" })
  })

  it("one-shot with wget", async () => {
    upstream.route("/v1/wget", () => ({ status: 200, body: "from wget" }))
    const out = await oneShot([
      "proxy",
      "--apiUrl",
      apiUrl,
      "--connection",
      connectionId,
      "wget",
      "-qO-",
      `${upstream.origin}/v1/wget`
    ])
    expect(out.code).toBe(0)
    expect(out.stdout).toBe("from wget")
  })

  it("one-shot: an unknown connection is one line and exit 6, and curl never runs", async () => {
    const before = upstream.seen().length
    const out = await oneShot([
      "proxy",
      "--apiUrl",
      apiUrl,
      "--connection",
      `cxn_${rand()}`,
      "curl",
      "-s",
      `${upstream.origin}/v1/oneshot`
    ])
    expect(out.code).toBe(6)
    expect(out.stdout).toBe("")
    expect(lines(out.stderr)).toHaveLength(1)
    expect(out.stderr).toMatch(/^error: connection cxn_[0-9a-f]+: 404 not_found: /)
    expect(upstream.seen().length).toBe(before)
  })

  it("an api that cannot be reached is one line and exit 3 before anything listens", async () => {
    const closed = await freePort()
    const out = await start([
      "proxy",
      "--apiUrl",
      `http://127.0.0.1:${closed}`,
      "--connection",
      connectionId,
      "--upstream-base",
      upstream.origin
    ]).exit
    expect(out.code).toBe(3)
    expect(lines(out.stderr)).toHaveLength(1)
    expect(out.stderr).toMatch(
      /^error: connection cxn_\w+: cannot reach the api at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/
    )
  })

  it("--help shows an example of each mode", async () => {
    const out = await start(["proxy", "--help"]).exit
    expect(out.code).toBe(0)
    expect(out.stdout).toContain("cli proxy --connection cxn_123 --upstream-base https://api.github.com")
    expect(out.stdout).toContain("cli proxy --connection cxn_123 curl -s https://api.github.com/user")
    const signing = await start(["signing-proxy", "--help"]).exit
    expect(signing.stdout).toContain("cli signing-proxy --proxyTo admin-api --clone 1 --enableLoginRedirect")
  })
})
