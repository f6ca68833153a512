/** Connector probes (spec 4.2, API-CONVENTIONS "Proxy"): run one probe through a connection. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ProbeResult } from "../Connection.ts"
import { BadGateway, GatewayTimeout } from "../Errors.ts"
import { permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

export class ProbesApi extends HttpApiGroup.make("probes")
  .add(
    HttpApiEndpoint.get("run", "/api/v1/connectors/:connector/probes/:probe", {
      params: { connector: Schema.String, probe: Schema.String },
      query: { connectionId: Schema.String },
      success: ProbeResult,
      error: [...resourceErrors, BadGateway, GatewayTimeout]
    })
      .annotate(RequiredPermission, permission("connections", "proxy"))
      .annotate(
        OpenApi.Description,
        "Runs the connector-defined probe once through the connection's credentials and answers its outcome. An upstream failure is a `failure` outcome (200); the connection must belong to the connector."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Probes") {}
