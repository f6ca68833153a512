/**
 * Resources a test starts with (docs/testing.md "Fixtures"): plain JSON bodies of the api's create
 * routes, keyed by a name the test picks, created through the api itself (so the server validates
 * them exactly as it validates a host application's calls) in dependency order.
 */

/** A resource svc answered with: its id and the rest of its JSON body. */
export interface Seeded {
  readonly id: string
  readonly name: string
  readonly namespace: string
  readonly [field: string]: unknown
}

/** A connector to create (version 1), published as the primary version unless `publish: false`. */
export interface ConnectorSeed {
  readonly namespace: string
  readonly name?: string
  /** The connector definition document (docs/connector-definitions.md). */
  readonly definition: Readonly<Record<string, unknown>>
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
  readonly publish?: boolean
}

/** A connection created server-side (`POST /connections`) on a connector of the fixture, named by its key. */
export interface ConnectionSeed {
  readonly connector: string
  readonly namespace?: string
  readonly name?: string
  readonly configuration?: Readonly<Record<string, unknown>>
  readonly credentials?: Readonly<Record<string, unknown>>
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
}

/** The resources of a test. Every map's keys name the created resources in `SvcTest.seeded`. */
export interface Fixture {
  /** `POST /namespaces` bodies (`{ path, labels?, annotations? }`), created first. */
  readonly namespaces?: ReadonlyArray<Readonly<Record<string, unknown>> & { readonly path: string }>
  /** `POST /actors` bodies (`{ externalId, namespace, permissions?, … }`). */
  readonly actors?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  readonly connectors?: Readonly<Record<string, ConnectorSeed>>
  readonly connections?: Readonly<Record<string, ConnectionSeed>>
  /** `POST /rate-limits` bodies (`{ namespace, name?, definition, labels? }`, docs/rate-limits.md). */
  readonly rateLimits?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
}

/** The created resources, by the fixture's keys. */
export interface SeededResources {
  readonly namespaces: ReadonlyArray<Seeded>
  readonly actors: Readonly<Record<string, Seeded>>
  readonly connectors: Readonly<Record<string, Seeded>>
  readonly connections: Readonly<Record<string, Seeded>>
  readonly rateLimits: Readonly<Record<string, Seeded>>
}

/** A fixture call that svc refused: the route, the status and svc's error body. */
export class FixtureError extends Error {
  readonly route: string
  readonly status: number
  readonly body: string
  constructor(route: string, status: number, body: string) {
    super(`svc fixture: ${route} answered ${status}: ${body}`)
    this.name = "FixtureError"
    this.route = route
    this.status = status
    this.body = body
  }
}

const call = async (baseUrl: string, token: string, method: string, route: string, body?: unknown): Promise<Seeded> => {
  const response = await fetch(`${baseUrl}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (!response.ok) throw new FixtureError(`${method} ${route}`, response.status, text)
  return JSON.parse(text) as Seeded
}

const entries = <A>(record: Readonly<Record<string, A>> | undefined): ReadonlyArray<readonly [string, A]> =>
  Object.entries(record ?? {})

/** Creates the fixture's resources on the api at `baseUrl` with an admin token. */
export const seed = async (baseUrl: string, token: string, fixture: Fixture): Promise<SeededResources> => {
  const post = (route: string, body: unknown) => call(baseUrl, token, "POST", `/api/v1/${route}`, body)
  const namespaces: Array<Seeded> = []
  for (const body of fixture.namespaces ?? []) namespaces.push(await post("namespaces", body))
  const actors: Record<string, Seeded> = {}
  for (const [key, body] of entries(fixture.actors)) actors[key] = await post("actors", body)
  const connectors: Record<string, Seeded> = {}
  for (const [key, { publish, ...body }] of entries(fixture.connectors)) {
    const created = await post("connectors", body)
    if (publish !== false) {
      await call(baseUrl, token, "PUT", `/api/v1/connectors/${created.id}/versions/1/_state`, { state: "primary" })
    }
    connectors[key] =
      publish === false ? created : await call(baseUrl, token, "GET", `/api/v1/connectors/${created.id}`)
  }
  const connections: Record<string, Seeded> = {}
  for (const [key, { connector, ...body }] of entries(fixture.connections)) {
    const connectorId = connectors[connector]?.id
    if (connectorId === undefined) {
      throw new FixtureError("POST /api/v1/connections", 0, `connection "${key}" names no connector "${connector}"`)
    }
    connections[key] = await post("connections", { connectorId, ...body })
  }
  const rateLimits: Record<string, Seeded> = {}
  for (const [key, body] of entries(fixture.rateLimits)) rateLimits[key] = await post("rate-limits", body)
  return { namespaces, actors, connectors, connections, rateLimits }
}
