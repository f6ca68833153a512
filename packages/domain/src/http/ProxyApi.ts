/** The proxy data plane (spec 4.2; API-CONVENTIONS "Proxy"): `_proxy` and `_proxy_raw`. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadGateway, GatewayTimeout, RateLimited, ServiceUnavailable } from "../Errors.ts"
import { ProxyRequest, ProxyResponse } from "../Proxy.ts"
import { permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const errors = [...resourceErrors, RateLimited, BadGateway, GatewayTimeout, ServiceUnavailable] as const
const params = { id: Schema.String }
const rawPath = "/api/v1/connections/:id/_proxy_raw"
const rawSuccess = HttpApiSchema.StreamUint8Array({ contentType: "application/octet-stream" })
const rawDescription =
  "Streaming proxy: the upstream target is the absolute URL in `X-Svc-Upstream-URL`, the upstream method is this request's method (or `X-Svc-Upstream-Method`), request labels come from repeatable `X-Svc-Label: key=value` headers. The connection's credentials are applied; the caller's `Authorization`, every `X-Svc-*` header and hop-by-hop headers never reach the upstream. Both bodies stream (chunked uploads, server-sent events) and the upstream status, headers and body are answered as they are; redirects are returned, never followed. A rate-limit rule or the connection's cool-down answers svc's own 429 (X-Svc-Ratelimited: true) without calling the upstream."

/** `_proxy` and the methods of `_proxy_raw`, on the api and admin-api. */
export class ProxyApi extends HttpApiGroup.make("proxy")
  .add(
    HttpApiEndpoint.post("proxy", "/api/v1/connections/:id/_proxy", {
      params,
      payload: ProxyRequest,
      success: ProxyResponse,
      error: errors
    })
      .annotate(RequiredPermission, permission("connections", "proxy"))
      .annotate(
        OpenApi.Description,
        "Sends one request to the connection's upstream with the connection's credentials applied and answers the upstream response in an envelope (200 for any upstream answer, a genuine upstream 429 included). A rate-limit rule or the connection's cool-down answers a real 429 instead (not an envelope) with Retry-After and X-Svc-Ratelimited. The URL's host must be one the connector allows. `bodyJson` is sent as JSON, `bodyRaw` as base64-decoded bytes; the answer carries `bodyJson` when the upstream answered JSON, else `bodyRaw`."
      ),
    HttpApiEndpoint.post("rawPost", rawPath, { params, success: rawSuccess, error: errors })
      .annotate(RequiredPermission, permission("connections", "proxy"))
      .annotate(OpenApi.Description, rawDescription),
    HttpApiEndpoint.get("rawGet", rawPath, { params, success: rawSuccess, error: errors })
      .annotate(RequiredPermission, permission("connections", "proxy"))
      .annotate(OpenApi.Description, rawDescription),
    HttpApiEndpoint.put("rawPut", rawPath, { params, success: rawSuccess, error: errors })
      .annotate(RequiredPermission, permission("connections", "proxy"))
      .annotate(OpenApi.Description, rawDescription),
    HttpApiEndpoint.patch("rawPatch", rawPath, { params, success: rawSuccess, error: errors })
      .annotate(RequiredPermission, permission("connections", "proxy"))
      .annotate(OpenApi.Description, rawDescription),
    HttpApiEndpoint.delete("rawDelete", rawPath, { params, success: rawSuccess, error: errors })
      .annotate(RequiredPermission, permission("connections", "proxy"))
      .annotate(OpenApi.Description, rawDescription)
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Proxy") {}
