/**
 * Version migration with sandboxed hooks, black-box on the embedded default (spec 2.10, 2.11,
 * 3.1, 4.3; API-CONVENTIONS "Errors" and "Tasks and notifications"): `_migrate_version` answers
 * 202 with a snake_case task handle; hooks run in order up (v2.up, v3.up) and down (v3.down,
 * v2.down) and rollback is the same workflow aimed lower; every spec 4.3 rule 4 branch (defaults
 * filled, setup step and notice, re-authentication notice and health, re-authentication
 * outranking setup and reused, optional additions, a refresh after a changed token endpoint, a
 * probe success that does not clear re-authentication, an api_key connection re-authorised
 * through the preconnect form); every rejection and the concurrent 409;
 * connector-authored notifications set and unset, listed with `can_action`; hostile hooks fail
 * their task, persist nothing and leave the service serving.
 */
import * as fs from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
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
  type TaskBody,
  type MigrationHandle
} from "../support/Api.ts"
import { parse } from "yaml"

interface NotificationBody {
  readonly id: string
  readonly key: string
  readonly level: string
  readonly title: string
  readonly message: string
  readonly action_url: string | null
  readonly metadata: Record<string, unknown>
  readonly viewed: boolean
  readonly can_action: boolean
}

let svc: Svc
/** A loopback provider and probe target: `/token*` issues tokens, `/probe` answers 200; counts by path. */
let provider: Server
let providerPort = 0
const hits = new Map<string, number>()
/** The `authorization` header of the last request by path. */
const lastAuthorization = new Map<string, string | undefined>()
/** The scope the token endpoint grants (space separated), when set. */
let grantedScope: string | undefined

beforeAll(async () => {
  provider = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0]!
    hits.set(path, (hits.get(path) ?? 0) + 1)
    lastAuthorization.set(path, request.headers.authorization)
    request.resume()
    request.on("end", () => {
      // Never answered (the connections are closed after the tests).
      if (path.startsWith("/hang")) return
      if (path.startsWith("/token")) {
        response.writeHead(200, { "content-type": "application/json" })
        response.end(
          JSON.stringify({
            access_token: `at-${Math.random()}`,
            token_type: "bearer",
            expires_in: 3600,
            ...(grantedScope === undefined ? {} : { scope: grantedScope })
          })
        )
        return
      }
      const status = path.startsWith("/probe") ? 200 : path.startsWith("/unauthorized") ? 401 : 404
      response.writeHead(status, { "content-type": "application/json" })
      response.end("{}")
    })
  })
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve))
  providerPort = (provider.address() as AddressInfo).port
  svc = await launch("svc-migration-", {
    env: {
      SVC__outbound__allow_private_networks: "true",
      // Far above what the memory and stack bombs need even on a loaded machine, so their reason
      // is the limit they hit, not the clock; the endless loop is bounded by its 3 s migration.
      SVC__migrations__hook_timeout: "30s"
    }
  })
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  provider?.closeAllConnections()
  await new Promise((resolve) => provider?.close(resolve))
})

type Definition = Record<string, unknown>

const form = (properties: Record<string, unknown>, required: ReadonlyArray<string> = []) => ({
  type: "object",
  properties,
  required,
  additionalProperties: false
})

/** A definition with `configure` (and optionally `preconnect`) steps and hooks. */
const def = (options: {
  readonly configure?: Record<string, unknown>
  readonly configureRequired?: ReadonlyArray<string>
  readonly preconnect?: Record<string, unknown>
  readonly preconnectRequired?: ReadonlyArray<string>
  readonly javascript?: string
  readonly up?: string
  readonly down?: string
  readonly auth?: Record<string, unknown>
  readonly probes?: ReadonlyArray<Record<string, unknown>>
}): Definition => ({
  type: "demo",
  auth: options.auth ?? { type: "none" },
  proxy: { allowed_hosts: [`127.0.0.1:${providerPort}`], allow_private_networks: true },
  setup_flow: {
    ...(options.preconnect === undefined
      ? {}
      : { preconnect: { steps: [{ id: "pre", json_schema: form(options.preconnect, options.preconnectRequired) }] } }),
    configure: {
      steps: [
        {
          id: "basics",
          json_schema: form(options.configure ?? { host: { type: "string" } }, options.configureRequired)
        }
      ]
    }
  },
  ...(options.probes === undefined ? {} : { probes: options.probes }),
  ...(options.javascript === undefined ? {} : { javascript: options.javascript }),
  ...(options.up === undefined && options.down === undefined
    ? {}
    : {
        migrations: {
          ...(options.up === undefined ? {} : { up: { javascript: options.up } }),
          ...(options.down === undefined ? {} : { down: { javascript: options.down } })
        }
      })
})

/** A connector in a fresh namespace: `first` is published as version 1; returns its id. */
const connectorOf = async (prefix: string, first: Definition) => {
  const r = resources(svc)
  const created = await r.connector(await r.freshNamespace(prefix), { definition: first })
  await r.publish(created.id, 1)
  return created.id
}

/** Adds the next version (published as primary unless `state` says otherwise). */
const addVersion = async (connectorId: string, definition: Definition, state: "primary" | "draft" = "primary") => {
  const version = expectStatus<VersionBody>(
    await svc.call<VersionBody>("POST", `/api/v1/connectors/${connectorId}/versions`, { body: { definition } }),
    201
  )
  if (state === "primary") await resources(svc).publish(connectorId, version.version)
  return version.version
}

const connection = (connectorId: string, extra: Record<string, unknown> = {}) =>
  resources(svc).connection(connectorId, extra)

const getConnection = async (id: string) =>
  expectStatus<
    ConnectionBody & {
      connectorVersion: number
      healthState: string
      setupStepId: string | null
      configuration: Record<string, unknown>
    }
  >(await svc.call("GET", `/api/v1/connections/${id}`), 200)

const startMigration = (id: string, body: Record<string, unknown>, token?: string) =>
  svc.call<MigrationHandle>("POST", `/api/v1/connections/${id}/_migrate_version`, {
    body,
    ...(token === undefined ? {} : { token })
  })

const ended = (taskId: string, waitMs = 90_000) =>
  eventually(
    async () => expectStatus<TaskBody>(await svc.call<TaskBody>("GET", `/api/v1/tasks/${taskId}`), 200),
    (body) => body.state !== "active",
    waitMs
  )

/** Starts a migration, expects 202 and waits for its task to end. */
const migrate = async (id: string, target: number, timeoutSeconds = 60) => {
  const handle = expectStatus<MigrationHandle>(
    await startMigration(id, { target_version: target, timeout_seconds: timeoutSeconds }),
    202
  )
  return { handle, task: await ended(handle.task_id) }
}

const notificationsOf = async (connectionId: string, token?: string) => {
  const page = expectStatus<{ items: ReadonlyArray<NotificationBody> }>(
    await svc.call("GET", "/api/v1/notifications?include_viewed=true&limit=200", token === undefined ? {} : { token }),
    200
  )
  return page.items.filter(
    (item) => item.action_url?.includes(connectionId) || item.metadata.connection === connectionId
  )
}

/** Every active notification of the service, as the admin sees it. */
const allNotifications = async () =>
  expectStatus<{ items: ReadonlyArray<NotificationBody> }>(
    await svc.call("GET", "/api/v1/notifications?include_viewed=true&limit=200"),
    200
  ).items

describe("hooks in order", () => {
  it("v1 → v3 runs v2.up then v3.up; v3 → v1 runs v3.down then v2.down; rollback lands on v2", async () => {
    const shared = `
      function toV2(cfg, labels) {
        return {
          config: { set: { base_url: "https://" + cfg.host }, unset: ["host"] },
          labels: { set: { schema: "v2" } },
          annotations: { set: { trail: (annotations.trail || "") + "v2.up;" } }
        }
      }`
    const connectorId = await connectorOf("mgorder", def({}))
    await addVersion(
      connectorId,
      def({
        configure: { base_url: { type: "string" } },
        javascript: shared,
        up: "toV2(cfg, labels)",
        down: `({ config: { set: { host: cfg.base_url.replace("https://", "") }, unset: ["base_url"] },
                  labels: { unset: ["schema"] },
                  annotations: { set: { trail: (annotations.trail || "") + "v2.down;" } } })`
      })
    )
    await addVersion(
      connectorId,
      def({
        configure: { base_url: { type: "string" }, retries: { type: "integer" } },
        up: `({ config: { set: { retries: 3 } }, labels: { set: { schema: "v3", seen: labels.schema } },
                annotations: { set: { trail: (annotations.trail || "") + "v3.up;" } } })`,
        down: `({ config: { unset: ["retries"] }, labels: { set: { schema: "v2" }, unset: ["seen"] },
                  annotations: { set: { trail: (annotations.trail || "") + "v3.down;" } } })`
      })
    )
    // The connection is created on the primary (v3): move it to v1 first with a raw write of the
    // starting state through a downward migration, which is itself under test below.
    const created = await connection(connectorId, {
      configuration: { base_url: "https://api.example.com", retries: 3 },
      labels: { team: "core", schema: "v3", seen: "v2" }
    })
    const down = await migrate(created.id, 1)
    expect(down.handle).toEqual({
      task_id: down.handle.task_id,
      connection_id: created.id,
      source_version: 3,
      target_version: 1
    })
    expect(down.handle.task_id).toMatch(/^tsk_/)
    expect(down.task, JSON.stringify(down.task)).toMatchObject({ type: "migrate_version", state: "completed" })
    expect(down.task.progress).toEqual({ total: 1, done: 1 })
    let row = await getConnection(created.id)
    expect(row.connectorVersion).toBe(1)
    expect(row.configuration).toEqual({ host: "api.example.com" })
    expect(row.annotations.trail).toBe("v3.down;v2.down;")
    expect(row.labels.team).toBe("core")
    expect(row.labels.schema).toBeUndefined()
    expect(row.labels.seen).toBeUndefined()
    // System labels survive.
    expect(Object.keys(row.labels).some((key) => key.startsWith("svc/"))).toBe(true)

    const up = await migrate(created.id, 3)
    expect(up.task.state, up.task.error).toBe("completed")
    row = await getConnection(created.id)
    expect(row.connectorVersion).toBe(3)
    expect(row.configuration).toEqual({ base_url: "https://api.example.com", retries: 3 })
    expect(row.annotations.trail).toBe("v3.down;v2.down;v2.up;v3.up;")
    expect(row.labels).toMatchObject({ team: "core", schema: "v3", seen: "v2" })

    // Rollback: the same workflow aimed lower (v3 → v2 runs only v3.down).
    const back = await migrate(created.id, 2)
    expect(back.task.state, back.task.error).toBe("completed")
    row = await getConnection(created.id)
    expect(row.connectorVersion).toBe(2)
    expect(row.configuration).toEqual({ base_url: "https://api.example.com" })
    expect(row.annotations.trail).toBe("v3.down;v2.down;v2.up;v3.up;v3.down;")
    expect(row.labels.schema).toBe("v2")
  }, 120_000)

  it("a failing hook fails the task and persists nothing, not even the earlier hooks' results", async () => {
    const connectorId = await connectorOf("mgfail", def({}))
    const c = await connection(connectorId, { configuration: { host: "h" }, labels: { keep: "me" } })
    await addVersion(
      connectorId,
      def({ up: `({ labels: { set: { keep: "changed" } }, config: { set: { host: "secret-host-value" } } })` })
    )
    await addVersion(connectorId, def({ up: `(() => { throw new TypeError("no way: " + cfg.host) })()` }))
    const { task } = await migrate(c.id, 3)
    expect(task.state).toBe("failed")
    expect(task.error).toContain("hook v3.up failed (runtime)")
    expect(task.error).toContain("TypeError")
    // The configuration value the hook put in its message is never repeated.
    expect(task.error).not.toContain("secret-host-value")
    const row = await getConnection(c.id)
    expect(row.connectorVersion).toBe(1)
    expect(row.configuration).toEqual({ host: "h" })
    expect(row.labels.keep).toBe("me")
    // The lock was freed: the next migration starts.
    const next = await migrate(c.id, 2)
    expect(next.task.state, next.task.error).toBe("completed")
    expect((await getConnection(c.id)).labels.keep).toBe("changed")
  }, 120_000)
})

describe("docs/migrations.md", () => {
  it("the hooks of 'Hooks by example' do what the page says", async () => {
    const page = fs.readFileSync(path.resolve(import.meta.dirname, "../../docs/migrations.md"), "utf8")
    const section = page.slice(page.indexOf("## Hooks by example"))
    const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parse(m[1]!) as Record<string, unknown>)
    expect(blocks).toHaveLength(2)
    const [v2Hooks, v3Hooks] = blocks as [Record<string, unknown>, Record<string, unknown>]
    const connectorId = await connectorOf("mgdocs", def({}))
    const c = await connection(connectorId, { configuration: { host: "api.acme.test" } })
    await addVersion(connectorId, {
      ...def({ configure: { base_url: { type: "string" }, region: { type: "string" } } }),
      ...v2Hooks
    })
    await addVersion(connectorId, {
      ...def({ configure: { base_url: { type: "string" }, region: { type: "string" }, retries: { type: "integer" } } }),
      ...v3Hooks
    })
    const up = await migrate(c.id, 3)
    expect(up.task.state, up.task.error).toBe("completed")
    let row = await getConnection(c.id)
    expect(row.configuration).toEqual({ base_url: "https://api.acme.test", retries: 3 })
    expect(row.labels["example.com/schema"]).toBe("v2")
    expect(row.annotations["example.com/migrated-from"]).toBe("v2")
    const raised = (await allNotifications()).filter((n) => n.key === "region.missing" && n.title === "Choose a region")
    expect(raised.length).toBeGreaterThanOrEqual(1)
    const down = await migrate(c.id, 1)
    expect(down.task.state, down.task.error).toBe("completed")
    row = await getConnection(c.id)
    expect(row.configuration).toEqual({ host: "api.acme.test" })
    expect(row.labels["example.com/schema"]).toBeUndefined()
    expect(row.annotations["example.com/migrated-from"]).toBeUndefined()
  }, 60_000)
})

describe("rejections", () => {
  it("no-op, wrong connector, draft or archived target, invalid timeout: 400; without connections:migrate: 403", async () => {
    const connectorId = await connectorOf("mgrej", def({}))
    const c = await connection(connectorId, { configuration: { host: "h" } })
    const other = await connectorOf("mgrejo", def({}))
    await addVersion(other, def({}))
    await addVersion(connectorId, def({}), "draft")

    expectError(await startMigration(c.id, { target_version: 1 }), 400, "migration_noop")
    expectError(await startMigration(c.id, { target_version: 7 }), 400, "migration_wrong_connector")
    expectError(
      await startMigration(c.id, { target_version: 2, connector_id: other }),
      400,
      "migration_wrong_connector"
    )
    expectError(await startMigration(c.id, { target_version: 2 }), 400, "migration_target_not_migratable")
    // Archived: a draft may be archived.
    expectStatus(
      await svc.call("PUT", `/api/v1/connectors/${connectorId}/versions/2/_state`, { body: { state: "archived" } }),
      200
    )
    expectError(await startMigration(c.id, { target_version: 2 }), 400, "migration_target_not_migratable")
    for (const timeout of [0, -5, 1.5, 86_401]) {
      expectError(await startMigration(c.id, { target_version: 2, timeout_seconds: timeout }), 400, "invalid_timeout")
    }
    expectError(await startMigration(c.id, {}), 400, "invalid_request")
    const noMigrate = await svc.sign("admin", {
      permissions: [{ namespace: "**", resources: ["connections"], verbs: ["get", "list", "update"] }]
    })
    expectError(await startMigration(c.id, { target_version: 2 }, noMigrate), 403, "forbidden")
    expectError(await startMigration("cxn_unknown", { target_version: 2 }), 404, "not_found")
    // Nothing moved.
    expect((await getConnection(c.id)).connectorVersion).toBe(1)
  }, 60_000)

  it("a second start while a migration runs is 409 migration_in_progress; after it ended a new one starts", async () => {
    const connectorId = await connectorOf("mgbusy", def({}))
    const c = await connection(connectorId, { configuration: { host: "h" } })
    // The target's probe hangs until its 8 s timeout: the run stays active after the switch.
    await addVersion(
      connectorId,
      def({ probes: [{ id: "slow", url: `http://127.0.0.1:${providerPort}/hang`, timeout: "8s" }] })
    )
    const first = expectStatus<MigrationHandle>(
      await startMigration(c.id, { target_version: 2, timeout_seconds: 60 }),
      202
    )
    const second = await startMigration(c.id, { target_version: 2, timeout_seconds: 60 })
    const firstState = expectStatus<TaskBody>(await svc.call("GET", `/api/v1/tasks/${first.task_id}`), 200).state
    expect(firstState, "the run ended before the second start").toBe("active")
    expectError(second, 409, "migration_in_progress")
    // Once the run's transaction switched the version (its probe still hangs), the same target is
    // still the concurrent migration, not a no-op, and the way back is refused too.
    await eventually(
      () => getConnection(c.id),
      (row) => row.connectorVersion === 2,
      30_000
    )
    expect(expectStatus<TaskBody>(await svc.call("GET", `/api/v1/tasks/${first.task_id}`), 200).state).toBe("active")
    expectError(await startMigration(c.id, { target_version: 2 }), 409, "migration_in_progress")
    expectError(await startMigration(c.id, { target_version: 1 }), 409, "migration_in_progress")
    const task = await ended(first.task_id)
    expect(task.state, task.error).toBe("completed")
    const back = await migrate(c.id, 1)
    expect(back.task.state, back.task.error).toBe("completed")
  }, 120_000)
})

describe("spec 4.3 rule 4", () => {
  it("fills target-only fields that have defaults; optional additions need nothing", async () => {
    const connectorId = await connectorOf("mgdef", def({}))
    const c = await connection(connectorId, { configuration: { host: "h" } })
    await addVersion(
      connectorId,
      def({
        configure: { host: { type: "string" }, region: { type: "string", default: "eu" }, note: { type: "string" } }
      })
    )
    const { task } = await migrate(c.id, 2)
    expect(task.state, task.error).toBe("completed")
    const row = await getConnection(c.id)
    expect(row.configuration).toEqual({ host: "h", region: "eu" })
    expect(row).toMatchObject({ state: "configured", healthState: "healthy", setupStepId: null })
    expect(await notificationsOf(c.id)).toEqual([])
  }, 60_000)

  it("a missing required configure field sets setupStepId and raises the setup notice; moving back resolves it", async () => {
    const connectorId = await connectorOf("mgsetup", def({}))
    const c = await connection(connectorId, { configuration: { host: "h" } })
    await addVersion(
      connectorId,
      def({ configure: { host: { type: "string" }, workspace: { type: "string" } }, configureRequired: ["workspace"] })
    )
    const { task } = await migrate(c.id, 2)
    expect(task.state, task.error).toBe("completed")
    const row = await getConnection(c.id)
    expect(row).toMatchObject({
      connectorVersion: 2,
      state: "configured",
      setupStepId: "basics",
      healthState: "healthy"
    })
    const notices = await notificationsOf(c.id)
    expect(notices).toHaveLength(1)
    expect(notices[0]).toMatchObject({
      key: "svc.setup",
      action_url: `/connections/${c.id}?action=configure`,
      can_action: true
    })
    const back = await migrate(c.id, 1)
    expect(back.task.state, back.task.error).toBe("completed")
    expect((await getConnection(c.id)).setupStepId).toBeNull()
    expect(await notificationsOf(c.id)).toEqual([])
  }, 60_000)

  it("a new required preconnect field: configured + unhealthy + re-auth notice, which outranks setup and is reused; a probe success does not clear it", async () => {
    const probes = [{ id: "ping", url: `http://127.0.0.1:${providerPort}/probe/reauth`, period: "1h" }]
    const connectorId = await connectorOf("mgreauth", def({}))
    const c = await connection(connectorId, { configuration: { host: "h" } })
    await addVersion(
      connectorId,
      def({
        preconnect: { tenant: { type: "string" } },
        preconnectRequired: ["tenant"],
        configure: { host: { type: "string" }, workspace: { type: "string" } },
        configureRequired: ["workspace"],
        probes
      })
    )
    await addVersion(
      connectorId,
      def({
        preconnect: { tenant: { type: "string" } },
        preconnectRequired: ["tenant"],
        configure: { host: { type: "string" }, workspace: { type: "string" } },
        configureRequired: ["workspace"],
        probes
      })
    )
    const before = hits.get("/probe/reauth") ?? 0
    const { task } = await migrate(c.id, 2)
    expect(task.state, task.error).toBe("completed")
    // The target's enabled probe ran once after the switch, and succeeded.
    expect((hits.get("/probe/reauth") ?? 0) - before).toBe(1)
    const row = await getConnection(c.id)
    expect(row).toMatchObject({
      connectorVersion: 2,
      state: "configured",
      healthState: "unhealthy",
      setupStepId: "basics"
    })
    const notices = await notificationsOf(c.id)
    expect(notices.map((n) => n.key)).toEqual(["svc.reauth"])
    expect(notices[0]).toMatchObject({ action_url: `/connections/${c.id}?action=reauth`, can_action: true })
    // The same condition again (v2 → v3): the active re-authentication notice is reused.
    const again = await migrate(c.id, 3)
    expect(again.task.state, again.task.error).toBe("completed")
    const reused = await notificationsOf(c.id)
    expect(reused.map((n) => [n.key, n.id])).toEqual([["svc.reauth", notices[0]!.id]])
    expect((await getConnection(c.id)).healthState).toBe("unhealthy")
  }, 60_000)

  it("a required OAuth scope added: re-authentication; a changed token endpoint: a refresh attempt", async () => {
    const oauth = (tokenPath: string, scopes: ReadonlyArray<Record<string, unknown>>) => ({
      type: "oauth2",
      grant_type: "client_credentials",
      token_endpoint: `http://127.0.0.1:${providerPort}${tokenPath}`,
      client_auth: "client_secret_post",
      scopes
    })
    grantedScope = "read"
    const connectorId = await connectorOf(
      "mgoauth",
      def({ auth: oauth("/token/a", [{ name: "read", required: true }]) })
    )
    const c = await connection(connectorId, {
      configuration: { host: "h" },
      credentials: { client_id: "cid", client_secret: "csecret" }
    })
    // v2: same scopes, another token endpoint: the token is fetched again there.
    await addVersion(connectorId, def({ auth: oauth("/token/b", [{ name: "read", required: true }]) }))
    // v3: a new required scope: re-authentication.
    await addVersion(
      connectorId,
      def({
        auth: oauth("/token/b", [
          { name: "read", required: true },
          { name: "write", required: true }
        ])
      })
    )
    const before = hits.get("/token/b") ?? 0
    const refreshed = await migrate(c.id, 2)
    expect(refreshed.task.state, refreshed.task.error).toBe("completed")
    expect((hits.get("/token/b") ?? 0) - before).toBe(1)
    expect((await getConnection(c.id)).healthState).toBe("healthy")
    expect(await notificationsOf(c.id)).toEqual([])

    const scoped = await migrate(c.id, 3)
    expect(scoped.task.state, scoped.task.error).toBe("completed")
    // No refresh: it cannot grant what re-authentication must.
    expect((hits.get("/token/b") ?? 0) - before).toBe(1)
    const row = await getConnection(c.id)
    expect(row).toMatchObject({ connectorVersion: 3, state: "configured", healthState: "unhealthy" })
    const reauth = await notificationsOf(c.id)
    expect(reauth.map((n) => n.key)).toEqual(["svc.reauth"])
    // An upstream 401 makes svc fetch a token again: a refresh does not answer the migration's
    // re-authentication (the notice stays, the connection stays unhealthy).
    const proxied = await svc.call<{ statusCode: number }>("POST", `/api/v1/connections/${c.id}/_proxy`, {
      body: { url: `http://127.0.0.1:${providerPort}/unauthorized`, method: "GET" }
    })
    expect(expectStatus<{ statusCode: number }>(proxied, 200).statusCode).toBe(401)
    expect((hits.get("/token/b") ?? 0) - before).toBe(2)
    expect((await getConnection(c.id)).healthState).toBe("unhealthy")
    expect((await notificationsOf(c.id)).map((n) => [n.key, n.id])).toEqual([["svc.reauth", reauth[0]!.id]])

    // Re-authentication asks the token endpoint for the version's scopes: refused while the
    // provider grants only `read` (nothing changes), done once it grants `write` too.
    const reauthorize = () => svc.call("POST", `/api/v1/connections/${c.id}/_reauthorize`, { body: {} })
    expectError(await reauthorize(), 409, "reauthorization_failed")
    // Asked again (not answered from the refresher's memory of the refused grant).
    expect((hits.get("/token/b") ?? 0) - before).toBe(3)
    expect((await getConnection(c.id)).healthState).toBe("unhealthy")
    expect((await notificationsOf(c.id)).map((n) => n.key)).toEqual(["svc.reauth"])
    grantedScope = "read write"
    const done = expectStatus<{ next: { type: string } }>(await reauthorize(), 200)
    expect(done.next.type).toBe("complete")
    expect((hits.get("/token/b") ?? 0) - before).toBe(4)
    expect(await getConnection(c.id)).toMatchObject({ connectorVersion: 3, healthState: "healthy" })
    expect(await notificationsOf(c.id)).toEqual([])
    grantedScope = undefined
  }, 60_000)
})

describe("re-authentication after a migration", () => {
  it("is not answered by a token refresh (a new required preconnect field on an OAuth2 connection)", async () => {
    const auth = {
      type: "oauth2",
      grant_type: "client_credentials",
      token_endpoint: `http://127.0.0.1:${providerPort}/token/c`,
      client_auth: "client_secret_post"
    }
    const connectorId = await connectorOf("mgrefresh", def({ auth }))
    const c = await connection(connectorId, {
      configuration: { host: "h" },
      credentials: { client_id: "cid", client_secret: "csecret" }
    })
    await addVersion(
      connectorId,
      def({ auth, preconnect: { tenant: { type: "string" } }, preconnectRequired: ["tenant"] })
    )
    const { task } = await migrate(c.id, 2)
    expect(task.state, task.error).toBe("completed")
    const reauth = await notificationsOf(c.id)
    expect(reauth.map((n) => n.key)).toEqual(["svc.reauth"])
    expect((await getConnection(c.id)).healthState).toBe("unhealthy")
    // An upstream 401 makes svc fetch a new token, which succeeds: the notice and unhealthy stay.
    const before = hits.get("/token/c") ?? 0
    const proxied = await svc.call<{ statusCode: number }>("POST", `/api/v1/connections/${c.id}/_proxy`, {
      body: { url: `http://127.0.0.1:${providerPort}/unauthorized`, method: "GET" }
    })
    expect(expectStatus<{ statusCode: number }>(proxied, 200).statusCode).toBe(401)
    expect((hits.get("/token/c") ?? 0) - before).toBe(1)
    expect((await getConnection(c.id)).healthState).toBe("unhealthy")
    expect((await notificationsOf(c.id)).map((n) => [n.key, n.id])).toEqual([["svc.reauth", reauth[0]!.id]])
  }, 60_000)
  it("of an api_key connection: _reauthorize answers the preconnect form, _setup takes it, verify runs, health returns", async () => {
    const auth = { type: "api_key", placement: "bearer" }
    // The verify probe's path is the tenant: "probe" answers 200, any other 404.
    const probes = [{ id: "check", url: `http://127.0.0.1:${providerPort}/{{cfg.tenant}}/apikey`, verify: true }]
    const connectorId = await connectorOf("mgapikey", def({ auth }))
    const c = await connection(connectorId, { configuration: { host: "h" }, credentials: { api_key: "k-secret-1" } })
    await addVersion(
      connectorId,
      def({
        auth,
        preconnect: { tenant: { type: "string", pattern: "^[a-z]+$" } },
        preconnectRequired: ["tenant"],
        probes
      })
    )
    const proxy = async () => {
      const proxied = await svc.call<{ statusCode: number }>("POST", `/api/v1/connections/${c.id}/_proxy`, {
        body: { url: `http://127.0.0.1:${providerPort}/probe/apiproxy`, method: "GET" }
      })
      expect(expectStatus<{ statusCode: number }>(proxied, 200).statusCode).toBe(200)
      expect(lastAuthorization.get("/probe/apiproxy")).toBe("Bearer k-secret-1")
    }
    const { task } = await migrate(c.id, 2)
    expect(task.state, task.error).toBe("completed")
    expect(await getConnection(c.id)).toMatchObject({ state: "configured", healthState: "unhealthy" })
    const notice = await notificationsOf(c.id)
    expect(notice.map((n) => [n.key, n.action_url])).toEqual([["svc.reauth", `/connections/${c.id}?action=reauth`]])
    await proxy()

    // The action of the notice: the preconnect form, the connection still configured and proxying.
    type Progress = { connection: { state: string; healthState: string }; next: Record<string, unknown> }
    const form = expectStatus<Progress>(
      await svc.call<Progress>("POST", `/api/v1/connections/${c.id}/_reauthorize`, { body: {} }),
      200
    )
    expect(form.connection.state).toBe("configured")
    expect(form.next).toMatchObject({ type: "form", stepId: "pre", phase: "preconnect" })
    await proxy()
    const submit = (values: Record<string, unknown>, stepId = "pre") =>
      svc.call<Progress>("POST", `/api/v1/connections/${c.id}/_setup`, { body: { stepId, values } })
    // A value the step's JSON Schema refuses: 400, nothing stored, still unhealthy.
    const refused = expectError(await submit({ tenant: "NOT VALID" }), 400, "invalid_configuration")
    expect(refused.details?.map((d) => d.field)).toEqual(["body.values.tenant"])
    expectError(await submit({ tenant: "probe" }, "basics"), 409, "setup_step_mismatch")
    // The verify probe runs with the new value before it is stored: a failure stores nothing.
    const failed = expectError(await submit({ tenant: "nowhere" }), 409, "verification_failed")
    expect(failed.details?.map((d) => d.field)).toEqual(["probes.check"])
    expect(hits.get("/nowhere/apikey")).toBe(1)
    expect((await getConnection(c.id)).configuration).toEqual({ host: "h" })
    expect((await getConnection(c.id)).healthState).toBe("unhealthy")
    expect((await notificationsOf(c.id)).map((n) => n.key)).toEqual(["svc.reauth"])

    const verifies = hits.get("/probe/apikey") ?? 0
    const done = expectStatus<Progress>(await submit({ tenant: "probe" }), 200)
    expect(done.next).toEqual({ type: "complete" })
    expect(done.connection).toMatchObject({ state: "configured", healthState: "healthy" })
    // The verify probe ran with the connection's current key.
    expect((hits.get("/probe/apikey") ?? 0) - verifies).toBe(1)
    expect(lastAuthorization.get("/probe/apikey")).toBe("Bearer k-secret-1")
    const row = await getConnection(c.id)
    expect(row).toMatchObject({ state: "configured", healthState: "healthy", connectorVersion: 2 })
    expect(row.configuration).toEqual({ tenant: "probe", host: "h" })
    expect(await notificationsOf(c.id)).toEqual([])
    await proxy()
    // Nothing is missing any more: submitting again is a step mismatch; re-authorising is refused.
    expectError(await submit({ tenant: "probe" }), 409, "setup_step_mismatch")
    expectError(
      await svc.call("POST", `/api/v1/connections/${c.id}/_reauthorize`, { body: {} }),
      400,
      "reauthorization_not_supported"
    )

    // v3 requires one more preconnect value; migrating back to v2 leaves nothing missing, but the
    // notice and unhealthy stay (rule 4): _reauthorize then runs the verify probe and heals.
    await addVersion(
      connectorId,
      def({
        auth,
        preconnect: { tenant: { type: "string", pattern: "^[a-z]+$" }, region: { type: "string" } },
        preconnectRequired: ["tenant", "region"],
        probes
      })
    )
    expect((await migrate(c.id, 3)).task.state).toBe("completed")
    expect((await migrate(c.id, 2)).task.state).toBe("completed")
    expect(await getConnection(c.id)).toMatchObject({ connectorVersion: 2, healthState: "unhealthy" })
    expect((await notificationsOf(c.id)).map((n) => n.key)).toEqual(["svc.reauth"])
    const before = hits.get("/probe/apikey") ?? 0
    const healed = expectStatus<Progress>(
      await svc.call<Progress>("POST", `/api/v1/connections/${c.id}/_reauthorize`, { body: {} }),
      200
    )
    expect(healed.next).toEqual({ type: "complete" })
    expect((hits.get("/probe/apikey") ?? 0) - before).toBe(1)
    expect((await getConnection(c.id)).healthState).toBe("healthy")
    expect(await notificationsOf(c.id)).toEqual([])
    await proxy()
  }, 60_000)
})

describe("connector-authored notifications", () => {
  it("set by one migration, listed with can_action, unset by a later one", async () => {
    const connectorId = await connectorOf("mgntf", def({}))
    const tag = `t${Date.now()}`
    const c = await connection(connectorId, { configuration: { host: "h" }, labels: { tag } })
    await addVersion(
      connectorId,
      def({
        up: `({ notifications: { set: [{ key: "region.missing", level: "warning", title: "Choose a region",
               message: "Version 2 needs a region.", action_url: "/connections?action=configure",
               metadata: { tag: labels.tag } }] } })`,
        down: `({ notifications: { unset: [{ key: "region.missing" }] } })`
      })
    )
    const { task } = await migrate(c.id, 2)
    expect(task.state, task.error).toBe("completed")
    const listed = (await allNotifications()).filter((n) => n.key === "region.missing" && n.metadata.tag === tag)
    expect(listed).toHaveLength(1)
    const mine = listed[0]!
    expect(mine).toMatchObject({
      level: "warning",
      title: "Choose a region",
      message: "Version 2 needs a region.",
      action_url: "/connections?action=configure",
      viewed: false,
      can_action: true
    })
    // A reader that may list notifications but not update connections: can_action false.
    const reader = await svc.sign("admin", {
      permissions: [
        { namespace: "**", resources: ["notifications"], verbs: ["list"] },
        { namespace: "**", resources: ["connections"], verbs: ["get"] }
      ]
    })
    const seen = expectStatus<{ items: ReadonlyArray<NotificationBody> }>(
      await svc.call("GET", "/api/v1/notifications?include_viewed=true&limit=200", { token: reader }),
      200
    ).items.find((n) => n.id === mine.id)
    expect(seen).toMatchObject({ can_action: false })

    const back = await migrate(c.id, 1)
    expect(back.task.state, back.task.error).toBe("completed")
    expect((await allNotifications()).some((n) => n.id === mine.id)).toBe(false)
  }, 60_000)
})

describe("hostile hooks", () => {
  const hostile: ReadonlyArray<readonly [string, string, string]> = [
    ["an endless loop", "(() => { for (;;) {} })()", "(timeout)"],
    ["a memory bomb", "(() => { const a = []; for (let i = 0; ; i++) a.push({ i }) })()", "(memory)"],
    ["a string bomb", "(() => { let s = 'x'; for (;;) s += s })()", "(memory)"],
    ["deep recursion", "(function f(n) { return f(n + 1) + 1 })(0)", "(stack)"],
    ["the Function constructor", "this.constructor.constructor('return process')()", "(runtime)"],
    ["require", `require("fs")`, "(runtime)"],
    ["huge output", `({ annotations: { set: { big: "x".repeat(2000000) } } })`, "(invalid_output)"],
    ["a svc/ label", `({ labels: { set: { "svc/cxn/-/id": "forged" } } })`, "(invalid_output)"],
    [
      "a built-in notification key",
      `({ notifications: { set: [{ key: "svc.reauth", level: "info", title: "x" }] } })`,
      "(invalid_output)"
    ],
    // SECURITY.md: keys that reach the prototype are refused, not merged through it.
    ["config.set.__proto__", `({ config: { set: JSON.parse('{"__proto__": {"host": "x"}}') } })`, "(invalid_output)"],
    ["config.set.constructor", `({ config: { set: { constructor: "x" } } })`, "(invalid_output)"],
    ["labels.set.constructor", `({ labels: { set: { constructor: "x" } } })`, "(invalid_output)"],
    // SECURITY.md: a notice's action_url is http(s) or a path, never a script.
    [
      "a javascript: action_url",
      `({ notifications: { set: [{ key: "k", level: "info", title: "x", action_url: "javascript:alert(1)" }] } })`,
      "(invalid_output)"
    ],
    [
      "a protocol-relative action_url",
      `({ notifications: { set: [{ key: "k", level: "info", title: "x", action_url: "//evil.example/" }] } })`,
      "(invalid_output)"
    ]
  ]

  it.each(hostile)(
    "%s fails the task with a clear error; nothing persisted; the service serves on",
    async (_name, hook, reason) => {
      const connectorId = await connectorOf("mghost", def({}))
      const c = await connection(connectorId, { configuration: { host: "h" }, labels: { a: "1" } })
      await addVersion(connectorId, def({ up: hook }))
      // The endless loop gets a 3 s migration; the others 30 s (migrations.hook_timeout above).
      const { task } = await migrate(c.id, 2, reason === "(timeout)" ? 3 : 30)
      expect(task.state).toBe("failed")
      expect(task.error).toContain(`hook v2.up failed ${reason}`)
      const row = await getConnection(c.id)
      expect(row.connectorVersion).toBe(1)
      expect(row.labels.a).toBe("1")
      expectStatus(await svc.call("GET", `/api/v1/connections?connectorId=${connectorId}`), 200)
    },
    60_000
  )

  it("a prototype change in one hook is invisible to the next (fresh context per hook)", async () => {
    const connectorId = await connectorOf("mgproto", def({}))
    const c = await connection(connectorId, { configuration: { host: "h" } })
    await addVersion(
      connectorId,
      def({
        up: `(Object.prototype.polluted = "yes", Array.prototype.map = null, { labels: { set: { first: String(({}).polluted) } } })`
      })
    )
    await addVersion(
      connectorId,
      def({ up: `({ labels: { set: { second: String(({}).polluted), map: typeof [].map } } })` })
    )
    const { task } = await migrate(c.id, 3)
    expect(task.state, task.error).toBe("completed")
    const row = await getConnection(c.id)
    expect(row.labels).toMatchObject({ first: "yes", second: "undefined", map: "function" })
  }, 60_000)
})

describe("many connections", () => {
  it("rolls 40 connections forward and back with hooks", async () => {
    const connectorId = await connectorOf("mgmany", def({}))
    const ids: Array<string> = []
    for (let i = 0; i < 40; i++) ids.push((await connection(connectorId, { configuration: { host: `h${i}` } })).id)
    await addVersion(
      connectorId,
      def({
        configure: { base_url: { type: "string" } },
        up: `({ config: { set: { base_url: "https://" + cfg.host }, unset: ["host"] } })`,
        down: `({ config: { set: { host: cfg.base_url.slice(8) }, unset: ["base_url"] } })`
      })
    )
    for (const target of [2, 1]) {
      const handles = await Promise.all(
        ids.map(async (id) => expectStatus<MigrationHandle>(await startMigration(id, { target_version: target }), 202))
      )
      const tasks = await Promise.all(handles.map((h) => ended(h.task_id, 180_000)))
      expect(tasks.filter((t) => t.state !== "completed")).toEqual([])
    }
    const rows = await Promise.all(ids.map(getConnection))
    expect(rows.map((r) => [r.connectorVersion, r.configuration])).toEqual(ids.map((_, i) => [1, { host: `h${i}` }]))
  }, 480_000)
})
