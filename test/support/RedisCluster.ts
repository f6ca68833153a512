/**
 * A private Redis Cluster for black-box tests (three masters with a replica each, by default):
 * the helper the counter store's own tests use, started and stopped the same way.
 */
export {
  type ClusterNodeLine,
  type RedisCluster,
  type RedisClusterNode,
  type RedisClusterOptions,
  startRedisCluster
} from "@svc/server/stores/testing/RedisCluster"
