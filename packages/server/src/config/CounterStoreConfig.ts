/** The `counter_store` block (docs/configuration.md): memory, one Redis, or a Redis Cluster; TLS files. */
import * as path from "node:path"
import type { ConfigFile } from "./ConfigSchema.ts"
import type { ResolvedCounterStore, ResolvedRedisTls } from "./SvcConfig.ts"

/** `host:port`, the host a name, an IPv4 address or a bracketed IPv6 address. */
const parseNode = (text: string): { readonly host: string; readonly port: number } | undefined => {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(text.trim())
  if (match === null) return undefined
  const port = Number(match[2])
  if (port < 1 || port > 65535) return undefined
  const host = match[1]!
  return { host: host.startsWith("[") ? host.slice(1, -1) : host, port }
}

/** The scheme of a Redis URL, or undefined when it is not a `redis:`/`rediss:` URL. */
const schemeOf = (url: string): "redis" | "rediss" | undefined => {
  if (!URL.canParse(url)) return undefined
  const protocol = new URL(url).protocol
  return protocol === "redis:" ? "redis" : protocol === "rediss:" ? "rediss" : undefined
}

/** The counter store with its defaults; every problem names its key and never echoes the URL. */
export const resolveCounterStore = (
  cs: ConfigFile["counter_store"],
  base: string,
  problems: Array<string>
): ResolvedCounterStore => {
  if (cs === undefined || cs.provider === "memory") {
    if (cs?.nodes !== undefined) problems.push("counter_store.nodes: only for provider redis-cluster")
    if (cs?.tls !== undefined) problems.push("counter_store.tls: only for provider redis or redis-cluster")
    return { provider: "memory" }
  }
  const keyPrefix = cs.key_prefix ?? "svc:"
  const url = cs.url ?? (cs.provider === "redis-cluster" ? "redis://" : undefined)
  if (url === undefined) problems.push(`counter_store.url: required for provider ${cs.provider}`)
  const scheme = url === undefined ? undefined : schemeOf(url)
  if (url !== undefined && scheme === undefined) {
    problems.push("counter_store.url: must be a redis:// or rediss:// URL")
  }
  const tls: ResolvedRedisTls | undefined =
    cs.tls === undefined
      ? undefined
      : {
          ca: path.resolve(base, cs.tls.ca),
          ...(cs.tls.cert === undefined ? {} : { cert: path.resolve(base, cs.tls.cert) }),
          ...(cs.tls.key === undefined ? {} : { key: path.resolve(base, cs.tls.key) })
        }
  if (tls !== undefined && scheme === "redis")
    problems.push("counter_store.tls: requires a rediss:// counter_store.url")
  if ((cs.tls?.cert === undefined) !== (cs.tls?.key === undefined)) {
    problems.push("counter_store.tls: cert and key go together")
  }
  if (cs.provider === "redis") {
    if (cs.nodes !== undefined) problems.push("counter_store.nodes: only for provider redis-cluster")
    return { provider: "redis", url: url ?? "", keyPrefix, ...(tls === undefined ? {} : { tls }) }
  }
  if (cs.nodes === undefined || cs.nodes.length === 0) {
    problems.push("counter_store.nodes: required for provider redis-cluster (seed nodes as host:port)")
  }
  const nodes = (cs.nodes ?? []).flatMap((text, i) => {
    const node = parseNode(text)
    if (node === undefined) problems.push(`counter_store.nodes[${i}]: must be host:port`)
    return node === undefined ? [] : [node]
  })
  // A brace in the prefix would become (part of) every key's hash tag and split or merge the slots.
  if (/[{}]/.test(keyPrefix)) {
    problems.push("counter_store.key_prefix: must not contain { or } with provider redis-cluster")
  }
  return { provider: "redis-cluster", url: url ?? "redis://", nodes, keyPrefix, ...(tls === undefined ? {} : { tls }) }
}
