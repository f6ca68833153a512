/**
 * Durable names are persisted in cluster message storage and workflow history, so they are never
 * renamed; workflow and activity names end in `.vN` and a breaking change adds `.vN+1` while keeping
 * the old registration for a deployment window (spec 9.4). Entity types are stable PascalCase names.
 */

/** spec 2.4 rule 3: rewrites the descendants of a namespace or connector after a label change. */
export const LabelPropagationWorkflowName = "svc.labels.propagate.v1"

/** The one activity of the propagation workflow: reconcile the parent's descendants. */
export const LabelPropagationReconcileActivity = "svc.labels.propagate.reconcile.v1"

/** Cluster singleton that hands queued propagations to the workflow engine. */
export const LabelPropagationDispatcherSingleton = "svc.labels.propagation-dispatcher.v1"

/** Cluster singleton of the periodic carry-forward consistency checker (spec 2.4 rule 3). */
export const LabelConsistencyCheckerSingleton = "svc.labels.consistency-checker.v1"

/** `maintenance_runs` row of the consistency checker. */
export const LabelConsistencyCheckRun = "labels.consistency_check"

/** Cluster singleton that runs periodic connector probes and drives connection health (spec 4.2). */
export const ProbeMonitorSingleton = "svc.probes.monitor.v1"

/** SECURITY.md "Encryption at rest": re-seals secrets under their namespace's current data key after a rotation. */
export const ReencryptionWorkflowName = "svc.keys.reencrypt.v1"

/** The one activity of the re-encryption workflow: a sweep over every connection's secrets. */
export const ReencryptionSweepActivity = "svc.keys.reencrypt.sweep.v1"

/** Cluster singleton that hands queued re-encryptions to the workflow engine. */
export const ReencryptionDispatcherSingleton = "svc.keys.reencryption-dispatcher.v1"

/** The cluster singleton that removes abandoned setups (`connections.setup_ttl`). Never renamed. */
export const SetupCleanupSingleton = "svc.connections.setup-cleanup.v1"

/** The cluster singleton of the OAuth2 token refresh sweep. Never renamed. */
export const TokenRefreshSweepSingleton = "svc.oauth2.refresh-sweep.v1"

/** The cluster singleton that delivers webhook events to host endpoints. Never renamed. */
export const WebhookDeliverySingleton = "svc.webhooks.delivery.v1"

/** Entity type of the per-connection control state (cool-down, migration lock), keyed by connection id. Never renamed. */
export const ConnectionEntityType = "Connection"

/** spec 4.5: disconnects every live connection of a connector (one child per connection). */
export const DisconnectAllWorkflowName = "core.connector.disconnect_all.v1"

/** spec 4.5: lists the connections a disconnect-all ends. */
export const DisconnectAllListActivity = "core.connector.disconnect_all.list_connections.v1"

/** spec 4.5 rule 3: forces the remaining connections to `disconnected` after a timeout or a failed child. */
export const DisconnectAllForceActivity = "core.connector.disconnect_all.force_remaining.v1"

/** spec 4.5: archives a connector (prepare, disconnect-all, finalize). */
export const ArchiveWorkflowName = "core.connector.archive.v1"

/** spec 3.2: draft versions → archived, the primary → active. */
export const ArchivePrepareActivity = "core.connector.archive.prepare_versions.v1"

/** spec 3.2: every version → archived, after the disconnect-all. */
export const ArchiveFinalizeActivity = "core.connector.archive.finalize_versions.v1"

/** spec 4.5 rule 1: the per-connection child of a disconnect-all. */
export const DisconnectConnectionWorkflowName = "core.connection.disconnect.v1"

/** The one activity of the per-connection disconnect: revoke, erase credentials, `disconnected`, soft delete. */
export const DisconnectConnectionActivity = "core.connection.disconnect.run.v1"

/** Ends a lifecycle task (its state, error and lock) once its workflow has finished. */
export const TaskFinishActivity = "core.task.finish.v1"

/** A `_disconnect` run whose deadline passed: the connection is forced to `disconnected`. */
export const DisconnectConnectionForceActivity = "core.connection.disconnect.force.v1"

/** Cluster singleton that takes the resource snapshots of the `resources.*` metrics (spec 4.7). */
export const ResourceSnapshotsSingleton = "svc.metrics.resource-snapshots.v1"

/** Cluster singleton that deletes expired request events, recordings and resource snapshots (issue 19 item 5). */
export const RetentionSingleton = "svc.metrics.retention.v1"

/** spec 4.3: moves one connection between versions of its connector (hooks, one transaction, probes). */
export const MigrateVersionWorkflowName = "core.connection.migrate_version.v1"

/** Runs the hooks and writes every effect in one transaction (once per task, even when re-run after a crash). */
export const MigrateVersionApplyActivity = "core.connection.migrate_version.apply.v1"

/** After the switch: the refresh attempt a changed OAuth client asks for, then the target's enabled probes once. */
export const MigrateVersionAfterActivity = "core.connection.migrate_version.after.v1"

/** Ends the migration task and frees the connection's migration lock. */
export const MigrateVersionFinishActivity = "core.connection.migrate_version.finish.v1"
