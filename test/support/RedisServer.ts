/**
 * A private `redis-server` for black-box tests that must disturb Redis (kill it, fill it) without
 * touching the shared one: a free loopback port, no persistence, output captured, `command` through
 * `redis-cli`, and `stop`/`kill` that always leave no process behind.
 */
import { watchChild } from "@svc/server/stores/testing/ChildServer"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { promisify } from "node:util"
import { freePort } from "./SvcProcess.ts"

const run = promisify(execFile)

/** A running private Redis. */
export interface RedisServer {
  readonly port: number
  /** `redis://127.0.0.1:<port>` */
  readonly url: string
  readonly output: () => string
  /** Runs one command through `redis-cli` and answers its raw output, trimmed. */
  readonly command: (...args: ReadonlyArray<string>) => Promise<string>
  /** Whether the process is still running. */
  readonly alive: () => boolean
  /** SIGKILL (a crash): resolves once the process has exited. */
  readonly kill: () => Promise<void>
  /** SIGTERM, SIGKILL after 5 s; resolves once the process has exited. Safe to call twice. */
  readonly stop: () => Promise<void>
}

const startOnce = async (): Promise<RedisServer> => {
  const port = await freePort()
  const child: ChildProcess = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  const { alive, output, signal } = watchChild(child)
  const command = async (...args: ReadonlyArray<string>) =>
    (await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 5_000 })).stdout.trim()

  const deadline = Date.now() + 10_000
  for (;;) {
    if (!alive()) throw new Error(`redis-server exited before answering:\n${output()}`)
    const pong = await command("PING").catch(() => "")
    if (pong === "PONG") break
    if (Date.now() > deadline) {
      await signal("SIGKILL", 0)
      throw new Error(`redis-server did not answer on ${port} within 10 s:\n${output()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    output,
    command,
    alive,
    kill: () => signal("SIGKILL", 0),
    stop: () => signal("SIGTERM", 5_000)
  }
}

/** Starts a private Redis on a free loopback port; a port lost to another listener is retried twice. */
export const startRedisServer = async (): Promise<RedisServer> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce()
    } catch (error) {
      if (attempt >= 3) throw error
    }
  }
}
