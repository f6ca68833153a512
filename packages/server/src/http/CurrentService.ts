/** The service id (spec 1) of the HTTP server handling the current request. */
import { Context } from "effect"
import type { ServiceId } from "@svc/domain/Auth"

export class CurrentService extends Context.Service<CurrentService, ServiceId>()("svc/server/CurrentService") {}
