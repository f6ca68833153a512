/**
 * A loopback front server for tests of handlers that write the Node response themselves (such as
 * `DataPlane.proxyRaw`): node:http on 127.0.0.1 with an ephemeral port, each request answered by
 * an Effect run with the services of the fiber that started the server (its clock included). A
 * failure or defect answers 599 with the cause's text for the test to read. Closed with the scope.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, type Scope } from "effect"

/** Starts the server; `origin` is `http://127.0.0.1:<port>`. */
export const effectServer = <E>(
  handle: (request: IncomingMessage, response: ServerResponse) => Effect.Effect<void, E>
): Effect.Effect<{ readonly origin: string }, never, Scope.Scope> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<never>()
    const server = yield* Effect.acquireRelease(
      Effect.promise(() => {
        const server = createServer((request, response) => {
          void Effect.runPromiseWith(context)(
            handle(request, response).pipe(
              Effect.catchCause((cause) =>
                Effect.sync(() => {
                  if (!response.headersSent) response.writeHead(599)
                  response.end(String(cause))
                })
              )
            )
          )
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
    )
    return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
  })
