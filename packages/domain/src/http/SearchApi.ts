/** Resource search on the admin API (spec 4.1): names and user-label values, ranked. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Limit, ResourceType } from "../Resource.ts"
import { resourceErrors } from "./Endpoints.ts"
import { Authentication } from "./Security.ts"

/** One hit: `match` tells how it matched (`exact`, `prefix`, `substring`, `label`). */
export const SearchHit = Schema.Struct({
  resourceType: ResourceType,
  id: Schema.String,
  name: Schema.String,
  namespace: Schema.String,
  match: Schema.Literals(["exact", "prefix", "substring", "label"]),
  labels: Schema.Record(Schema.String, Schema.String)
}).annotate({ identifier: "SearchHit" })
export type SearchHit = typeof SearchHit.Type

export class SearchApi extends HttpApiGroup.make("search")
  .add(
    HttpApiEndpoint.get("resources", "/api/v1/search/resources", {
      query: {
        q: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)),
        resourceType: Schema.optionalKey(ResourceType),
        limit: Schema.optionalKey(Limit)
      },
      success: Schema.Struct({ items: Schema.Array(SearchHit) }).annotate({ identifier: "SearchResult" }),
      error: resourceErrors
    }).annotate(
      OpenApi.Description,
      "Searches names and user-label values: exact name, then name prefix, then substring and label matches. Only resources the caller may list are returned."
    )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Search") {}
