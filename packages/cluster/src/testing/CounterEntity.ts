/**
 * The demo `Counter` entity: the smallest stateful entity, proving that entity state survives
 * passivation, runner restart and shard moves (ARCHITECTURE "The Connection entity").
 */
import { Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
/** Entity type of the test counter (keyed by counter id). */
export const CounterEntityType = "Counter"

/** Adds `by` to the counter and returns the new value; the new value is persisted before the reply. */
export const Increment = Rpc.make("Increment", {
  payload: { by: Schema.Int },
  success: Schema.Int
})

/** Reads the counter; a volatile read that never queues behind `Increment`. */
export const Get = Rpc.make("Get", {
  success: Schema.Int
})

/** Counter entity keyed by counter id; its value is rehydrated from SQL on activation. */
export const CounterEntity = Entity.make(CounterEntityType, [Increment, Get])
