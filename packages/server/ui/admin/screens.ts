/**
 * The admin UI's screens, in navigation order: `#/<key>` shows `view` under `title`. A new screen
 * is one import and one line here (the navigation and the route follow).
 */
import type { FunctionComponent } from "preact"
import { ActorsView } from "./Actors.tsx"
import { ConnectionsView } from "./Connections.tsx"
import { ConnectorsView } from "./Connectors.tsx"
import { EventsView } from "./Events.tsx"
import { MetricsView } from "./Metrics.tsx"
import { NamespacesView } from "./Namespaces.tsx"
import { RateLimitsView } from "./RateLimits.tsx"
import { SearchView } from "./Search.tsx"
import { WebhooksView } from "./Webhooks.tsx"

export interface ScreenEntry {
  readonly title: string
  readonly view: FunctionComponent
}

export const screens = {
  search: { title: "Search", view: SearchView },
  namespaces: { title: "Namespaces", view: NamespacesView },
  actors: { title: "Actors", view: ActorsView },
  connectors: { title: "Connectors", view: ConnectorsView },
  connections: { title: "Connections", view: ConnectionsView },
  "rate-limits": { title: "Rate limits", view: RateLimitsView },
  webhooks: { title: "Webhooks", view: WebhooksView },
  events: { title: "Request events", view: EventsView },
  metrics: { title: "Metrics", view: MetricsView }
} satisfies Readonly<Record<string, ScreenEntry>>

export type Screen = keyof typeof screens

/** The screen a location hash names; Search for anything else. */
export const screenOf = (hash: string): Screen => {
  const name = hash.replace(/^#\/?/, "")
  return name in screens ? (name as Screen) : "search"
}
