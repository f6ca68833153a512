/**
 * A fake upstream for tests of a host application (docs/testing.md): an HTTP server on 127.0.0.1
 * that records every request svc sent it (method, path, query, headers, body) and answers by path
 * prefix through replaceable handlers (unrouted paths answer 404).
 */
import { type RecordedRequest, startLocalServer } from "@svc/server/outbound/testing/LocalServer"
import { Context, Effect, Layer } from "effect"

/** One request as the upstream saw it (method, request-line URL, headers, raw headers, body), with its path, query and text split out. */
export interface SeenRequest extends RecordedRequest {
  readonly path: string
  readonly query: URLSearchParams
  /** The body as UTF-8 text. */
  readonly text: string
}

/** What a handler answers. */
export interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
}

/** A running fake upstream. */
export interface Upstream {
  readonly port: number
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  /** `127.0.0.1:<port>`, as a connector definition's `proxy.allowed_hosts` names it. */
  readonly host: string
  /** Every request so far, oldest first. */
  readonly seen: () => ReadonlyArray<SeenRequest>
  /** Replaces the answer for requests whose path starts with `prefix` (the longest prefix wins). */
  readonly route: (prefix: string, handler: (request: SeenRequest) => Answer) => void
  readonly close: () => Promise<void>
}

const seenOf = (request: RecordedRequest): SeenRequest => {
  const url = new URL(request.url, "http://upstream")
  return { ...request, path: url.pathname, query: url.searchParams, text: request.body.toString("utf8") }
}

/** Starts a fake upstream on 127.0.0.1 (an ephemeral port); `close()` stops it. */
export const startUpstream = async (): Promise<Upstream> => {
  const routes = new Map<string, (request: SeenRequest) => Answer>()
  const server = await startLocalServer((request, response) => {
    const seen = seenOf(request)
    const handler = [...routes.entries()]
      .filter(([prefix]) => seen.path.startsWith(prefix))
      .sort((a, b) => b[0].length - a[0].length)[0]?.[1]
    const answer = handler?.(seen) ?? { status: 404, body: "not found" }
    response.writeHead(answer.status, answer.headers ?? {})
    response.end(answer.body ?? "")
  })
  return {
    port: server.port,
    origin: server.origin,
    host: `127.0.0.1:${server.port}`,
    seen: () => server.requests.map(seenOf),
    route: (prefix, handler) => {
      routes.set(prefix, handler)
    },
    close: server.close
  }
}

/** The fake upstream of a test, as a service; closed when its layer's scope closes. */
export class FakeUpstream extends Context.Service<FakeUpstream, Upstream>()("@svc/testing/FakeUpstream") {
  static readonly layer: Layer.Layer<FakeUpstream> = Layer.effect(
    FakeUpstream,
    Effect.acquireRelease(
      Effect.promise(() => startUpstream()),
      (upstream) => Effect.promise(() => upstream.close())
    )
  )
}
