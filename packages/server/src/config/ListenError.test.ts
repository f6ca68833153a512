import { describe, expect, it } from "vitest"
import { SocketServer } from "effect/socket"
import * as net from "node:net"
import { errnoCode, listenError, listenerKey } from "./ListenError.ts"

/** The error Node gives when binding `host:port` fails. */
const bindError = (host: string, port: number) =>
  new Promise<NodeJS.ErrnoException>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", resolve)
    server.listen(port, host, () => server.close(() => reject(new Error(`${host}:${port} was free`))))
  })

describe("listen errors", () => {
  it("a port in use names the port key and its variable, through Effect's error wrappers", async () => {
    const holder = net.createServer()
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve))
    try {
      const port = (holder.address() as net.AddressInfo).port
      const cause = await bindError("127.0.0.1", port)
      // the runner socket's failure arrives as SocketServerError { reason: SocketServerOpenError { cause } }
      const wrapped = new SocketServer.SocketServerError({ reason: new SocketServer.SocketServerOpenError({ cause }) })
      expect(errnoCode(wrapped)).toBe("EADDRINUSE")
      expect(listenError("cluster.runner", "127.0.0.1", port, wrapped).message).toBe(
        `cluster.runner.port: ${port} is in use (EADDRINUSE); set cluster.runner.port or SVC__cluster__runner__port`
      )
      expect(listenError(listenerKey("admin-api"), "127.0.0.1", port, { cause }).message).toBe(
        `admin_api.port: ${port} is in use (EADDRINUSE); set admin_api.port or SVC__admin_api__port`
      )
    } finally {
      await new Promise((resolve) => holder.close(resolve))
    }
  })

  it("an address this machine does not have names the host key", async () => {
    // TEST-NET-1 (RFC 5737) is never a local address.
    const cause = await bindError("192.0.2.1", 0)
    expect(listenError("public", "192.0.2.1", 8080, cause).message).toBe(
      "public.host: 192.0.2.1 is not an address of this machine (EADDRNOTAVAIL); set public.host or SVC__public__host"
    )
  })

  it("an unknown failure still names the block and the port key", () => {
    expect(listenError("worker", "127.0.0.1", 8083, new Error("boom")).message).toBe(
      "worker: cannot listen on 127.0.0.1:8083 (unknown error); set worker.port or SVC__worker__port"
    )
  })
})
