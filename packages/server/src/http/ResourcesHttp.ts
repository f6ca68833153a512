/**
 * The resource groups (namespaces, actors, connectors, connections, keys, rate limits, tasks) of each
 * service. Each group is declared once in the domain and has its handlers in its own file.
 */
import { Layer } from "effect"
import { AdminApiActorsHttp, ApiActorsHttp } from "./ActorsHttp.ts"
import { AdminApiConnectionsHttp, ApiConnectionsHttp, PublicConnectionsHttp } from "./ConnectionsHttp.ts"
import { AdminApiConnectorsHttp, ApiConnectorsHttp, PublicConnectorsHttp } from "./ConnectorsHttp.ts"
import { AdminApiKeysHttp, ApiKeysHttp } from "./KeysHttp.ts"
import { AdminApiNamespacesHttp, ApiNamespacesHttp } from "./NamespacesHttp.ts"
import { AdminApiMetricsHttp, ApiMetricsHttp } from "./MetricsHttp.ts"
import { AdminApiRateLimitsHttp, ApiRateLimitsHttp } from "./RateLimitsHttp.ts"
import { AdminApiTasksHttp, ApiTasksHttp, PublicTasksHttp } from "./TasksHttp.ts"
import { AdminApiWebhooksHttp, ApiWebhooksHttp } from "./WebhooksHttp.ts"

/** The resource groups of the api service. */
export const ApiResourcesHttp = Layer.mergeAll(
  ApiNamespacesHttp,
  ApiActorsHttp,
  ApiConnectorsHttp,
  ApiConnectionsHttp,
  ApiKeysHttp,
  ApiRateLimitsHttp,
  ApiTasksHttp,
  ApiMetricsHttp,
  ApiWebhooksHttp
)

/** The resource groups the public service serves to browser sessions (marketplace). */
export const PublicResourcesHttp = Layer.mergeAll(PublicConnectorsHttp, PublicConnectionsHttp, PublicTasksHttp)

/** The resource groups of the admin-api service. */
export const AdminApiResourcesHttp = Layer.mergeAll(
  AdminApiNamespacesHttp,
  AdminApiActorsHttp,
  AdminApiConnectorsHttp,
  AdminApiConnectionsHttp,
  AdminApiKeysHttp,
  AdminApiRateLimitsHttp,
  AdminApiTasksHttp,
  AdminApiMetricsHttp,
  AdminApiWebhooksHttp
)
