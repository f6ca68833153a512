/** Handlers of task polling (spec 3.3, 4.5) on the api, the admin-api and the public service. */
import { AdminApiV1, ApiV1, PublicApi } from "@svc/domain/http/Apis"
import type { TasksApi } from "@svc/domain/http/TasksApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Lifecycle } from "../connections/Lifecycle.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof TasksApi>) =>
  Effect.map(Lifecycle, (lifecycle) =>
    h.handle("get", ({ params }) => withActor((a) => lifecycle.task(a, params.taskId)))
  )

export const ApiTasksHttp = HttpApiBuilder.group(ApiV1, "tasks", handlers)

export const AdminApiTasksHttp = HttpApiBuilder.group(AdminApiV1, "tasks", handlers)

export const PublicTasksHttp = HttpApiBuilder.group(PublicApi, "tasks", handlers)
