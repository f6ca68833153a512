/**
 * The connection services (spec 4.1–4.4, 8.3): CRUD with encrypted credentials, interactive
 * setup and the OAuth2 browser leg, disconnect, version migration starts, probes, token refresh, and the outbound client
 * they share, over the resource services.
 */
import { Layer } from "effect"
import { BrowserSessions } from "../auth/BrowserSessions.ts"
import { Outbound } from "../outbound/Outbound.ts"
import * as Resources from "../resources/Resources.ts"
import { AuthorizationFlows } from "./AuthorizationFlows.ts"
import { ConnectionAuthorization } from "./ConnectionAuthorization.ts"
import { ConnectionReauth } from "./ConnectionReauth.ts"
import { ConnectionDisconnect } from "./ConnectionDisconnect.ts"
import { Connections } from "./Connections.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { ConnectionSetup } from "./ConnectionSetup.ts"
import { Credentials } from "./Credentials.ts"
import { Lifecycle } from "./Lifecycle.ts"
import { LimitedCalls } from "./LimitedCalls.ts"
import { Migrations } from "./Migrations.ts"
import { OAuthClient } from "./OAuthClient.ts"
import { Probes } from "./Probes.ts"
import { TokenRefresher } from "./TokenRefresher.ts"
import { VerifyProbes } from "./VerifyProbes.ts"

/** Interactive setup: `_initiate`, setup steps, re-authentication, the OAuth2 browser leg, disconnect, browser sessions. */
const setup = Layer.mergeAll(ConnectionAuthorization.layerNoDeps, ConnectionReauth.layerNoDeps).pipe(
  Layer.provideMerge(
    Layer.mergeAll(ConnectionSetup.layerNoDeps, ConnectionDisconnect.layerNoDeps, BrowserSessions.layerNoDeps)
  ),
  Layer.provide(Layer.mergeAll(VerifyProbes.layerNoDeps, AuthorizationFlows.layerNoDeps))
)

/**
 * The connection services merged with the resource services and the outbound client; needs the
 * repositories, the counter store, the actor directory, encryption, the request limiter, the
 * request-event sink and the config.
 */
export const layerNoDeps = Layer.mergeAll(
  Connections.layerNoDeps,
  Probes.layerNoDeps,
  Lifecycle.layerNoDeps,
  Migrations.layerNoDeps
).pipe(
  (services) => setup.pipe(Layer.provideMerge(services)),
  Layer.provideMerge(TokenRefresher.layerNoDeps),
  Layer.provideMerge(Layer.mergeAll(ConnectionSecrets.layerNoDeps, Credentials.layerNoDeps, OAuthClient.layerNoDeps)),
  Layer.provideMerge(LimitedCalls.layerNoDeps),
  Layer.provideMerge(Layer.mergeAll(Resources.layerNoDeps, Outbound.layerFromConfig))
)
