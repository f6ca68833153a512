/**
 * Connector lifecycle tasks, black-box on the embedded default (spec 3.1–3.3, 4.5, 8.1): a
 * disconnect-all ends every live connection of its connector through durable workflows and its
 * task completes with its progress; a second start while one runs is 409; the task is visible
 * only to the actor that started it; a timeout forces the connections whose revocation hangs;
 * archive prepares the versions (no new connections), disconnects and archives every version.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  eventually,
  expectError,
  expectStatus,
  launch,
  resources,
  type Svc,
  type VersionBody,
  type TaskBody
} from "../support/Api.ts"

let svc: Svc
/** A provider whose token endpoint answers and whose revocation endpoint never does. */
let hanging: Server
let hangingPort = 0
let revocationsSeen = 0

beforeAll(async () => {
  hanging = createServer((request, response) => {
    if (request.url?.startsWith("/token")) {
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify({ access_token: `at-${Math.random()}`, token_type: "bearer", expires_in: 3600 }))
      return
    }
    // The revocation endpoint reads the request and never answers.
    revocationsSeen++
  })
  await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve))
  hangingPort = (hanging.address() as AddressInfo).port
  svc = await launch("svc-lifecycle-", { env: { SVC__outbound__allow_private_networks: "true" } })
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  hanging?.closeAllConnections()
  await new Promise((resolve) => hanging?.close(resolve))
})

const task = async (taskId: string, token?: string) =>
  svc.call<TaskBody>("GET", `/api/v1/tasks/${taskId}`, token === undefined ? {} : { token })

const ended = (taskId: string) =>
  eventually(
    async () => expectStatus<TaskBody>(await task(taskId), 200),
    (body) => body.state !== "active",
    60_000
  )

/** A published client-credentials connector of a fresh namespace whose revocations hang. */
const hangingConnector = async (prefix: string) => {
  const r = resources(svc)
  return r.publishedConnector(await r.freshNamespace(prefix), {
    definition: {
      type: "demo",
      auth: {
        type: "oauth2",
        grant_type: "client_credentials",
        token_endpoint: `http://127.0.0.1:${hangingPort}/token`,
        revocation_endpoint: `http://127.0.0.1:${hangingPort}/revoke`,
        client_auth: "client_secret_post"
      },
      proxy: { allowed_hosts: [`127.0.0.1:${hangingPort}`], allow_private_networks: true }
    }
  })
}

const live = async (connectorId: string) =>
  (await resources(svc).listAll<ConnectionBody>("connections", { connectorId, limit: "100" })).length

describe("disconnect-all", () => {
  it("ends every live connection; the task completes with its progress; a second start is 409", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("dall")
    const connector = await r.publishedConnector(ns)
    for (let i = 0; i < 25; i++) await r.connection(connector.id)
    expect(await live(connector.id)).toBe(25)

    const started = await svc.call<{ taskId: string; connectorId: string }>(
      "POST",
      `/api/v1/connectors/${connector.id}/_disconnectAll`,
      { body: { timeoutSeconds: 120 } }
    )
    const handle = expectStatus<{ taskId: string; connectorId: string }>(started, 202)
    expect(handle.connectorId).toBe(connector.id)
    expect(handle.taskId).toMatch(/^tsk_/)
    // A second start while it runs (or an archive) is refused; it may already have ended.
    const again = await svc.call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`)
    const first = await task(handle.taskId)
    if (expectStatus<TaskBody>(first, 200).state === "active") expectError(again, 409, "operation_in_progress")

    const done = await ended(handle.taskId)
    expect(done).toMatchObject({ id: handle.taskId, type: "disconnect_all", state: "completed" })
    expect(done.progress).toEqual({ total: 25, done: 25 })
    expect(await live(connector.id)).toBe(0)
    // After it ended a new run may start (nothing left to do).
    const rerun = expectStatus<{ taskId: string }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`),
      202
    )
    expect((await ended(rerun.taskId)).progress).toEqual({ total: 0, done: 0 })
  }, 120_000)

  it("a task is visible only to the actor that started it; an unknown task is 404", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("dvis")
    const connector = await r.publishedConnector(ns)
    const handle = expectStatus<{ taskId: string }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`),
      202
    )
    const other = `tasks-${Math.random().toString(36).slice(2, 8)}`
    await r.create("actors", {
      externalId: other,
      namespace: ns,
      permissions: [{ namespace: `${ns}.**`, resources: ["*"], verbs: ["*"] }]
    })
    expectError(await task(handle.taskId, await svc.sign(other)), 404, "not_found")
    expectError(await task("tsk_doesnotexist"), 404, "not_found")
    await ended(handle.taskId)
  }, 60_000)

  it("the timeout forces the connections whose revocation hangs: disconnected, soft-deleted", async () => {
    const r = resources(svc)
    const connector = await hangingConnector("dtmo")
    for (let i = 0; i < 3; i++) {
      await r.connection(connector.id, { credentials: { client_id: `c${i}`, client_secret: `s${i}` } })
    }
    const started = Date.now()
    // 7 s: each child gets 2 s (the 5-second parent reserve); every revocation hangs.
    const handle = expectStatus<{ taskId: string }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`, { body: { timeoutSeconds: 7 } }),
      202
    )
    // The children hang for 2 s: the run is active, and neither a second run nor an archive may start.
    expectError(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`),
      409,
      "operation_in_progress"
    )
    expectError(await svc.call("POST", `/api/v1/connectors/${connector.id}/_archive`), 409, "operation_in_progress")
    expect(expectStatus<TaskBody>(await task(handle.taskId), 200).state).toBe("active")
    const done = await ended(handle.taskId)
    expect(done.state).toBe("completed")
    expect(await live(connector.id)).toBe(0)
    expect(Date.now() - started).toBeLessThan(60_000)
    expect(revocationsSeen).toBeGreaterThan(0)
  }, 90_000)
})

describe("a connection's _disconnect", () => {
  it("answers a task; a second one while it runs is 409; at its timeout the connection is forced", async () => {
    const r = resources(svc)
    const connector = await hangingConnector("done")
    const connection = await r.connection(connector.id, { credentials: { client_id: "one", client_secret: "s" } })
    const handle = expectStatus<{ taskId: string; connectionId: string }>(
      await svc.call("POST", `/api/v1/connections/${connection.id}/_disconnect`, { body: { timeoutSeconds: 2 } }),
      202
    )
    expect(handle.connectionId).toBe(connection.id)
    expectError(
      await svc.call("POST", `/api/v1/connections/${connection.id}/_disconnect`),
      409,
      "operation_in_progress"
    )
    const done = await ended(handle.taskId)
    expect(done).toMatchObject({ type: "disconnect", state: "completed", progress: { total: 1, done: 0 } })
    expectError(await svc.call("GET", `/api/v1/connections/${connection.id}`), 404, "not_found")
  }, 60_000)
})

describe("_disconnect then _migrate_version", () => {
  it("a migration started right after the 202 is 409 connection_disconnecting", async () => {
    const r = resources(svc)
    const connector = await hangingConnector("dismig")
    const connections = []
    for (let i = 0; i < 3; i++) {
      connections.push(await r.connection(connector.id, { credentials: { client_id: `c${i}`, client_secret: "s" } }))
    }
    const definition = expectStatus<{ definition: Record<string, unknown> }>(
      await svc.call("GET", `/api/v1/connectors/${connector.id}/versions/1`),
      200
    ).definition
    const v2 = expectStatus<{ version: number }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, { body: { definition } }),
      201
    )
    await r.publish(connector.id, v2.version)
    // Several times: the migration must never slip in before the disconnect's own first step.
    for (const connection of connections) {
      const handle = expectStatus<{ taskId: string }>(
        await svc.call("POST", `/api/v1/connections/${connection.id}/_disconnect`, { body: { timeoutSeconds: 2 } }),
        202
      )
      const migration = await svc.call("POST", `/api/v1/connections/${connection.id}/_migrate_version`, {
        body: { target_version: v2.version, timeout_seconds: 30 }
      })
      expectError(migration, 409, "connection_disconnecting")
      expect((await ended(handle.taskId)).state).toBe("completed")
    }
  }, 60_000)
})

describe("archive", () => {
  it("prepares the versions, disconnects every connection, archives every version; no new connections", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("arch")
    const connector = await r.publishedConnector(ns)
    expectStatus(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, {
        body: { definition: { type: "demo", auth: { type: "none" } } }
      }),
      201
    )
    for (let i = 0; i < 5; i++) await r.connection(connector.id)
    const handle = expectStatus<{ taskId: string; connectorId: string }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/_archive`, { body: {} }),
      202
    )
    const done = await ended(handle.taskId)
    expect(done).toMatchObject({ type: "archive", state: "completed", progress: { total: 5, done: 5 } })
    expect(await live(connector.id)).toBe(0)
    const versions = expectStatus<{ items: Array<VersionBody> }>(
      await svc.call("GET", `/api/v1/connectors/${connector.id}/versions`),
      200
    )
    expect(versions.items.map((version) => version.state)).toEqual(["archived", "archived"])
    const refused = await svc.call("POST", "/api/v1/connections", { body: { connectorId: connector.id } })
    expect(refused.status).toBeGreaterThanOrEqual(400)
    expect(refused.status).toBeLessThan(500)
  }, 90_000)
})
