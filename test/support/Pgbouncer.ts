/**
 * A private pgbouncer (Debian package `pgbouncer`, `/usr/sbin/pgbouncer`) in transaction mode for
 * black-box tests: a generated ini on a free loopback port in front of the machine's PostgreSQL
 * (127.0.0.1:5432, user `postgres`, trust), `auth_type = trust` with an auth file naming
 * `postgres`, output captured. pgbouncer refuses to run as root, so under root it switches to
 * the `postgres` user (`user = postgres`). `stop` always leaves no process and no directory behind.
 */
import { watchChild } from "@svc/server/stores/testing/ChildServer"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as path from "node:path"
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { freePort, tempDir } from "./SvcProcess.ts"

const exec = promisify(execFile)

export const pgbouncerBin = "/usr/sbin/pgbouncer"

/** The ini this module writes (also quoted in docs/cluster.md "Connection poolers and TLS"). */
export const pgbouncerIni = (options: { readonly port: number; readonly dir: string; readonly user?: string }) =>
  [
    "[databases]",
    "* = host=127.0.0.1 port=5432",
    "",
    "[pgbouncer]",
    "listen_addr = 127.0.0.1",
    `listen_port = ${options.port}`,
    "unix_socket_dir =",
    "auth_type = trust",
    `auth_file = ${path.join(options.dir, "userlist.txt")}`,
    "pool_mode = transaction",
    "max_client_conn = 500",
    "default_pool_size = 20",
    "ignore_startup_parameters = extra_float_digits",
    "server_reset_query =",
    ...(options.user === undefined ? [] : [`user = ${options.user}`]),
    ""
  ].join("\n")

/** A running pgbouncer. */
export interface Pgbouncer {
  readonly port: number
  /** `postgres://postgres@127.0.0.1:<port>/<database>` */
  readonly url: (database: string) => string
  readonly ini: string
  readonly output: () => string
  readonly alive: () => boolean
  /** SIGTERM (SIGKILL after 5 s), then the directory removed; safe to call twice. */
  readonly stop: () => Promise<void>
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

const startOnce = async (): Promise<Pgbouncer> => {
  const dir = await tempDir("svc-pgbouncer-")
  const port = await freePort()
  // pgbouncer refuses to run as root unless told which user to become after start.
  const root = process.getuid?.() === 0
  const ini = pgbouncerIni({ port, dir, ...(root ? { user: "postgres" } : {}) })
  await fs.writeFile(path.join(dir, "userlist.txt"), '"postgres" ""\n')
  await fs.writeFile(path.join(dir, "pgbouncer.ini"), ini)
  if (root) await exec("chown", ["-R", "postgres:postgres", dir], { timeout: 10_000 })
  const child: ChildProcess = spawn(pgbouncerBin, [path.join(dir, "pgbouncer.ini")], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  const server = watchChild(child)
  const { alive, output } = server
  let stopped = false
  const stop = async () => {
    if (!stopped) {
      stopped = true
      await server.signal("SIGTERM")
      await fs.rm(dir, { recursive: true, force: true })
    }
  }
  const deadline = Date.now() + 10_000
  while (!(await accepts(port))) {
    if (!alive() || Date.now() > deadline) {
      await stop()
      throw new Error(`pgbouncer did not listen on ${port} within 10 s:\n${output()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    ini,
    output,
    alive,
    stop
  }
}

/** Starts pgbouncer on a free loopback port; a port lost to another listener is retried twice. */
export const startPgbouncer = async (): Promise<Pgbouncer> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce()
    } catch (error) {
      if (attempt >= 3) throw error
    }
  }
}
