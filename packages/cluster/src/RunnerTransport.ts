/**
 * The runner transport (docs/cluster.md "Security of the runner port"): the socket server a
 * runner listens on and the client protocol every process dials runners with, over plain TCP
 * (loopback, embedded and test setups) or mutually authenticated TLS. With TLS, the server asks
 * every peer for a certificate and refuses one not signed by the configured CA during the
 * handshake, before any RPC byte is read; the client presents its certificate and verifies the
 * runner's (signed by the same CA, its name or IP in the certificate's SANs).
 * Options come from the caller only (svc's `cluster.tls`), never from the environment.
 */
import { NodeClusterSocket, NodeSocket, NodeSocketServer } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import { Runners, ShardingConfig } from "effect/cluster"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { Socket, type SocketServer } from "effect/socket"

/** PEM material of one process: the CA that signs every runner and client, and this process's certificate and key. */
export interface TlsMaterial {
  readonly ca: string
  readonly cert: string
  readonly key: Redacted.Redacted<string>
}

/** How long a TLS peer may take to finish its handshake before the socket is destroyed. */
export const handshakeTimeoutMs = 10_000

// The library's timings for runner connections (NodeClusterSocket.layerClientProtocol).
const openTimeout = 1_000
const idleTimeout = 5_500

/**
 * The runner's socket server: plain TCP without `tls`, else a TLS server that requires a client
 * certificate signed by `tls.ca` (`requestCert` and `rejectUnauthorized`); binds
 * `ShardingConfig.runnerListenAddress`.
 */
export const layerSocketServer = (
  tls: TlsMaterial | undefined
): Layer.Layer<SocketServer.SocketServer, SocketServer.SocketServerError, ShardingConfig.ShardingConfig> =>
  tls === undefined
    ? NodeClusterSocket.layerSocketServer
    : Layer.unwrap(
        Effect.gen(function* () {
          const config = yield* ShardingConfig.ShardingConfig
          const address = Option.orElse(config.runnerListenAddress, () => config.runnerAddress)
          if (Option.isNone(address)) return yield* Effect.die("the runner has no listen address")
          return NodeSocketServer.layerTls({
            host: address.value.host,
            port: address.value.port,
            ca: tls.ca,
            cert: tls.cert,
            key: Redacted.value(tls.key),
            requestCert: true,
            rejectUnauthorized: true,
            handshakeTimeout: handshakeTimeoutMs,
            minVersion: "TLSv1.2"
          })
        })
      )

/**
 * The client protocol runners are dialled with: plain TCP without `tls`, else TLS presenting this
 * process's certificate and verifying the runner's against `tls.ca` and the dialled host.
 */
export const layerClientProtocol = (
  tls: TlsMaterial | undefined
): Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization> =>
  tls === undefined
    ? NodeClusterSocket.layerClientProtocol
    : Layer.effect(
        Runners.RpcClientProtocol,
        Effect.gen(function* () {
          const serialization = yield* RpcSerialization.RpcSerialization
          return {
            codecFor: serialization.codecFor,
            make: Effect.fnUntraced(function* (address) {
              const socket = yield* NodeSocket.makeTls({
                openTimeout,
                timeout: idleTimeout,
                host: address.host,
                port: address.port,
                ca: tls.ca,
                cert: tls.cert,
                key: Redacted.value(tls.key),
                minVersion: "TLSv1.2"
              })
              return yield* RpcClient.makeProtocolSocket().pipe(
                Effect.provideService(Socket.Socket, socket),
                Effect.provideService(RpcSerialization.RpcSerialization, serialization)
              )
            }, Effect.orDie)
          }
        })
      )
