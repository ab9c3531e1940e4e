//! A fake Kubernetes API server with real list/watch semantics, all in memory: the engine,
//! its in-process front end, its HTTP front end ([`http`]) and the `fake-apiserver` binary.
//!
//! # Features
//!
//! - `lister-watcher` (default): [`FakeListerWatcher`] and [`FakeApiServer::lister_watcher`],
//!   the in-process front end: an `informer_core::ListerWatcher` over the engine, no sockets,
//!   for unit tests on paused time.
//! - `http` (default): the HTTP front end ([`http`]: Kubernetes REST in JSON, YAML and
//!   protobuf, discovery, OpenAPI, the `/_fake/` admin API) and the `fake-apiserver` binary.
//!   Without it the crate has no axum, hyper or clap in its tree.
//! - `kube-client` (off by default; implies `http`): [`http::kube_client`], a kube-client
//!   `Client` whose service is the HTTP front end called in process ([`http::in_process_router`]):
//!   no socket, virtual time, the engine's faults applying to the client's calls. It adds
//!   kube-client (without TLS) to the tree, never an informer crate.
//!
//! Both off, the engine alone remains: its request layer ([`FakeApiServer::list`],
//! [`FakeApiServer::watch`], the writes), the faults, seeding and churn.
//!
//! # The engine
//!
//!
//! [`FakeApiServer`] keeps objects the way an API server over etcd does, answers list and
//! watch requests with the real server's rules, and lets a test stage any failure a client
//! meets in production. It has two front ends over one request layer: the in-process
//! [`FakeListerWatcher`] (no sockets, for unit tests), and an HTTP front end built on the same
//! request layer ([`FakeApiServer::list`], [`FakeApiServer::watch`], the `*_at` writes, and
//! the rendering helpers [`ListResponse::to_json_chunks`] and [`WatchFrame::to_json_chunks`]).
//! Everything runs on tokio time, so tests run on paused virtual time.
//!
//! # The model
//!
//! **resourceVersions.** One global counter, as in etcd: every write (create, update, patch,
//! delete, or a delete that only sets `deletionTimestamp`) gets the next number, across all
//! resources, and produces exactly one history event (an Event: one in each of its two
//! views; a custom resource served in several versions: one in each; below). Updates that change nothing are skipped
//! like on the real server (no new resourceVersion, no event).
//! [`FakeApiServer::set_next_resource_version`] jumps ahead (as if other resources were
//! written). The counter never wraps: it stops at [`MAX_RESOURCE_VERSION`] (`i64::MAX`, as
//! etcd's revisions are signed 64-bit integers), and a write that would need a
//! resourceVersion past it fails with 500 `InternalError` (`resourceVersion exhausted`).
//!
//! **Objects.** Each object version is serialized once ([`StoredObject`]: JSON bytes with
//! `metadata.resourceVersion` set, plus the parsed metadata that selection needs) and shared
//! by the current state, the history, list responses and every watcher. The in-process front
//! end decodes each object once into the caller's type. Every built-in resource of
//! Kubernetes 1.37 is served (see [below](#built-in-resources)); others are
//! [registered](FakeApiServer::register) at run time. All are stored as JSON (objects keep
//! `kind` and `apiVersion`, also inside lists, which clients accept); built-in kinds without
//! a schema, custom resources with their CRD's structural schema applied (below). Deleting a
//! pod removes it at once (no kubelet); deleting a namespace terminates it (below). Metadata is
//! stored as the real server's typed round trip leaves it: every `ObjectMeta` field is
//! `omitempty`, so nulls, empty strings, lists and maps (`finalizers: []`, `labels: {}`) and a
//! zero `generation` are not kept.
//!
//! **Events under two groups.** As on the real server, core `v1` Events and
//! `events.k8s.io/v1` Events are one storage: an Event written through either group is read,
//! listed, selected and watched through both, at the same resourceVersion, with the fields
//! renamed as upstream's conversion renames them (`involvedObject`/`regarding`,
//! `message`/`note`, `source`/`deprecatedSource`, `count`/`deprecatedCount`,
//! `firstTimestamp`/`deprecatedFirstTimestamp`, `lastTimestamp`/`deprecatedLastTimestamp`,
//! `reportingComponent`/`reportingController`). So `kubectl describe` (which reads core
//! Events) shows what a controller's `events.k8s.io` recorder published.
//!
//! **Validating admission policies.** `ValidatingAdmissionPolicy` objects bound by
//! `ValidatingAdmissionPolicyBinding`s are enforced on every write as the real server's
//! admission plugin enforces them: matched by their constraints and the binding's resources,
//! their match conditions, variables, parameters (`paramRef`) and validations evaluated in
//! CEL (the libraries of CRD rules), a failure denied (upstream's forbidden error, with the
//! validation's reason) or warned as the binding's `validationActions` say.
//!
//! **Custom resources in several versions.** A CRD that serves several versions (or
//! [`FakeApiServer::register_versions`]) gets one storage read through each, as the real
//! server's `None` conversion strategy serves it: a write through any version is checked
//! with that version's schema, stored as the storage version's schema prunes and defaults it,
//! and read, listed and watched through every version, each pruned by its own schema, at
//! the same resourceVersion (`widgets.v2.example.com` names one version where a name is
//! asked for).
//!
//! **Generation.** `metadata.generation` is the server's, on every write (direct ones too), as
//! the real server's registry strategies keep it: a write never sets it (the stored value
//! stays); custom resources and the built-in kinds that track one (pods, replication
//! controllers, deployments, replica sets, stateful sets, daemon sets, jobs, cron jobs, pod
//! disruption budgets, ingresses, ingress classes, network policies, CRDs, admission webhook
//! configurations) start at 1 and count changes of their desired state (a custom resource:
//! everything outside `metadata`, and outside `status` if it has the status subresource;
//! built-in kinds: `spec`, a deployment's annotations too, a webhook configuration's
//! `webhooks`); a deletion that waits for finalizers adds one. So a controller's
//! generation-based filters and `observedGeneration` bookkeeping behave as against a real
//! cluster. Other built-in kinds that track one upstream (admission policies, flow control,
//! dynamic resource allocation) do not here.
//!
//! **Garbage collection.** Deleting an object cascades to its dependents (the objects whose
//! `metadata.ownerReferences` name it, by group, kind, name and uid) as the cluster's garbage
//! collector cascades them, following the delete's [`PropagationPolicy`]
//! ([`Target::propagation`]; HTTP: `propagationPolicy` or `orphanDependents` in the query or
//! the `DeleteOptions` body): `Background` (the default) removes the owner, then deletes each
//! dependent without another live owner and drops the reference from the others;
//! `Foreground` keeps the owner behind the finalizer `foregroundDeletion`, deletes the
//! dependents (in the foreground themselves) and removes the owner once no dependent with
//! `blockOwnerDeletion` is left; `Orphan` keeps it behind `orphan` until the dependents'
//! references to it are removed, then removes it. The collector runs inside the write that
//! removes (or marks) the owner, one write per step in the real collector's order, so all of
//! it has happened when the request answers (a real cluster takes a moment). An object
//! written after its owners were removed (a controller acting on a stale cache) is deleted
//! right after its write, as upstream's collector deletes it once it finds them absent (the
//! server remembers the last 10,000 objects removed). Dependents whose owner never existed
//! are left alone (upstream collects them too; seeded pods name ReplicaSets that are not
//! there).
//!
//! **Namespaces.** As the namespace strategy and controller keep them: a created namespace
//! gets `spec.finalizers: [kubernetes]`, the label `kubernetes.io/metadata.name` (kept on
//! every update) and, through the request layer, `status.phase: Active`. Deleting it marks it
//! `Terminating`; everything in it is deleted within the same write (dependents elsewhere
//! cascade), and the update that then takes `kubernetes` away removes it, at once or when the
//! last object held by a finalizer goes. Meanwhile requests cannot create content in it
//! (403, below). Other `spec.finalizers` (set on create or through `namespaces/<name>/finalize`,
//! [`FakeApiServer::finalize_at`]; an update keeps them) hold it until their owners release
//! them through `/finalize`, which also removes a terminating namespace whose content is
//! stuck, leaving the content, as on a cluster. [`ServerConfig::garbage_collection`] turns
//! both collectors off.
//!
//! **Requests and direct writes.** The request layer (both front ends: the `*_at` methods,
//! HTTP) applies what the real server's admission and strategies do, listed
//! [below](#admission-and-validation). The test's own writes ([`FakeApiServer::create`],
//! [`FakeApiServer::update`], ..., seeding, the admin API) are its hand on the store: they
//! skip admission and status handling (a test can create a pod `Running`, in a namespace that
//! was never created) but not validation.
//!
//! **History window.** Per resource, a history of events that watchers read, each with its own
//! cursor; writers never wait for watchers. The window follows the API server's watch cache
//! ([`HistoryConfig`]: at least 100 events, everything younger than 75 s, at most 102,400),
//! trimmed when events are added. The history of all resources together is also bounded by
//! bytes ([`ServerConfig::history_max_bytes`], default 256 MiB, the serialized size of the
//! object version each event carries; [`FakeApiServer::history_bytes`]): beyond it the
//! oldest events go first, whatever the window says, except the newest event of the
//! resource just written. [`FakeApiServer::compact`] drops history up to a
//! resourceVersion in every resource, as etcd compaction does. Below the window:
//!
//! - a watch from an older resourceVersion gets HTTP 200 then `ERROR` 410
//!   `too old resource version: N (M)`;
//! - a list at an exact older resourceVersion gets 410;
//! - a continue token of an older list gets 410 (`The provided continue parameter is too
//!   old...`);
//! - an open watch whose cursor falls out of the window (a slow watcher) gets `ERROR` 410 and
//!   is closed, while the others go on.
//!
//! **Lists** ([`FakeApiServer::list`]): `resourceVersion` unset = the current state; `"0"` =
//! the current state with `limit` ignored (the watch cache does not page); `N` = not older
//! than N, or exactly N (served from history) with `resourceVersionMatch=Exact` or with a
//! `limit`. Pages come in key order (namespace/name) with continue tokens that encode the
//! list's resourceVersion and position, and `remainingItemCount` when no selector is given.
//! Label selectors use the full syntax; field selectors support the labels the real server
//! supports for the kind ([below](#field-selectors); others: 400 `field label not
//! supported`). Invalid combinations of
//! `resourceVersionMatch`, `continue` and `sendInitialEvents` are the server's 422s. A
//! resourceVersion the server has not reached waits up to 3 s (virtual) for it, then answers
//! 504 with cause `ResourceVersionTooLarge`.
//!
//! **Watches** ([`FakeApiServer::watch`]): from `""` or `"0"`, every current object as
//! `ADDED` then changes; from `N`, the changes after N. With `sendInitialEvents=true`
//! (`resourceVersionMatch=NotOlderThan`) the current state is streamed, then, if bookmarks
//! were allowed, a `BOOKMARK` annotated `k8s.io/initial-events-end: "true"` at the snapshot's
//! resourceVersion. Bookmarks go only to watchers that asked (`allowWatchBookmarks`): about
//! once a minute ([`ServerConfig::bookmark_interval`]), 2 s before the watch's timeout, and on
//! [`FakeApiServer::send_bookmark`]. `timeoutSeconds` ends the watch normally: unset or 0
//! means no timeout, a negative value ends the watch at once (as on the real server, whose
//! deadline is then already past), and a value too far away for the clock saturates (at
//! about 30 years) instead of overflowing. Selectors work
//! like the watch cache's: an object leaving the selection is sent as `DELETED`, one entering
//! it as `ADDED`.
//!
//! **Shard selectors** (server-side sharded list and watch, KEP-5866): lists and watches
//! of both front ends honour `shardSelector` exactly as a server with the
//! `ShardedListAndWatch` gate (parsed by `informer_core::shard::ShardSelector` with the
//! server's rules: `shardRange(object.metadata.uid | object.metadata.namespace, start,
//! end)` joined with `||`, objects whose 64-bit FNV-1a of the field lies in `[start, end)`,
//! the end up to `0x10000000000000000`). A malformed selector is a 400 BadRequest. List
//! answers echo the selector applied, in its canonical form, in
//! `metadata.shardInfo.selector` (JSON and Table answers; protobuf answers cannot, k8s-pb's
//! `ListMeta` has no such field) and leave out `remainingItemCount`, as for other
//! selectors. [`ServerConfig::sharded_list_and_watch`] (on by default) turns the feature off:
//! the server then behaves like one without the gate, ignoring the parameter (malformed or
//! not), sending every object, echoing nothing ([`FakeApiServer::set_sharded_list_and_watch`],
//! `PUT /_fake/sharded-list-and-watch`, `fake-apiserver --disable-sharded-list-and-watch`).
//!
//! **Faults** ([`Faults`], from [`FakeApiServer::faults`]): fail the next N lists or watch
//! starts with any [`status`]; drop or break every open watch; drop the next watch after K
//! events; delay list responses or watch events; deliver an `ERROR` (e.g. 410) into open
//! watches; expire every outstanding continue token, or the next N continue requests; ignore
//! `sendInitialEvents` like an old
//! server; write raw lines ([`RawLine`]) into open watches; announce objects a watch has not
//! shown before as `MODIFIED` instead of `ADDED` ([`UnseenAnnouncement`]). One-shot faults not used up are
//! listed by [`Faults::pending`].
//!
//! **Request log.** Every request the request layer receives is recorded as a
//! [`RequestRecord`] (method, path, query pairs in a stable order), identically for both front
//! ends: `GET /api/v1/namespaces/a/pods?limit=500&resourceVersion=0`. Direct writes made by
//! the test ([`FakeApiServer::create`], ...) are not requests and are not recorded; the
//! request-layer writes ([`FakeApiServer::create_at`], ...) are.
//! [`FakeApiServer::wait_for_request`] and [`FakeApiServer::wait_for_open_watches`] let a test
//! wait for a client's next move without sleeping.
//!
//! # Built-in resources
//!
//! Every resource a Kubernetes 1.37 API server serves in a stable version, 64 of them (65
//! resource versions: HorizontalPodAutoscalers in two): core/v1
//! (pods, services, configmaps, secrets, namespaces, nodes, events, endpoints, serviceaccounts,
//! persistentvolumes and claims, resourcequotas, limitranges, replicationcontrollers,
//! podtemplates, componentstatuses), apps/v1 (deployments, replicasets, statefulsets,
//! daemonsets, controllerrevisions), batch/v1 (jobs, cronjobs), autoscaling/v2 and v1 (one
//! storage read and written through both, converted as upstream converts them: what v1 has
//! no field for travels in its round-trip annotations), policy/v1,
//! networking.k8s.io/v1 (ingresses, ingressclasses, networkpolicies, ipaddresses,
//! servicecidrs), rbac.authorization.k8s.io/v1, storage.k8s.io/v1, coordination.k8s.io/v1
//! (leases), events.k8s.io/v1, discovery.k8s.io/v1, scheduling.k8s.io/v1, node.k8s.io/v1,
//! certificates.k8s.io/v1, admissionregistration.k8s.io/v1, apiextensions.k8s.io/v1,
//! apiregistration.k8s.io/v1, flowcontrol.apiserver.k8s.io/v1, resource.k8s.io/v1,
//! storagemigration.k8s.io/v1. The table is generated from k8s-openapi's `Resource` impls by
//! `cargo xtask codegen` (group, version, kind, plural, scope), so it matches the Kubernetes
//! version the workspace targets; short names and categories are the real server's.
//!
//! Not served: alpha and beta versions (a custom resource is served in every version its CRD
//! serves, see [`FakeApiServer::register_versions`]), and subresources other than `status`, `scale`,
//! pods' `eviction`, `binding`, `ephemeralcontainers`, `resize`, `log` (what the test
//! wrote as a container's output, [`FakeApiServer::append_pod_log`], read as a kubelet serves
//! it) and `exec` (over the WebSocket stream protocols, the command run by the test's
//! handler, [`FakeApiServer::set_exec_handler`]), certificate signing requests' `approval`,
//! namespaces' `finalize` and service accounts' `token` (no `attach`, `portforward`,
//! proxies). The create-only review APIs are
//! served: access and rules reviews (everything is allowed: there is no authorizer),
//! `SelfSubjectReview`, and `TokenReview`, which authenticates the service account tokens
//! the server issued ([`FakeApiServer::request_token_at`], [`FakeApiServer::review_token`]).
//!
//! **Subresources.** Resources whose type has a `status` field have a `status` subresource
//! ([`ResourceDef::status_subresource`]): a request that creates the resource drops `.status`
//! (pods start `{"phase": "Pending", "qosClass": ...}`, the QoS class computed from their
//! resources as upstream computes it, with a `PodScheduled=False` condition when they have
//! scheduling gates; a pod's status write keeps its QoS class; a Service gets a cluster IP
//! of `10.96.0.0/12` and node ports as a cluster's API server allocates them, kept by
//! updates that leave them out), one that updates or patches it keeps the stored
//! `.status`, and [`FakeApiServer::update_status_at`] / [`FakeApiServer::patch_status_with_at`]
//! (HTTP: `PUT`/`PATCH <object>/status`) change only `.status`. Deployments, replica sets,
//! stateful sets and replication controllers have a `scale` subresource over the HTTP front
//! end (an `autoscaling/v1` `Scale` over `.spec.replicas`; an absent `.spec.replicas` reads
//! as 1, the real server's default), so `kubectl scale` works; so do custom resources whose
//! CRD declares `subresources.scale` ([`ResourceDef::scale_paths`]: the replicas and the
//! selector where the CRD says, absent replicas reading as 0, as upstream's).
//!
//! # Field selectors
//!
//! Per kind, the labels the real server accepts (its field label conversion functions):
//!
//! | kind | fields besides `metadata.name` and `metadata.namespace` |
//! | --- | --- |
//! | Pod | `spec.nodeName`, `spec.restartPolicy`, `spec.schedulerName`, `spec.serviceAccountName`, `spec.hostNetwork`, `status.phase`, `status.podIP`, `status.podIPs`, `status.nominatedNodeName` |
//! | Node | `spec.unschedulable` (and no `metadata.namespace`) |
//! | Namespace | `status.phase` (and no `metadata.namespace`) |
//! | Secret | `type` |
//! | Service | `spec.clusterIP`, `spec.type` |
//! | ReplicationController, apps/v1 ReplicaSet | `status.replicas` |
//! | batch/v1 Job | `status.successful` (the count of succeeded pods) |
//! | core/v1 Event | `involvedObject.{kind,namespace,name,uid,apiVersion,resourceVersion,fieldPath}`, `reason`, `reportingComponent`, `source`, `type` |
//! | events.k8s.io/v1 Event | `regarding.{kind,namespace,name,uid,apiVersion,resourceVersion,fieldPath}`, `reason`, `reportingController`, `type` |
//! | CertificateSigningRequest | `spec.signerName` |
//! | resource.k8s.io/v1 ResourceSlice | `spec.nodeName`, `spec.driver` (and no `metadata.namespace`) |
//!
//! Every other kind accepts `metadata.name` and `metadata.namespace`; a custom resource
//! also accepts its CRD version's `selectableFields` (`ResourceDef::selectable_fields`;
//! a CRD whose selectable fields upstream would refuse is a 422), each read as upstream
//! prints it (strings as they are, booleans and integers as text, absent as empty). A field an object lacks, or holds as an empty string, reads as the
//! value the real server's defaulting would have stored (`spec.restartPolicy=Always`,
//! `type=Opaque`, `status.phase=Pending` for pods, `false`, `0`). `status.podIPs` reads as
//! the IPs joined by commas. Lists and watches of both front ends honour them; an object
//! whose field changes enters or leaves a watch's selection as `ADDED`/`DELETED`.
//! Deviations: the legacy pod label `spec.host` is not accepted; upstream's
//! `status.successful` on StatefulSets and CronJobs (accepted there, matched against nothing
//! useful) is not.
//!
//! # Admission and validation
//!
//! Requests (not the test's direct writes) go through:
//!
//! - **Namespace lifecycle**: a create of a namespaced object in a namespace that does not
//!   exist is a 404 `namespaces "x" not found`, and in one being deleted a 403 `Forbidden`
//!   (`unable to create new content in namespace x because it is being terminated`, cause
//!   `NamespaceTerminating`), as on the real server. Turn it off with
//!   [`ServerConfig::require_namespaces`] (`fake-apiserver --allow-missing-namespaces`).
//! - **Status subresource** handling, as [above](#built-in-resources).
//! - **Evictions** (`POST pods/<name>/eviction`, [`FakeApiServer::evict_at`]): the pod is
//!   deleted unless its `PodDisruptionBudget` forbids it (429 `TooManyRequests` with a
//!   `DisruptionBudget` cause, as upstream's eviction subresource answers; `kubectl drain`
//!   waits on it). The budget's status is the test's to set, as the disruption controller
//!   sets it in a cluster: the fake runs no such controller.
//! - **Bindings** (`POST pods/<name>/binding` and `POST bindings`,
//!   [`FakeApiServer::bind_at`]): a scheduler written against the fake binds pods to nodes
//!   as upstream's binding subresource lets it: `spec.nodeName`, `PodScheduled=True`, the
//!   binding's annotations and labels; a pod already bound, gated or being deleted is a 409.
//! - **Certificate signing requests** ([`FakeApiServer::update_approval_at`]): the caller
//!   recorded as requester, approval through `/approval` (`kubectl certificate approve`,
//!   kube-client's `patch_approval`), the certificate through `/status` once, conditions
//!   stamped, upstream's 422s for taking back an approval or approving and denying at
//!   once. No signer runs: a test issues the certificate as a signer would.
//! - **Field management**: every request's write keeps `metadata.managedFields` as the real
//!   server does (its manager, `fieldManager` or the user agent up to its first `/`, owns
//!   the fields it changed and takes them from the others), and server-side apply
//!   ([`FakeApiServer::server_side_apply_at`]; HTTP `application/apply-patch+yaml`) follows
//!   them: a change to a field another manager owns is a 409 `Conflict` naming it unless
//!   forced, and what the manager applied before and no longer applies is removed unless
//!   another manager owns it. In-process writes keep the `managedFields` they are given
//!   unless their target names a manager ([`Target::field_manager`]).
//!
//! Every write (direct ones too) is validated: `metadata` fields of the wrong JSON type
//! (`"name": 5`, labels that are not a string map) are a 400 (the real server's decode
//! error); invalid names, label keys and values, annotation keys and annotations over
//! 256 KiB in total, a negative `metadata.generation` and new finalizers on an object being
//! deleted are a 422 `Invalid` with one cause per problem. A custom resource whose
//! definition has a schema ([`ResourceDef::schema`]: a CRD's `openAPIV3Schema`) is pruned
//! (unknown fields dropped, except under `x-kubernetes-preserve-unknown-fields`), defaulted
//! (`default`) and validated (`type`, `required`, `enum`, bounds and multiples of numbers,
//! lengths, patterns, string formats (`date-time`, `uuid`, `ipv4`...), item and property
//! counts, unique items, `allOf`/`anyOf`/`oneOf`/`not`: a 422 worded as upstream's, one cause
//! per violation), and its CEL validation rules (`x-kubernetes-validations`, with `oldSelf` on
//! updates, `messageExpression`, `reason` and `fieldPath`) are run. A request's write of a
//! built-in kind (HTTP, and the request-layer methods such as [`FakeApiServer::create_at`])
//! is decoded into the kind's Go type as the real server decodes it: a field the type does
//! not have is dropped (reported as a warning, or refused under `fieldValidation=Strict`
//! with upstream's `strict decoding error: unknown field "spec.x"`), a value of the wrong
//! type is a 400 with Go's words (`json: cannot unmarshal string into Go struct field
//! DeploymentSpec.spec.replicas of type int32`; quantities, timestamps and a secret's base64
//! are parsed as upstream parses them; a patch's result that does not decode is upstream's
//! 422 on the field `patch`; a Secret's `stringData` is folded into `data`, base64-encoded,
//! and not kept), and server-side apply refuses a field the type does not
//! declare (`field not declared in schema`). The test's direct writes
//! ([`FakeApiServer::create`]...) store built-in kinds as given, so that a test can hold
//! what no real server would. A request's write of a built-in kind also gets upstream's
//! defaults (core, apps and batch: a Deployment's strategy and limits, a pod template's
//! `restartPolicy`, `dnsPolicy`, `schedulerName`, `terminationGracePeriodSeconds` and
//! `securityContext`, a container's `imagePullPolicy` by its image's tag, probes, volume
//! modes, ports' `TCP`, a Service's session affinity, type, traffic policies and target
//! ports, a Job's completions, parallelism and back-off limit, ...), and its quantities and
//! times are written back as upstream writes them (`1000m` stored as `"1"`, `0.5` as
//! `"500m"`, resource lists rounded up to milli-units; times in UTC, to the second), so a controller that compares what it asked
//! for with what was stored meets the differences it meets on a cluster (an update that
//! only changes managed fields' times is a no-op, as upstream's registry makes it). A pod a
//! request creates also gets what the default admission plugins add: its service account
//! (`default`) and the `kube-api-access-` token volume mounted in its containers, its
//! priority, and the default not-ready and unreachable tolerations. Built-in kinds get no
//! field-level validation beyond their types; there is no RBAC.
//!
//! **Admission webhooks.** Writes through the HTTP front end (creates, updates, patches and
//! applies of objects and of their `status`, `approval`, `finalize`, `ephemeralcontainers`
//! and `resize`; deletes; `scale` writes shown `Scale`s, evictions, bindings and token
//! requests shown what they send, `exec` as a `CONNECT` of `PodExecOptions`) call the
//! webhooks their stored
//! `MutatingWebhookConfiguration`s and `ValidatingWebhookConfiguration`s match, over HTTPS
//! to each webhook's `clientConfig.url`, trusting its `caBundle`, as upstream's admission
//! plugins call them: rules (with `matchPolicy: Equivalent` through a resource's other
//! served form), namespace and object selectors, CEL `matchConditions`; mutating webhooks in
//! order, their JSON patches applied and the result defaulted and validated as the write
//! is, with `reinvocationPolicy: IfNeeded`; validating webhooks all at once, a refusal
//! answered with its message and code; `timeoutSeconds`, `failurePolicy`, `sideEffects`
//! under dry runs, warnings. A write admitted against an object that changed meanwhile is
//! admitted again. A webhook named by `clientConfig.service` is called at the address the
//! test routes the service to ([`FakeApiServer::route_service`]; there is no cluster
//! network), its certificate checked for `<name>.<namespace>.svc`. Not called: writes made
//! in process or by the collectors. Calls go over the network in real time: under tokio's paused time (the
//! in-process [`http::kube_client`](crate::http) front end in a paused test) a webhook's
//! timeout would fire as soon as the runtime idles, so test webhooks through a
//! [`FakeHttpServer`](crate::http::FakeHttpServer) in real time. The example
//! `examples/admission-webhook` tests a webhook written with kube-rs this way (`cargo run -p
//! fake-apiserver --example admission-webhook`). The parity doc lists what differs from
//! upstream.
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use informer_core::{ListerWatcher, WatchEvent, WatchOptions};
//! use informer_testing::JsonObject;
//! use fake_apiserver::{FakeApiServer, status};
//!
//! let server = FakeApiServer::new();
//! let created = server.create("pods", &JsonObject::new(Some("a"), "web-0")).unwrap();
//! let lw = server.lister_watcher::<JsonObject>("pods", Some("a")).unwrap();
//!
//! // Watch from the creation's resourceVersion: only later changes arrive.
//! let opts = WatchOptions {
//!     resource_version: Some(created.resource_version().to_string()),
//!     allow_watch_bookmarks: true,
//!     ..WatchOptions::default()
//! };
//! let mut events = lw.watch(&opts).await.unwrap();
//! server.delete("pods", Some("a"), "web-0").unwrap();
//! match futures::StreamExt::next(&mut events).await {
//!     Some(Ok(WatchEvent::Deleted(pod))) => assert_eq!(pod.metadata.name.as_deref(), Some("web-0")),
//!     other => panic!("unexpected {other:?}"),
//! }
//!
//! // History compacted past the client's resourceVersion: the next watch gets ERROR 410.
//! server.compact_all();
//! let mut events = lw.watch(&opts).await.unwrap();
//! match futures::StreamExt::next(&mut events).await {
//!     Some(Ok(WatchEvent::Error(s))) => assert_eq!(s.code, 410),
//!     other => panic!("unexpected {other:?}"),
//! }
//!
//! // Scripted faults apply to the next requests.
//! server.faults().fail_watches("pods", 1, status::too_many_requests(2));
//! let err = lw.watch(&opts).await.err().unwrap();
//! assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(2)));
//! assert!(server.faults().pending().is_empty());
//! # }
//! ```

// The request layer answers with `Status` values by design: they are the wire's error type, the
// HTTP front end renders them as they are, and they occur only on error paths.
#![allow(clippy::result_large_err)]

mod admission;
mod autoscaling;
mod builtin;
mod caller;
mod continue_token;
#[cfg(feature = "http")]
mod crd;
mod defaults;
mod exec;
mod fault_state;
mod faults;
mod fields;
mod formats;
mod generation;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "lister-watcher")]
mod lister_watcher;
mod log;
mod logs;
mod mailbox;
mod managed;
mod names;
mod object;
mod patch;
mod pod_exec;
mod pod_logs;
mod propagation;
mod quantity;
mod query;
mod resource;
mod rules;
mod schema;
pub mod seed;
mod server;
#[cfg(feature = "http")]
mod service_routes;
mod shared;
pub mod status;
mod store;
mod time;
mod twins;
mod typed;
mod versions;
mod watch;
#[cfg(feature = "http")]
mod webhooks;

pub use exec::{ExecOptions, ExecOutput, ExecRequest};
pub use fault_state::{PendingFault, RawLine, Scope, UnseenAnnouncement};
pub use faults::Faults;
#[cfg(feature = "lister-watcher")]
pub use lister_watcher::FakeListerWatcher;
pub use log::RequestRecord;
pub use logs::{LogStream, MAX_CONTAINER_LOG_BYTES, PodLogOptions};
pub use object::StoredObject;
pub use patch::merge_patch;
pub use query::Query;
pub use resource::{PrinterColumn, ResourceDef, ScalePaths};
pub use server::{FakeApiServer, ListResponse, Target};
pub use shared::{DEFAULT_HISTORY_MAX_BYTES, ServerConfig};
pub use store::{
    DeleteOutcome, HistoryConfig, MAX_RESOURCE_VERSION, Preconditions, PropagationPolicy,
};
#[cfg(feature = "http")]
pub(crate) use time::later;
pub use watch::{WatchFrame, WatchSubscription};
