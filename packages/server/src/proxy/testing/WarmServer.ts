/**
 * A loopback server whose only request listener is a data plane's warm door (as
 * `http/NodeServer.ts` wires it, without the router): a request the door does not take is
 * answered 598 `declined`, so a test sees which requests the warm door took. Closed with the scope.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, type Scope } from "effect"
import type { RequestHook } from "../WarmDoor.ts"

/** Starts the server; `origin` is `http://127.0.0.1:<port>`. */
export const warmServer = (door: RequestHook): Effect.Effect<{ readonly origin: string }, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.promise(() => {
        const server = createServer((request, response) => {
          if (door(request, response)) return
          response.writeHead(598, { "content-type": "text/plain" })
          response.end("declined")
        })
        return new Promise<typeof server>((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)))
      }),
      (server) =>
        Effect.promise(
          () =>
            new Promise<void>((resolve) => {
              server.closeAllConnections()
              server.close(() => resolve())
            })
        )
    ),
    (server) => ({ origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })
  )
