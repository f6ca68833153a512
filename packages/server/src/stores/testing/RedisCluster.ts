/**
 * A private Redis Cluster for tests: three masters (and, by default, a replica of each) as
 * `redis-server --cluster-enabled yes` processes on free loopback ports, joined with
 * `redis-cli --cluster create`. Every step is bounded; a failed start and `stop` always leave no
 * process and no directory behind.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)

/** A free TCP port on 127.0.0.1 (bound then released). */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** One `redis-server` of the cluster. */
export interface RedisClusterNode {
  readonly port: number
  /** Whether the process is still running. */
  readonly alive: () => boolean
  /** SIGKILL (a crash): resolves once the process has exited. */
  readonly kill: () => Promise<void>
}

/** A line of `CLUSTER NODES`. */
export interface ClusterNodeLine {
  readonly id: string
  readonly port: number
  readonly flags: ReadonlyArray<string>
  /** The master's id of a replica. */
  readonly masterId: string
  readonly slots: ReadonlyArray<readonly [number, number]>
}

/** A running private Redis Cluster. */
export interface RedisCluster {
  readonly nodes: ReadonlyArray<RedisClusterNode>
  /** Seed nodes as `127.0.0.1:<port>`, every node of the cluster. */
  readonly seeds: ReadonlyArray<string>
  /** Runs one command through `redis-cli -p <port>` (no redirection) and answers its raw output, trimmed. */
  readonly command: (port: number, ...args: ReadonlyArray<string>) => Promise<string>
  /** `CLUSTER NODES` as seen by a live node. */
  readonly topology: () => Promise<ReadonlyArray<ClusterNodeLine>>
  /** The port of the (live, not failed) master serving `key`'s slot. */
  readonly masterOf: (key: string) => Promise<number>
  /**
   * Moves `slot` with its keys to the master on `toPort` (IMPORTING/MIGRATING, MIGRATE, SETSLOT
   * NODE); `midway` runs once the keys have moved but the slot is still MIGRATING (the old owner
   * answers ASK for them).
   */
  readonly migrateSlot: (slot: number, toPort: number, midway?: () => Promise<void>) => Promise<void>
  /** Resolves once every live node reports `cluster_state:ok` and a live master serves every slot. */
  readonly waitUntilOk: (timeoutMs?: number) => Promise<void>
  readonly output: () => string
  /** SIGTERM every node (SIGKILL after 5 s), then removes the directory. Safe to call twice. */
  readonly stop: () => Promise<void>
}

export interface RedisClusterOptions {
  /** Replicas per master: 1 (default, six processes: the cluster survives a master's loss) or 0. */
  readonly replicas?: 0 | 1
  /** `cluster-node-timeout` in ms (default 1500): how soon a silent master is failed over. */
  readonly nodeTimeoutMs?: number
  /** `cluster-require-full-coverage` (default true): false keeps the other slots serving while one has no master. */
  readonly requireFullCoverage?: boolean
  /**
   * TLS only (`--port 0 --tls-port`, `tls-cluster` and `tls-replication` on): the server
   * certificate and key, the CA that verifies clients and peers, and a client certificate for
   * `redis-cli`.
   */
  readonly tls?: {
    readonly ca: string
    readonly cert: string
    readonly key: string
    readonly clientCert: string
    readonly clientKey: string
  }
}

const masters = 3

const parseNodes = (text: string): ReadonlyArray<ClusterNodeLine> =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => {
      const [id = "", address = "", flags = "", masterId = "", , , , , ...slots] = line.split(" ")
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1] ?? 0),
        flags: flags.split(","),
        masterId,
        slots: slots
          .filter((range) => !range.startsWith("["))
          .map((range): readonly [number, number] => {
            const [from, to = from] = range.split("-")
            return [Number(from), Number(to)]
          })
      }
    })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Starts a private Redis Cluster (three masters, by default with a replica each), ready for
 * commands; a start that lost a port to another listener is retried twice.
 */
export const startRedisCluster = async (options: RedisClusterOptions = {}): Promise<RedisCluster> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options)
    } catch (error) {
      if (attempt >= 3) throw error
    }
  }
}

const startOnce = async (options: RedisClusterOptions): Promise<RedisCluster> => {
  const replicas = options.replicas ?? 1
  const count = masters * (1 + replicas)
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-redis-cluster-"))
  let output = ""
  const children: Array<{ readonly port: number; readonly child: ChildProcess; readonly exited: Promise<void> }> = []

  const tls = options.tls
  const cliTls =
    tls === undefined ? [] : ["--tls", "--cacert", tls.ca, "--cert", tls.clientCert, "--key", tls.clientKey]
  const command = async (port: number, ...args: ReadonlyArray<string>) =>
    (
      await run("redis-cli", [...cliTls, "-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 5_000 })
    ).stdout.trim()
  const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null
  const signal = async (entry: (typeof children)[number], name: NodeJS.Signals, graceMs: number) => {
    if (!alive(entry.child)) return
    entry.child.kill(name)
    const timer = setTimeout(() => entry.child.kill("SIGKILL"), graceMs)
    await entry.exited
    clearTimeout(timer)
  }
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await Promise.all(children.map((entry) => signal(entry, "SIGTERM", 5_000)))
    await fs.rm(dir, { recursive: true, force: true })
  }

  const liveNode = () => {
    const entry = children.find((c) => alive(c.child))
    if (entry === undefined) throw new Error("no node of the cluster is running")
    return entry.port
  }
  const topology = async () => parseNodes(await command(liveNode(), "CLUSTER", "NODES"))
  const isServing = (line: ClusterNodeLine) =>
    line.flags.includes("master") && !line.flags.includes("fail") && !line.flags.includes("fail?")

  const waitUntilOk = async (timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs
    let last = ""
    for (;;) {
      try {
        const live = children.filter((c) => alive(c.child))
        const states = await Promise.all(live.map((c) => command(c.port, "CLUSTER", "INFO")))
        const lines = await topology()
        const livePorts = new Set(live.map((c) => c.port))
        const covered = lines
          .filter((line) => isServing(line) && livePorts.has(line.port))
          .reduce((sum, line) => sum + line.slots.reduce((n, [from, to]) => n + to - from + 1, 0), 0)
        last = `states ${states.map((s) => /cluster_state:(\w+)/.exec(s)?.[1]).join(",")}, ${covered} slots served`
        if (states.every((s) => /cluster_state:ok/.test(s)) && covered === 16384) return
      } catch (error) {
        last = String(error)
      }
      if (Date.now() > deadline) throw new Error(`the Redis Cluster was not ok within ${timeoutMs} ms (${last})`)
      await sleep(100)
    }
  }

  try {
    for (let i = 0; i < count; i++) {
      const port = await freePort()
      const busPort = await freePort()
      const child = spawn(
        "redis-server",
        [
          ...(tls === undefined
            ? ["--port", String(port)]
            : [
                "--port",
                "0",
                "--tls-port",
                String(port),
                "--tls-cluster",
                "yes",
                "--tls-replication",
                "yes",
                "--tls-cert-file",
                tls.cert,
                "--tls-key-file",
                tls.key,
                "--tls-ca-cert-file",
                tls.ca,
                "--tls-auth-clients",
                "optional"
              ]),
          "--cluster-port",
          String(busPort),
          "--bind",
          "127.0.0.1",
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          `nodes-${port}.conf`,
          "--cluster-node-timeout",
          String(options.nodeTimeoutMs ?? 1500),
          "--cluster-require-full-coverage",
          options.requireFullCoverage === false ? "no" : "yes",
          "--dir",
          dir,
          "--save",
          "",
          "--appendonly",
          "no",
          "--protected-mode",
          "yes"
        ],
        { stdio: ["ignore", "pipe", "pipe"] }
      )
      const append = (chunk: Buffer) => {
        output += `[${port}] ${chunk.toString("utf8")}`
        if (output.length > 200_000) output = output.slice(-100_000)
      }
      child.stdout?.on("data", append)
      child.stderr?.on("data", append)
      const exited = new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.once("error", (error) => {
          output += `\n${String(error)}`
          resolve()
        })
      })
      children.push({ port, child, exited })
    }
    const deadline = Date.now() + 10_000
    for (const entry of children) {
      for (;;) {
        if (!alive(entry.child)) throw new Error(`redis-server on ${entry.port} exited before answering`)
        if ((await command(entry.port, "PING").catch(() => "")) === "PONG") break
        if (Date.now() > deadline) throw new Error(`redis-server on ${entry.port} did not answer within 10 s`)
        await sleep(50)
      }
    }
    const created = await run(
      "redis-cli",
      [
        ...cliTls,
        "--cluster",
        "create",
        ...children.map((c) => `127.0.0.1:${c.port}`),
        "--cluster-replicas",
        String(replicas),
        "--cluster-yes"
      ],
      { timeout: 30_000 }
    )
    output += created.stdout
    await waitUntilOk()
    if (replicas > 0) {
      // every replica has its master's data stream up, so a failover has a candidate
      const replicaDeadline = Date.now() + 30_000
      for (;;) {
        const lines = await topology()
        const replicaPorts = lines.filter((line) => line.flags.includes("slave")).map((line) => line.port)
        const links = await Promise.all(replicaPorts.map((port) => command(port, "INFO", "replication")))
        if (replicaPorts.length === masters && links.every((info) => /master_link_status:up/.test(info))) break
        if (Date.now() > replicaDeadline) throw new Error("the cluster's replicas did not sync within 30 s")
        await sleep(100)
      }
    }
  } catch (error) {
    await stop()
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${output.slice(-4000)}`)
  }

  return {
    nodes: children.map((entry) => ({
      port: entry.port,
      alive: () => alive(entry.child),
      kill: () => signal(entry, "SIGKILL", 0)
    })),
    seeds: children.map((entry) => `127.0.0.1:${entry.port}`),
    command,
    topology,
    masterOf: async (key) => {
      const slot = Number(await command(liveNode(), "CLUSTER", "KEYSLOT", key))
      const owner = (await topology()).find(
        (line) => isServing(line) && line.slots.some(([from, to]) => slot >= from && slot <= to)
      )
      if (owner === undefined) throw new Error(`no live master serves slot ${slot}`)
      return owner.port
    },
    migrateSlot: async (slot, toPort, midway) => {
      const lines = await topology()
      const source = lines.find(
        (line) => isServing(line) && line.slots.some(([from, to]) => slot >= from && slot <= to)
      )
      const target = lines.find((line) => line.port === toPort)
      if (source === undefined || target === undefined) throw new Error(`cannot move slot ${slot} to ${toPort}`)
      if (source.port === toPort) return
      await command(toPort, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", source.id)
      await command(source.port, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", target.id)
      for (;;) {
        const keys = (await command(source.port, "CLUSTER", "GETKEYSINSLOT", String(slot), "100"))
          .split("\n")
          .filter((key) => key !== "")
        if (keys.length === 0) break
        await command(source.port, "MIGRATE", "127.0.0.1", String(toPort), "", "0", "5000", "KEYS", ...keys)
      }
      await midway?.()
      for (const line of lines.filter((l) => l.flags.includes("master"))) {
        await command(line.port, "CLUSTER", "SETSLOT", String(slot), "NODE", target.id)
      }
    },
    waitUntilOk,
    output: () => output,
    stop
  }
}
