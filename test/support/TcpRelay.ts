/**
 * A loopback TCP relay for fault tests: a process under test reaches a shared server (PostgreSQL)
 * through it, and the test cuts that path (every open connection reset, new ones reset at once)
 * and restores it, without touching the server other suites use.
 */
import * as net from "node:net"

export interface TcpRelay {
  /** The port the relay listens on (127.0.0.1). */
  readonly port: number
  /** Connections accepted so far (cut ones included). */
  readonly accepted: () => number
  /** Resets every open connection; new ones are reset as soon as they arrive, until `restore`. */
  readonly cut: () => void
  readonly restore: () => void
  readonly close: () => Promise<void>
}

/** Starts a relay on a free loopback port to `targetHost:targetPort`. */
export const startTcpRelay = async (targetPort: number, targetHost = "127.0.0.1"): Promise<TcpRelay> => {
  const open = new Set<net.Socket>()
  let isCut = false
  let accepted = 0
  const server = net.createServer((client) => {
    accepted++
    if (isCut) {
      client.resetAndDestroy()
      return
    }
    const upstream = net.connect(targetPort, targetHost)
    open.add(client)
    open.add(upstream)
    const end = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    client.on("error", end)
    upstream.on("error", end)
    client.on("close", end)
    upstream.on("close", end)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    port,
    accepted: () => accepted,
    cut: () => {
      isCut = true
      for (const socket of open) socket.resetAndDestroy()
      open.clear()
    },
    restore: () => {
      isCut = false
    },
    close: async () => {
      isCut = true
      for (const socket of open) socket.destroy()
      open.clear()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
