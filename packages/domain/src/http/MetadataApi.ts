/**
 * Label and annotation sub-resources of every resource type (spec 4.1):
 * `GET/PUT/DELETE /api/v1/<resource>/{id}/labels[/{label}]`, the same for annotations. A key
 * containing `/` is sent percent-encoded (`example.com%2Fteam`).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { resourceTypes, type ResourceType } from "../Resource.ts"
import { permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

/** One label or annotation. */
export const Entry = Schema.Struct({ key: Schema.String, value: Schema.String }).annotate({
  identifier: "MetadataEntry"
})
export type Entry = typeof Entry.Type

/** Body of a PUT of one label or annotation. */
export const EntryValue = Schema.Struct({ value: Schema.String }).annotate({ identifier: "MetadataValue" })

const StringMap = Schema.Record(Schema.String, Schema.String)

/** The metadata group of one resource type, named `<type>Metadata`. */
export const metadataGroup = <const Type extends ResourceType>(type: Type) => {
  const { segment, permission: resource } = resourceTypes[type]
  const base = `/api/v1/${segment}/:id` as const
  const params = { id: Schema.String }
  const keyed = { id: Schema.String, key: Schema.String }
  return HttpApiGroup.make(`${type}Metadata`)
    .add(
      HttpApiEndpoint.get("getLabels", `${base}/labels`, { params, success: StringMap, error: resourceErrors })
        .annotate(RequiredPermission, permission(resource, "get"))
        .annotate(OpenApi.Description, "All labels: user labels plus system labels."),
      HttpApiEndpoint.get("getLabel", `${base}/labels/:key`, { params: keyed, success: Entry, error: resourceErrors })
        .annotate(RequiredPermission, permission(resource, "get"))
        .annotate(OpenApi.Description, "One label."),
      HttpApiEndpoint.put("putLabel", `${base}/labels/:key`, {
        params: keyed,
        payload: EntryValue,
        success: Entry,
        error: resourceErrors
      })
        .annotate(RequiredPermission, permission(resource, "update"))
        .annotate(OpenApi.Description, "Sets or updates one user label (svc/ keys are reserved)."),
      HttpApiEndpoint.delete("deleteLabel", `${base}/labels/:key`, {
        params: keyed,
        success: HttpApiSchema.NoContent,
        error: resourceErrors
      })
        .annotate(RequiredPermission, permission(resource, "update"))
        .annotate(OpenApi.Description, "Removes one user label."),
      HttpApiEndpoint.get("getAnnotations", `${base}/annotations`, {
        params,
        success: StringMap,
        error: resourceErrors
      })
        .annotate(RequiredPermission, permission(resource, "get"))
        .annotate(OpenApi.Description, "All annotations."),
      HttpApiEndpoint.get("getAnnotation", `${base}/annotations/:key`, {
        params: keyed,
        success: Entry,
        error: resourceErrors
      })
        .annotate(RequiredPermission, permission(resource, "get"))
        .annotate(OpenApi.Description, "One annotation."),
      HttpApiEndpoint.put("putAnnotation", `${base}/annotations/:key`, {
        params: keyed,
        payload: EntryValue,
        success: Entry,
        error: resourceErrors
      })
        .annotate(RequiredPermission, permission(resource, "update"))
        .annotate(OpenApi.Description, "Sets or updates one annotation (256 KB per resource in total)."),
      HttpApiEndpoint.delete("deleteAnnotation", `${base}/annotations/:key`, {
        params: keyed,
        success: HttpApiSchema.NoContent,
        error: resourceErrors
      })
        .annotate(RequiredPermission, permission(resource, "update"))
        .annotate(OpenApi.Description, "Removes one annotation.")
    )
    .middleware(Authentication)
    .annotate(OpenApi.Title, `${type} labels and annotations`)
}

export const NamespacesMetadataApi = metadataGroup("namespaces")
export const ActorsMetadataApi = metadataGroup("actors")
export const ConnectorsMetadataApi = metadataGroup("connectors")
export const ConnectionsMetadataApi = metadataGroup("connections")
export const KeysMetadataApi = metadataGroup("keys")
export const RateLimitsMetadataApi = metadataGroup("rate_limits")
export const WebhooksMetadataApi = metadataGroup("webhooks")
