/**
 * The Node server of one service and its one explicit request hook (docs/proxy.md "Two doors"):
 * the server's only `request` listener runs, in order, `observe` (the drain's bookkeeping and the
 * inbound side of telemetry: request id, server span, HTTP metrics, access log), then `hook` (the
 * data plane's warm door on the api and admin-api), and, when the hook did not take the request,
 * the router (effect's handler of the service's HttpApi app, where the cold door is).
 *
 * Listening and closing are `NodeHttpServer.make`'s; only the dispatch of requests is composed
 * here. A request with `Expect: 100-continue` is continued by Node itself and reaches the same
 * listener; the services declare no protocol upgrade, so an `Upgrade` request is an ordinary one.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Scope } from "effect"
import { HttpServer } from "effect/http"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { RequestHook } from "../proxy/DataPlane.ts"
import type { NodeServer } from "./ServerDrain.ts"

/** Runs for every request first, whoever answers it. */
export type RequestObserver = (incoming: IncomingMessage, response: ServerResponse) => void

/** `server`, listening with `options`, as effect's `HttpServer`, its requests dispatched as above. */
export const makeNodeServer = (
  server: NodeServer,
  options: NodeHttpServer.Options,
  observe: RequestObserver,
  hook: RequestHook | undefined
) =>
  Effect.map(
    NodeHttpServer.make(() => server, options),
    (listening) =>
      HttpServer.make({
        address: listening.address,
        serve: (app, middleware) =>
          Effect.gen(function* () {
            const scope = yield* Scope.fork(yield* Effect.scope, "parallel")
            const route = yield* NodeHttpServer.makeHandler(app, {
              scope,
              middleware
            })
            const onRequest =
              hook === undefined
                ? (incoming: IncomingMessage, response: ServerResponse) => {
                    observe(incoming, response)
                    route(incoming, response)
                  }
                : (incoming: IncomingMessage, response: ServerResponse) => {
                    observe(incoming, response)
                    if (!hook(incoming, response)) route(incoming, response)
                  }
            server.on("request", onRequest)
            yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", onRequest)))
          })
      })
  )
