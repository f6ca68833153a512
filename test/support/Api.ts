/**
 * Black-box helpers for the resource-model tests: one embedded-default `svc serve` per test file,
 * JSON calls on the api (HTTP) and admin-api (HTTPS, self-signed) services, RS256 token signing
 * with the dev key the embedded default wrote, and the response shapes the tests read.
 */
import { importPKCS8, SignJWT } from "jose"
import { randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Agent, fetch as undiciFetch } from "undici"
import { expect } from "vitest"
import { seedEmbedded } from "./EmbeddedTemplate.ts"
import { freePorts, type Ports, portEnv, type RunningSvc, startSvc, tempDir, waitForHttp } from "./SvcProcess.ts"

/** The standard error body (API-CONVENTIONS "Errors"). */
export interface ErrorBody {
  readonly error: string
  readonly code: string
  readonly details?: ReadonlyArray<{ readonly field: string; readonly message: string }>
}

/** The envelope every resource response carries. */
export interface Resource {
  readonly id: string
  readonly name: string
  readonly namespace: string
  readonly labels: Record<string, string>
  readonly annotations: Record<string, string>
  readonly createdAt: string
  readonly updatedAt: string
}

/** A namespace response. */
export interface NamespaceBody extends Resource {
  readonly path: string
}

/** A connector response. */
export interface ConnectorBody extends Resource {
  readonly version: number
  readonly state: string
  readonly type: string
}

/** A connector version response. */
export interface VersionBody {
  readonly connectorId: string
  readonly version: number
  readonly state: string
  readonly definition: { readonly type: string; readonly auth: { readonly type: string } }
  readonly createdAt: string
  readonly updatedAt: string
}

/** A connection response. */
export interface ConnectionBody extends Resource {
  readonly connectorId: string
  readonly connectorVersion: number
  readonly state: string
  readonly healthState: string
  readonly setupStepId: string | null
  readonly configuration: Record<string, unknown>
}

/** A rate-limit response. */
export interface RateLimitBody extends Resource {
  readonly definition: Record<string, unknown>
}

/** A list page. */
export interface PageBody<T> {
  readonly items: ReadonlyArray<T>
  readonly cursor?: string
}

/** One search hit (admin-api). */
export interface SearchHitBody {
  readonly resourceType: string
  readonly id: string
  readonly name: string
  readonly namespace: string
  readonly match: string
  readonly labels: Record<string, string>
}

/** A response: status and parsed JSON body (`undefined` when there is none). */
export interface Reply<T> {
  readonly status: number
  readonly body: T
}

/** Options of one call: `token: null` sends no Authorization header; default is the admin token. */
export interface CallOptions {
  readonly token?: string | null
  readonly body?: unknown
  readonly service?: "api" | "admin-api"
}

/** Options of `launch`. */
export interface LaunchOptions {
  /** Extra environment (configuration overrides such as `SVC__outbound__allow_private_networks`). */
  readonly env?: Readonly<Record<string, string>>
  /**
   * Start on an empty directory: the first start (PGlite `initdb`, migrations, keys). By default
   * the directory holds a copy of the prepared template (test/support/EmbeddedTemplate.ts).
   */
  readonly fresh?: boolean
}

/** A running svc with its call helpers. */
export interface Svc {
  readonly ports: Ports
  readonly adminToken: string
  readonly output: () => string
  readonly call: <T = ErrorBody>(method: string, urlPath: string, options?: CallOptions) => Promise<Reply<T>>
  readonly sign: (externalId: string, claims?: Record<string, unknown>) => Promise<string>
  readonly stop: () => Promise<void>
  /**
   * Stops gracefully and starts again on the same data directory; answers the stopped process's
   * output (`output` then shows the new process).
   */
  readonly restart?: () => Promise<string>
  /** The process id of an embedded-default process. */
  readonly pid?: () => number | undefined
  /** The working directory of an embedded-default process (its data dir is `<dir>/.svc`). */
  readonly dir?: string
}

const insecure = new Agent({ connect: { rejectUnauthorized: false } })

const exists = (file: string) =>
  fs.stat(file).then(
    (stat) => stat.size > 0,
    () => false
  )

/** JSON calls to the api (HTTP) or admin-api (HTTPS, self-signed) of a running svc; `adminToken` by default. */
export const caller =
  (ports: Ports, adminToken: string) =>
  async <T>(method: string, urlPath: string, options: CallOptions = {}): Promise<Reply<T>> => {
    const token = options.token === undefined ? adminToken : options.token
    const headers: Record<string, string> = {}
    if (token !== null) headers.authorization = `Bearer ${token}`
    if (options.body !== undefined) headers["content-type"] = "application/json"
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    const response =
      options.service === "admin-api"
        ? await undiciFetch(`https://127.0.0.1:${ports.adminApi}${urlPath}`, {
            method,
            headers,
            ...(body === undefined ? {} : { body }),
            dispatcher: insecure
          })
        : await fetch(`http://127.0.0.1:${ports.api}${urlPath}`, {
            method,
            headers,
            ...(body === undefined ? {} : { body })
          })
    const text = await response.text()
    return { status: response.status, body: (text === "" ? undefined : JSON.parse(text)) as T }
  }

/** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
export const eventually = async <T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 45_000
): Promise<T> => {
  const deadline = Date.now() + timeoutMs
  let value = await read()
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    value = await read()
  }
  return value
}

/**
 * Polls a count until it is at least `atLeast` and reads the same twice 800 ms apart (a replay
 * that fills it is over); returns the last count read.
 */
export const settledCount = async (read: () => Promise<number>, atLeast: number, timeoutMs = 30_000) => {
  let previous = -1
  const last = await eventually(
    async () => {
      const now = await read()
      const stable = now === previous && now >= atLeast
      previous = now
      if (!stable) await new Promise((resolve) => setTimeout(resolve, 800))
      return { now, stable }
    },
    (value) => value.stable,
    timeoutMs
  )
  return last.now
}

/**
 * Starts `svc serve` (embedded default) in a fresh temp dir (holding a copy of the prepared data
 * directory unless `fresh`) and waits until the api answers. A
 * start that lost a port to another listener between `freePorts` and `listen` (EADDRINUSE) is
 * retried on fresh ports, at most three times.
 */
export const launch = async (prefix: string, options: LaunchOptions = {}): Promise<Svc> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchOnce(prefix, options)
    } catch (error) {
      if (attempt >= 3 || !String(error).includes("EADDRINUSE")) throw error
    }
  }
}

const launchOnce = async (prefix: string, options: LaunchOptions): Promise<Svc> => {
  const dir = await tempDir(prefix)
  if (options.fresh !== true) await seedEmbedded(dir)
  const ports = await freePorts()
  const env = { ...portEnv(ports), ...options.env }
  let running: RunningSvc = startSvc(["serve"], { cwd: dir, env })
  const stop = async () => {
    await running.stop()
    await fs.rm(dir, { recursive: true, force: true })
  }
  const restart = async () => {
    await running.stop()
    const previous = running.output()
    running = startSvc(["serve"], { cwd: dir, env })
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, running, 80_000)
    return previous
  }
  const ready = async () => {
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, running, 80_000)
    const tokenFile = path.join(dir, ".svc/admin.token")
    for (let waited = 0; !(await exists(tokenFile)) && waited < 20_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const token = (await fs.readFile(tokenFile, "utf8")).trim()
    const pem = await fs.readFile(path.join(dir, ".svc/dev-keys/jwt-private.pem"), "utf8")
    return { token, key: await importPKCS8(pem, "RS256") }
  }
  const { token: adminToken, key } = await ready().catch(async (error: unknown) => {
    await stop()
    throw error
  })

  const call = caller(ports, adminToken)

  const sign = (externalId: string, claims: Record<string, unknown> = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256" })
      .setSubject(externalId)
      .setIssuedAt()
      .setExpirationTime("1h")
      .setJti(randomUUID())
      .sign(key)

  const pid = () => running.child.pid
  return { ports, adminToken, output: () => running.output(), call, sign, stop, restart, dir, pid }
}

/** `GET /api/v1/tasks/{id}` (API-CONVENTIONS "Tasks and notifications"). */
export interface TaskBody {
  readonly id: string
  readonly type: string
  readonly state: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly error?: string
  readonly progress?: { readonly total: number; readonly done: number }
}

/** The 202 of `POST /api/v1/connections/{id}/_migrate_version` (spec 4.3). */
export interface MigrationHandle {
  readonly task_id: string
  readonly connection_id: string
  readonly source_version: number
  readonly target_version: number
}

/**
 * `svc serve --service api` alone in `dir` (a production workspace), once it answers `/ping`;
 * its `Svc` calls with `token`, and stopping it stops the process.
 */
export const startApiProcess = async (dir: string, token: string) => {
  const ports = await freePorts()
  const running = startSvc(["serve", "--service", "api"], { cwd: dir, env: portEnv(ports) })
  await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, running, 60_000)
  const svc: Svc = {
    ports,
    adminToken: token,
    output: running.output,
    call: caller(ports, token),
    sign: async () => token,
    stop: async () => {
      await running.stop()
    }
  }
  return { ports, running, svc }
}

/** Asserts the status (showing the body on failure) and returns the body. */
export const expectStatus = <T>(reply: Reply<unknown>, status: number): T => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status)
  return reply.body as T
}

/** Asserts a standard error body with this status and code; returns it. */
export const expectError = (reply: Reply<unknown>, status: number, code: string): ErrorBody => {
  const body = expectStatus<ErrorBody>(reply, status)
  expect(body.code, JSON.stringify(body)).toBe(code)
  expect(typeof body.error).toBe("string")
  return body
}

/** A fresh lowercase suffix, valid inside a namespace segment and a name. */
export const rand = (): string => randomBytes(4).toString("hex")

/** The entries of `labels` that are not under `svc/`. */
export const userLabels = (labels: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(labels).filter(([key]) => !key.startsWith("svc/")))

/** The entries of `labels` under `svc/`. */
export const systemLabels = (labels: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(labels).filter(([key]) => key.startsWith("svc/")))

/** Maps `items` through `f` with at most `limit` calls in flight; results keep the input order. */
export const mapLimit = async <A, B>(
  items: ReadonlyArray<A>,
  limit: number,
  f: (item: A, index: number) => Promise<B>
): Promise<Array<B>> => {
  const out = new Array<B>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      out[index] = await f(items[index]!, index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

/** A connector definition with auth `none` (or another auth type). */
export const definition = (type = "demo", auth = "none") => ({ type, auth: { type: auth } })

/** Resource-level helpers bound to one svc and a token. */
export const resources = (svc: Svc, token?: string) => {
  const opts = (body?: unknown): CallOptions => ({
    ...(token === undefined ? {} : { token }),
    ...(body === undefined ? {} : { body })
  })
  const create = async <T extends Resource>(segment: string, body: unknown): Promise<T> =>
    expectStatus<T>(await svc.call<T>("POST", `/api/v1/${segment}`, opts(body)), 201)
  const get = async <T extends Resource>(segment: string, id: string): Promise<T> =>
    expectStatus<T>(await svc.call<T>("GET", `/api/v1/${segment}/${id}`, opts()), 200)
  const list = async <T extends Resource>(segment: string, query: Record<string, string>): Promise<PageBody<T>> =>
    expectStatus<PageBody<T>>(
      await svc.call<PageBody<T>>("GET", `/api/v1/${segment}?${new URLSearchParams(query)}`, opts()),
      200
    )
  /** Every item of a list, following cursors (the cursor alone carries the filters). */
  const listAll = async <T extends Resource>(segment: string, query: Record<string, string>): Promise<Array<T>> => {
    const items: Array<T> = []
    let page = await list<T>(segment, query)
    items.push(...page.items)
    for (let guard = 0; page.cursor !== undefined && guard < 1000; guard++) {
      page = await list<T>(segment, {
        cursor: page.cursor,
        ...(query.limit === undefined ? {} : { limit: query.limit })
      })
      items.push(...page.items)
    }
    return items
  }
  const namespace = (nsPath: string, extra: Record<string, unknown> = {}) =>
    create<NamespaceBody>("namespaces", { path: nsPath, ...extra })
  const connector = (ns: string, extra: Record<string, unknown> = {}) =>
    create<ConnectorBody>("connectors", { namespace: ns, definition: definition(), ...extra })
  const publish = async (connectorId: string, version = 1): Promise<VersionBody> =>
    expectStatus<VersionBody>(
      await svc.call<VersionBody>(
        "PUT",
        `/api/v1/connectors/${connectorId}/versions/${version}/_state`,
        opts({ state: "primary" })
      ),
      200
    )
  const publishedConnector = async (ns: string, extra: Record<string, unknown> = {}) => {
    const created = await connector(ns, extra)
    await publish(created.id)
    return created
  }
  const connection = (connectorId: string, extra: Record<string, unknown> = {}) =>
    create<ConnectionBody>("connections", { connectorId, ...extra })
  /** A fresh namespace directly under root; returns its path. */
  const freshNamespace = async (prefix: string, extra: Record<string, unknown> = {}) =>
    (await namespace(`root.${prefix}${rand()}`, extra)).path
  return { create, get, list, listAll, namespace, freshNamespace, connector, publish, publishedConnector, connection }
}
