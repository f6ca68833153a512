/** Handlers of the label and annotation sub-resources of every resource type (spec 4.1). */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { metadataGroup } from "@svc/domain/http/MetadataApi"
import { CurrentActor } from "@svc/domain/http/Security"
import type { ResourceType } from "@svc/domain/Resource"
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Metadata } from "../services/Metadata.ts"

const build =
  <Type extends ResourceType>(type: Type) =>
  (h: HttpApiBuilder.Handlers.FromGroup<ReturnType<typeof metadataGroup<Type>>>) =>
    Effect.map(Metadata, (svc) => {
      const as = <A, E, R>(f: (actor: CurrentActor["Service"]) => Effect.Effect<A, E, R>) =>
        Effect.flatMap(CurrentActor, f)
      return h
        .handle("getLabels", ({ params }) => as((a) => svc.all(a, type, "labels", params.id)))
        .handle("getLabel", ({ params }) => as((a) => svc.one(a, type, "labels", params.id, params.key)))
        .handle("putLabel", ({ params, payload }) =>
          as((a) => svc.put(a, type, "labels", params.id, params.key, payload.value))
        )
        .handle("deleteLabel", ({ params }) => as((a) => svc.remove(a, type, "labels", params.id, params.key)))
        .handle("getAnnotations", ({ params }) => as((a) => svc.all(a, type, "annotations", params.id)))
        .handle("getAnnotation", ({ params }) => as((a) => svc.one(a, type, "annotations", params.id, params.key)))
        .handle("putAnnotation", ({ params, payload }) =>
          as((a) => svc.put(a, type, "annotations", params.id, params.key, payload.value))
        )
        .handle("deleteAnnotation", ({ params }) =>
          as((a) => svc.remove(a, type, "annotations", params.id, params.key))
        )
    })

/** Metadata groups of the api service. */
export const ApiMetadataHttp = Layer.mergeAll(
  HttpApiBuilder.group(ApiV1, "namespacesMetadata", build("namespaces")),
  HttpApiBuilder.group(ApiV1, "actorsMetadata", build("actors")),
  HttpApiBuilder.group(ApiV1, "connectorsMetadata", build("connectors")),
  HttpApiBuilder.group(ApiV1, "connectionsMetadata", build("connections")),
  HttpApiBuilder.group(ApiV1, "keysMetadata", build("keys")),
  HttpApiBuilder.group(ApiV1, "rate_limitsMetadata", build("rate_limits"))
)

/** Metadata groups of the admin-api service. */
export const AdminApiMetadataHttp = Layer.mergeAll(
  HttpApiBuilder.group(AdminApiV1, "namespacesMetadata", build("namespaces")),
  HttpApiBuilder.group(AdminApiV1, "actorsMetadata", build("actors")),
  HttpApiBuilder.group(AdminApiV1, "connectorsMetadata", build("connectors")),
  HttpApiBuilder.group(AdminApiV1, "connectionsMetadata", build("connections")),
  HttpApiBuilder.group(AdminApiV1, "keysMetadata", build("keys")),
  HttpApiBuilder.group(AdminApiV1, "rate_limitsMetadata", build("rate_limits"))
)
