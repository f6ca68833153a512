/**
 * The resource-model services (spec 2, 4.1) behind the api and admin-api handlers and the
 * workers: namespaces, actors, connectors and their definitions, keys, rate-limit rules, search,
 * metadata, notifications, and the shared machinery (ops, listing, change notices).
 */
import { Layer } from "effect"
import { Actors } from "./Actors.ts"
import { ConnectionChanges } from "./ConnectionChanges.ts"
import { ConnectorDefinitions } from "./ConnectorDefinitions.ts"
import { Connectors } from "./Connectors.ts"
import { DefinitionValidator } from "./DefinitionValidator.ts"
import { Keys } from "./Keys.ts"
import { Listing } from "./Listing.ts"
import { Metadata } from "./Metadata.ts"
import { Namespaces } from "./Namespaces.ts"
import { Notifications } from "./Notifications.ts"
import { RateLimits } from "./RateLimits.ts"
import { ResourceOps } from "./ResourceOps.ts"
import { Search } from "./Search.ts"
import { Webhooks } from "./Webhooks.ts"

/** Every resource service; needs the repositories, the actor directory, encryption and the config. */
export const layerNoDeps = Layer.mergeAll(
  Namespaces.layerNoDeps,
  Actors.layerNoDeps,
  Connectors.layerNoDeps,
  Keys.layerNoDeps,
  RateLimits.layerNoDeps,
  Webhooks.layerNoDeps,
  Search.layerNoDeps
).pipe(
  (services) => Metadata.layerNoDeps.pipe(Layer.provideMerge(services)),
  Layer.provideMerge(Notifications.layerNoDeps),
  Layer.provideMerge(
    Layer.mergeAll(
      ResourceOps.layerNoDeps,
      Listing.layerNoDeps,
      ConnectorDefinitions.layerNoDeps,
      DefinitionValidator.layer
    )
  ),
  Layer.provideMerge(ConnectionChanges.layerNoDeps)
)
