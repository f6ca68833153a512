/**
 * The drain of a process's HTTP servers on shutdown (SIGTERM/SIGINT): optionally a delay in which
 * `/readyz` answers 503 while the listeners still serve (`http.shutdown_delay`), then no new
 * connections, `Connection: close` on every answer still to come, idle kept-alive sockets closed,
 * in-flight requests finished within `http.drain_timeout`.
 */
import { Context, Effect } from "effect"
import type * as http from "node:http"
import type * as https from "node:https"

/** A Node HTTP or HTTPS server. */
export type NodeServer = http.Server | https.Server

/** Drains the HTTP servers of this process on shutdown (SIGTERM/SIGINT). */
export interface Drain {
  /** Tracks `server`'s requests from its first one; answers the server. */
  readonly track: <S extends NodeServer>(server: S) => S
  /**
   * The bookkeeping `track` does on each request of `server`, for a server whose one request
   * listener calls it first (`NodeServer.ts`); idempotent per request.
   */
  readonly observer: (server: NodeServer) => (request: http.IncomingMessage, response: http.ServerResponse) => void
  /**
   * Stops taking requests: the listeners close, every answer not yet started carries
   * `Connection: close` (its socket closes after it), idle kept-alive sockets close at once and
   * busy ones as soon as their answer is over. Completes when every connection is gone, or at the
   * deadline, when the connections left are closed (their requests are cut).
   */
  readonly drain: Effect.Effect<void>
  /** True from the start of `drain` on (`/readyz` answers 503), the shutdown delay included. */
  readonly shuttingDown: () => boolean
}

/** The drain of this process's servers, shared by every server layer. */
export class ServerDrain extends Context.Service<ServerDrain, Drain>()("@svc/server/http/ServerDrain") {}

/**
 * A drain whose in-flight requests get at most `timeoutMs` to finish. With `delayMs` > 0 the
 * listeners keep serving that long first, answering `/readyz` with 503, so a load balancer
 * (a Kubernetes Service) stops sending before they close.
 */
export const makeDrain = (timeoutMs: number, delayMs = 0): Drain => {
  let shuttingDown = false
  let draining = false
  const servers = new Map<NodeServer, Set<http.ServerResponse>>()

  const closeAfter = (server: NodeServer, response: http.ServerResponse) => {
    // Its headers already promised keep-alive: close the socket once the answer is over.
    response.once("finish", () => setImmediate(() => server.closeIdleConnections()))
  }

  const observed = new WeakSet<http.ServerResponse>()
  const observer = (server: NodeServer) => {
    let inFlight = servers.get(server)
    if (inFlight === undefined) {
      inFlight = new Set<http.ServerResponse>()
      servers.set(server, inFlight)
    }
    const set = inFlight
    return (_request: http.IncomingMessage, response: http.ServerResponse) => {
      if (observed.has(response)) return
      observed.add(response)
      if (draining) {
        response.shouldKeepAlive = false
        return
      }
      set.add(response)
      response.once("close", () => set.delete(response))
    }
  }

  const track = <S extends NodeServer>(server: S): S => {
    // Prepended: runs before the request handler writes anything.
    server.prependListener("request", observer(server))
    return server
  }

  const drainOne = (server: NodeServer, inFlight: Set<http.ServerResponse>, deadline: number) =>
    new Promise<number>((resolve) => {
      for (const response of inFlight) {
        if (response.headersSent) closeAfter(server, response)
        else response.shouldKeepAlive = false
      }
      let timer: NodeJS.Timeout | undefined
      const done = (cut: number) => {
        if (timer !== undefined) clearTimeout(timer)
        resolve(cut)
      }
      if (!server.listening) return done(0)
      server.close(() => done(0))
      server.closeIdleConnections()
      timer = setTimeout(
        () => {
          const cut = inFlight.size
          server.closeAllConnections()
          done(cut)
        },
        Math.max(0, deadline - Date.now())
      )
    })

  const drain = Effect.gen(function* () {
    if (shuttingDown) return
    shuttingDown = true
    if (delayMs > 0) {
      yield* Effect.logInfo(`http: not ready; serving ${delayMs} ms more before draining`)
      yield* Effect.sleep(delayMs)
    }
    draining = true
    const inFlight = [...servers.values()].reduce((n, set) => n + set.size, 0)
    yield* Effect.logInfo(`http: draining, ${inFlight} request(s) in flight (deadline ${timeoutMs} ms)`)
    const deadline = Date.now() + timeoutMs
    const cut = yield* Effect.promise(() =>
      Promise.all([...servers.entries()].map(([server, set]) => drainOne(server, set, deadline)))
    )
    const total = cut.reduce((n, c) => n + c, 0)
    if (total > 0) {
      yield* Effect.logWarning(`http: drain deadline of ${timeoutMs} ms passed; ${total} request(s) cut`)
    } else {
      yield* Effect.logInfo("http: drained")
    }
  })

  return { track, observer, drain, shuttingDown: () => shuttingDown }
}
