/**
 * A routed local upstream for black-box tests: the server package's recording `LocalServer`,
 * answering by path prefix through replaceable handlers (unrouted paths answer 404).
 */
import { type RecordedRequest, startLocalServer } from "@svc/server/outbound/testing/LocalServer"

/** One request as the upstream saw it, with its path and query split out. */
export interface SeenRequest extends RecordedRequest {
  readonly path: string
  readonly query: URLSearchParams
}

/** What a handler answers. */
export interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
}

/** A running upstream. */
export interface Upstream {
  readonly port: number
  readonly origin: string
  /** Every request so far, oldest first. */
  readonly seen: () => ReadonlyArray<SeenRequest>
  /** Replaces the answer for requests whose path starts with `prefix` (the longest prefix wins). */
  readonly route: (prefix: string, handler: (request: SeenRequest) => Answer) => void
  readonly close: () => Promise<void>
}

const seenOf = (request: RecordedRequest): SeenRequest => {
  const url = new URL(request.url, "http://upstream")
  return { ...request, path: url.pathname, query: url.searchParams }
}

/** Starts an upstream on 127.0.0.1. */
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
    seen: () => server.requests.map(seenOf),
    route: (prefix, handler) => {
      routes.set(prefix, handler)
    },
    close: server.close
  }
}
