/** Request-event endpoints (spec 4.7; API-CONVENTIONS "Lists" and "Request events"). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  RequestEvent,
  type RequestEventFilterName,
  RequestEventList,
  requestEventFilterProblem
} from "../RequestEvent.ts"
import { ServiceUnavailable } from "../Errors.ts"
import { Recording } from "../Recording.ts"
import { Limit } from "../Resource.ts"
import { permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

/** A filter parameter: query text checked by the same parser the list applies. */
const filter = (name: RequestEventFilterName, description: string) =>
  Schema.optionalKey(
    // The description on the string, not the check: a check's description would replace its message.
    Schema.String.annotate({ description }).check(
      Schema.makeFilter((text: string) => requestEventFilterProblem(name, text) ?? true)
    )
  )

/** Query of the request-event list: the filters, spelled as API-CONVENTIONS names them, and paging. */
export const RequestEventListQuery = {
  namespace: filter("namespace", "A namespace path (root.acme) or a subtree matcher (root.acme.**)"),
  connectorId: filter("connectorId", "Connector id (cxr_…)"),
  connectionId: filter("connectionId", "Connection id (cxn_…)"),
  method: filter("method", "HTTP method, case-insensitive (GET)"),
  statusCode: filter("statusCode", "Response status code (429); events without a response never match"),
  statusCodeRange: filter("statusCodeRange", "Inclusive range of response status codes (200-299)"),
  path: filter("path", "Exact request path (/v1/users); a trailing * matches every path with that prefix (/v1/*)"),
  response_source: filter("response_source", "upstream, connector_rate_limiter or rate_limit"),
  rate_limit_id: filter("rate_limit_id", "Id of the rate-limit rule that decided the request (rl_…)"),
  labelSelector: filter("labelSelector", "Label selector (spec 2.6) over the frozen label snapshot of the event"),
  start: filter("start", "ISO 8601 timestamp; events at or after it"),
  end: filter("end", "ISO 8601 timestamp; events before it"),
  limit: Schema.optionalKey(Limit),
  cursor: Schema.optionalKey(Schema.String)
}

/** List request events and read one, on the api and admin-api. */
export class RequestEventsApi extends HttpApiGroup.make("requestEvents")
  .add(
    HttpApiEndpoint.get("list", "/api/v1/metrics/request-events", {
      query: RequestEventListQuery,
      success: RequestEventList,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("request-events", "list"))
      .annotate(
        OpenApi.Description,
        "Request-event metadata of proxied requests in namespaces where the caller may list request events, newest first (timestamp, then id, descending). Filters combine with AND. `limit` is 1 to 1000 (default 100); pass the returned `cursor` to get the next page, which keeps the filters of the first call (other filters with a cursor are a 400 `invalid_cursor`)."
      ),
    HttpApiEndpoint.get("get", "/api/v1/metrics/request-events/:id", {
      params: { id: Schema.String },
      success: RequestEvent,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("request-events", "get"))
      .annotate(
        OpenApi.Description,
        "One request event; 404 when it is unknown or the caller may not get request events in its namespace."
      ),
    HttpApiEndpoint.get("recording", "/api/v1/metrics/request-events/:id/recording", {
      params: { id: Schema.String },
      success: Recording,
      error: [...resourceErrors, ServiceUnavailable]
    })
      .annotate(RequiredPermission, permission("request-events", "get"))
      .annotate(
        OpenApi.Description,
        "The full recording of one request event (when `appMetrics.requestEvents.fullRequestRecording` was `always`): the request as the caller sent it and the response, decrypted, with the recording's redactions kept (credentials and secret headers replaced) and each body's `truncated` flag and `totalBytes`. 404 like the event itself (unknown, or not readable by the caller), or `recording_not_found` when the event has no recording."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Request events") {}
