/**
 * The one outbound HTTP client (ARCHITECTURE.md "The request path", SECURITY.md): probes, token
 * fetches and the proxy data plane all leave through it.
 */
import { Context, Effect, Layer } from "effect"
import { Agent } from "undici"
import { defaultMaxResponseHeaderBytes, SvcConfig } from "../config/SvcConfig.ts"
import { guardedConnector, type Resolver, systemResolver } from "./GuardedConnector.ts"
import type { OutboundError } from "./OutboundError.ts"
import { type OutboundPolicy, type OutboundRequest, prepareOutbound } from "./OutboundGuard.ts"
import { type ExchangeCallbacks, exchangeEffect } from "./ExchangeCallbacks.ts"
import { type OutboundResponse, type OutboundTimeouts, startCollect } from "./ResponseCollector.ts"
import {
  type ChunkObserver,
  type InformationalSink,
  type StreamedResponse,
  startStreamExchange
} from "./StreamingExchange.ts"

export type { OutboundPolicy, OutboundRequest } from "./OutboundGuard.ts"
export type { ExchangeCallbacks } from "./ExchangeCallbacks.ts"
export type { OutboundResponse, OutboundTimeouts } from "./ResponseCollector.ts"
export type { ChunkObserver, InformationalSink, StreamedResponse, StreamOutcome } from "./StreamingExchange.ts"

/** What one call of `Outbound.send` is held to. */
export interface SendOptions {
  readonly policy: OutboundPolicy
  readonly timeouts: OutboundTimeouts
  readonly maxResponseBytes: number
}

/** Process-wide agent settings; every field has a production default. */
export interface OutboundOptions {
  /** Host name resolution (tests substitute a fixed table); default `dns.lookup`. */
  readonly resolve?: Resolver
  /** Upper bound of any socket connect attempt, whatever the request's own connect deadline; default 30 s. */
  readonly connectCeilingMs?: number
  /** How long an idle keep-alive socket stays pooled; default 4 s (upstream hints may shorten it). */
  readonly keepAliveTimeoutMs?: number
  /** Sockets per origin and address policy; default unlimited (per-connection caps live upstream of this). */
  readonly connectionsPerOrigin?: number
  /** The largest head (status line and headers) of an answer; default 16 KiB (`outbound.max_response_header_bytes`). */
  readonly maxResponseHeaderBytes?: number
}

/**
 * Sends a request only to a host the policy allows and only to addresses checked at connect time
 * (never a redirect target, never link-local or metadata, loopback/private only when allowed);
 * strips hop-by-hop headers both ways; enforces connect, first-byte and total deadlines and a body cap.
 */
export class Outbound extends Context.Service<
  Outbound,
  {
    send(request: OutboundRequest, options: SendOptions): Effect.Effect<OutboundResponse, OutboundError>
    /**
     * `send` in plain code (the proxy's fast path): the whole answer or the failure is reported to
     * `callbacks` (a refused request at once); answers a function that abandons the exchange.
     */
    sendPlain(
      request: OutboundRequest,
      options: SendOptions,
      callbacks: ExchangeCallbacks<OutboundResponse>
    ): () => void
    /**
     * Like `send`, but the request body may be a stream and the response body streams back
     * (`maxResponseBytes` does not apply); `onChunk` sees each response chunk.
     */
    stream(
      request: OutboundRequest,
      options: SendOptions,
      onChunk?: ChunkObserver
    ): Effect.Effect<StreamedResponse, OutboundError>
    /**
     * `stream` in plain code (the proxy's fast path): the head or the failure is reported to
     * `callbacks` (a refused request at once); answers a function that abandons the exchange
     * before its head arrived; a `103 Early Hints` goes to `informational` before the head.
     */
    streamPlain(
      request: OutboundRequest,
      options: SendOptions,
      onChunk: ChunkObserver | undefined,
      callbacks: ExchangeCallbacks<StreamedResponse>,
      informational?: InformationalSink
    ): () => void
  }
>()("@svc/server/outbound/Outbound") {
  /** Outbound with explicit agent settings; the agents close with the layer. */
  static layerWith(options: OutboundOptions): Layer.Layer<Outbound> {
    return Layer.effect(
      Outbound,
      Effect.gen(function* () {
        const resolve = options.resolve ?? systemResolver
        const makeAgent = (allowPrivateNetworks: boolean) =>
          Effect.acquireRelease(
            Effect.sync(
              () =>
                new Agent({
                  connect: guardedConnector({
                    allowPrivateNetworks,
                    resolve,
                    connectTimeoutMs: options.connectCeilingMs ?? 30_000
                  }),
                  keepAliveTimeout: options.keepAliveTimeoutMs ?? 4_000,
                  maxHeaderSize: options.maxResponseHeaderBytes ?? defaultMaxResponseHeaderBytes,
                  ...(options.connectionsPerOrigin === undefined ? {} : { connections: options.connectionsPerOrigin })
                })
            ),
            (agent) => Effect.promise(() => agent.destroy())
          )
        // Sockets are pooled per address policy: a socket vetted under allow_private_networks never
        // carries a request whose policy forbids private addresses.
        const publicOnly = yield* makeAgent(false)
        const withPrivate = yield* makeAgent(true)

        const noop = () => {}
        const sendPlain = (
          request: OutboundRequest,
          sendOptions: SendOptions,
          callbacks: ExchangeCallbacks<OutboundResponse>
        ) => {
          const prepared = prepareOutbound(request, sendOptions.policy)
          if (!("dispatch" in prepared)) {
            callbacks.onFailure(prepared)
            return noop
          }
          const agent = prepared.allowPrivateNetworks ? withPrivate : publicOnly
          return startCollect(agent, prepared, sendOptions.timeouts, sendOptions.maxResponseBytes, callbacks)
        }
        const streamPlain = (
          request: OutboundRequest,
          sendOptions: SendOptions,
          onChunk: ChunkObserver | undefined,
          callbacks: ExchangeCallbacks<StreamedResponse>,
          informational?: InformationalSink
        ) => {
          const prepared = prepareOutbound(request, sendOptions.policy)
          if (!("dispatch" in prepared)) {
            callbacks.onFailure(prepared)
            return noop
          }
          const agent = prepared.allowPrivateNetworks ? withPrivate : publicOnly
          return startStreamExchange(agent, prepared, sendOptions.timeouts, onChunk, callbacks, informational)
        }
        const send = Effect.fn("Outbound.send")(function* (request: OutboundRequest, sendOptions: SendOptions) {
          return yield* exchangeEffect<OutboundResponse>((callbacks) => sendPlain(request, sendOptions, callbacks))
        })
        const stream = (request: OutboundRequest, sendOptions: SendOptions, onChunk?: ChunkObserver) =>
          exchangeEffect<StreamedResponse>((callbacks) => streamPlain(request, sendOptions, onChunk, callbacks))
        return Outbound.of({ send, sendPlain, stream, streamPlain })
      })
    )
  }

  /** Outbound with production defaults (system DNS). */
  static readonly layer: Layer.Layer<Outbound> = Outbound.layerWith({})

  /** Outbound with production defaults and the server configuration's `outbound.max_response_header_bytes`. */
  static readonly layerFromConfig: Layer.Layer<Outbound, never, SvcConfig> = Layer.unwrap(
    Effect.map(SvcConfig, (config) =>
      Outbound.layerWith({ maxResponseHeaderBytes: config.outbound.maxResponseHeaderBytes })
    )
  )
}
