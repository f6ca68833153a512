/**
 * A host application's use of the typed client (docs/client.md, shown there verbatim): `SvcClient`
 * from `@svc/client`, built from the domain package's `ApiV1` declaration, so every path, query,
 * payload, answer and error is typed and decoded by the same schemas the server uses.
 */
import { SvcClient } from "@svc/client/SvcClient"
import { Effect } from "effect"

export { SvcClient }

/**
 * Lists the configured connections of one connector, then sends `GET url` through the first one
 * with its credentials applied (`_proxy`): the upstream's status, headers and body come back in an
 * envelope. A 429 from a rate limit or a cool-down fails with the typed `RateLimited` error.
 */
export const listAndProxy = Effect.fn("listAndProxy")(function* (connectorId: string, url: string) {
  const svc = yield* SvcClient
  const page = yield* svc.connections.list({
    query: { connectorId, state: "configured", order: "createdAt ASC", limit: 10 }
  })
  const first = page.items[0]
  if (first === undefined) return { connections: page.items, answer: undefined }
  const answer = yield* svc.proxy.proxy({
    params: { id: first.id },
    payload: { method: "GET", url, labels: { feature: "example" } }
  })
  return { connections: page.items, answer }
})
