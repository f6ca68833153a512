/** Handlers of the label and annotation sub-resources of every resource type (spec 4.1). */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { metadataGroup } from "@svc/domain/http/MetadataApi"
import type { ResourceType } from "@svc/domain/Resource"
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Metadata } from "../resources/Metadata.ts"
import { withActor } from "./WithActor.ts"

const build =
  <Type extends ResourceType>(type: Type) =>
  (h: HttpApiBuilder.Handlers.FromGroup<ReturnType<typeof metadataGroup<Type>>>) =>
    Effect.map(Metadata, (svc) => {
      return h
        .handle("getLabels", ({ params }) => withActor((a) => svc.all(a, type, "labels", params.id)))
        .handle("getLabel", ({ params }) => withActor((a) => svc.one(a, type, "labels", params.id, params.key)))
        .handle("putLabel", ({ params, payload }) =>
          withActor((a) => svc.put(a, type, "labels", params.id, params.key, payload.value))
        )
        .handle("deleteLabel", ({ params }) => withActor((a) => svc.remove(a, type, "labels", params.id, params.key)))
        .handle("getAnnotations", ({ params }) => withActor((a) => svc.all(a, type, "annotations", params.id)))
        .handle("getAnnotation", ({ params }) =>
          withActor((a) => svc.one(a, type, "annotations", params.id, params.key))
        )
        .handle("putAnnotation", ({ params, payload }) =>
          withActor((a) => svc.put(a, type, "annotations", params.id, params.key, payload.value))
        )
        .handle("deleteAnnotation", ({ params }) =>
          withActor((a) => svc.remove(a, type, "annotations", params.id, params.key))
        )
    })

/** Metadata groups of the api service. */
export const ApiMetadataHttp = Layer.mergeAll(
  HttpApiBuilder.group(ApiV1, "namespacesMetadata", build("namespaces")),
  HttpApiBuilder.group(ApiV1, "actorsMetadata", build("actors")),
  HttpApiBuilder.group(ApiV1, "connectorsMetadata", build("connectors")),
  HttpApiBuilder.group(ApiV1, "connectionsMetadata", build("connections")),
  HttpApiBuilder.group(ApiV1, "keysMetadata", build("keys")),
  HttpApiBuilder.group(ApiV1, "rate_limitsMetadata", build("rate_limits")),
  HttpApiBuilder.group(ApiV1, "webhooksMetadata", build("webhooks"))
)

/** Metadata groups of the admin-api service. */
export const AdminApiMetadataHttp = Layer.mergeAll(
  HttpApiBuilder.group(AdminApiV1, "namespacesMetadata", build("namespaces")),
  HttpApiBuilder.group(AdminApiV1, "actorsMetadata", build("actors")),
  HttpApiBuilder.group(AdminApiV1, "connectorsMetadata", build("connectors")),
  HttpApiBuilder.group(AdminApiV1, "connectionsMetadata", build("connections")),
  HttpApiBuilder.group(AdminApiV1, "keysMetadata", build("keys")),
  HttpApiBuilder.group(AdminApiV1, "rate_limitsMetadata", build("rate_limits")),
  HttpApiBuilder.group(AdminApiV1, "webhooksMetadata", build("webhooks"))
)
