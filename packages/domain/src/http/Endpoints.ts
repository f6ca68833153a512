/** Shared pieces of the resource endpoint declarations: errors, list queries, permissions. */
import { Schema } from "effect"
import { BadRequest, Conflict, Forbidden, NotFound } from "../Errors.ts"
import { Limit, NamespaceFilterParam, OrderParam, orderFields } from "../Resource.ts"
import { LabelSelector } from "../Selector.ts"
import { RequiredPermission } from "./Security.ts"

/** The errors every resource endpoint may answer (authentication adds 401/403/503). */
export const resourceErrors = [BadRequest, Forbidden, NotFound, Conflict] as const

export { orderFields }

/** Query fields of every resource list (API-CONVENTIONS "Lists"). */
export const listQuery = {
  limit: Schema.optionalKey(Limit),
  cursor: Schema.optionalKey(Schema.String),
  order: Schema.optionalKey(OrderParam(orderFields)),
  name: Schema.optionalKey(Schema.String),
  namespace: Schema.optionalKey(NamespaceFilterParam),
  labelSelector: Schema.optionalKey(LabelSelector)
}

/** The endpoint annotation value of `resource`:`verb`. */
export const permission = (resource: string, verb: string) => RequiredPermission.of({ resource, verb })
