#!/usr/bin/env python3
"""The official Python Kubernetes client (`kubernetes` on PyPI) against the fake API server.

Usage: client_test.py KUBECONFIG --pods N --namespaces K

The server must hold exactly N seeded pods spread over the namespaces ns-0 .. ns-{K-1}, and no
churn. The script checks, through the client's public API only:

- paging: pods across namespaces with `limit` and `_continue`, the total, `remainingItemCount`,
  one resourceVersion for every page, and the per-namespace lists adding up;
- label selectors (equality and set-based), compared with a local evaluation of the full list;
- a ConfigMap's life: create (and 409 on a duplicate), read, replace, 409 on a replace with a
  stale resourceVersion, 404 for missing objects, delete;
- a watch from the resourceVersion of a list taken before those writes, which replays them as
  ADDED, MODIFIED, DELETED, then shows live writes made from another thread while it is open.

Progress goes to stdout; the first failed check is printed on stderr as `FAILED: ...` and the
exit status is 1 (2 for an unexpected exception).
"""

import argparse
import json
import sys
import threading
import traceback

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

PAGE = 40
WRITE_NS = "ns-0"
WATCH_SECONDS = 30
REQUEST_TIMEOUT = 60


class CheckFailed(Exception):
    """A check against the server's behaviour failed."""


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def ok(message):
    print(f"ok: {message}", flush=True)


def expect_status(code, what, call, *args, **kwargs):
    """Runs `call`, which must raise ApiException with HTTP status `code`; returns its Status body."""
    try:
        result = call(*args, **kwargs)
    except ApiException as e:
        check(e.status == code, f"{what}: expected HTTP {code}, got {e.status}: {e.body}")
        try:
            body = json.loads(e.body)
        except (TypeError, ValueError):
            raise CheckFailed(f"{what}: the {code} answer is not a JSON Status: {e.body!r}")
        check(body.get("kind") == "Status" and body.get("code") == code,
              f"{what}: the {code} answer is not a matching Status: {body}")
        return body
    raise CheckFailed(f"{what}: expected HTTP {code}, but the call succeeded: {result}")


def key(obj):
    return f"{obj.metadata.namespace}/{obj.metadata.name}"


def check_paging(v1, total, namespaces):
    pods, pages, versions = [], 0, set()
    token = None
    while True:
        kwargs = {"limit": PAGE, "_request_timeout": REQUEST_TIMEOUT}
        if token:
            kwargs["_continue"] = token
        page = v1.list_pod_for_all_namespaces(**kwargs)
        check(isinstance(page, client.V1PodList), f"a page is a {type(page).__name__}")
        pages += 1
        check(len(page.items) <= PAGE, f"page {pages} has {len(page.items)} items > limit {PAGE}")
        versions.add(page.metadata.resource_version)
        pods.extend(page.items)
        token = page.metadata._continue
        if token:
            check(page.metadata.remaining_item_count == total - len(pods),
                  f"page {pages}: remainingItemCount {page.metadata.remaining_item_count}, "
                  f"expected {total - len(pods)}")
        else:
            break
        check(pages <= total // PAGE + 1, f"more pages than {total} pods need: {pages}")
    check(len(pods) == total, f"paged list returned {len(pods)} pods, expected {total}")
    check(pages == -(-total // PAGE), f"{pages} pages for {total} pods with limit {PAGE}")
    keys = [key(p) for p in pods]
    check(len(set(keys)) == total, "the pages repeat pods")
    check(len(versions) == 1, f"the pages of one list have different resourceVersions: {versions}")
    for p in pods:
        check(isinstance(p, client.V1Pod), f"an item is a {type(p).__name__}")
        check(p.spec.containers and p.spec.containers[0].name, f"{key(p)} has no typed containers")
        check(p.status.phase == "Running", f"{key(p)} phase {p.status.phase}")
        check(p.metadata.creation_timestamp is not None, f"{key(p)} has no creationTimestamp")
    ok(f"{total} pods across namespaces in {pages} pages of {PAGE} at resourceVersion {versions.pop()}")

    names = {n.metadata.name for n in v1.list_namespace(_request_timeout=REQUEST_TIMEOUT).items}
    expected_ns = {f"ns-{i}" for i in range(namespaces)}
    check(expected_ns <= names, f"namespaces {sorted(names)} lack some of {sorted(expected_ns)}")
    per_namespace = 0
    for ns in sorted(expected_ns):
        items = v1.list_namespaced_pod(ns, _request_timeout=REQUEST_TIMEOUT).items
        check(all(p.metadata.namespace == ns for p in items), f"the list of {ns} has foreign pods")
        per_namespace += len(items)
    check(per_namespace == total, f"per-namespace lists add up to {per_namespace}, expected {total}")
    ok(f"per-namespace lists of {namespaces} namespaces add up to {total}")
    return pods


def check_label_selectors(v1, pods):
    labels = {key(p): (p.metadata.labels or {}) for p in pods}
    app = pods[0].metadata.labels["app"]
    cases = [
        (f"app={app}", lambda l: l.get("app") == app),
        (f"tier in (frontend),app!={app}", lambda l: l.get("tier") == "frontend" and l.get("app") != app),
        ("tier notin (frontend)", lambda l: l.get("tier") != "frontend"),
        ("app,!absent", lambda l: "app" in l and "absent" not in l),
        ("absent", lambda l: "absent" in l),
    ]
    for selector, matches in cases:
        expected = {k for k, l in labels.items() if matches(l)}
        got = v1.list_pod_for_all_namespaces(label_selector=selector, _request_timeout=REQUEST_TIMEOUT)
        got = {key(p) for p in got.items}
        check(got == expected, f"selector {selector!r}: {len(got)} pods, expected {len(expected)}; "
                               f"unexpected {sorted(got - expected)[:5]}, missing {sorted(expected - got)[:5]}")
        ok(f"label selector {selector!r} matches {len(got)} pods")
    first = {k for k, l in labels.items() if k.startswith("ns-1/") and l.get("app") == app}
    got = v1.list_namespaced_pod("ns-1", label_selector=f"app={app}", _request_timeout=REQUEST_TIMEOUT)
    check({key(p) for p in got.items} == first, f"namespaced selector app={app} in ns-1")
    ok(f"namespaced label selector matches {len(first)} pods")


def configmap(name, data, resource_version=None):
    meta = client.V1ObjectMeta(name=name, labels={"made-by": "python-client"},
                               resource_version=resource_version)
    return client.V1ConfigMap(metadata=meta, data=data)


def check_writes(v1):
    """Creates, reads, replaces and deletes `py-cm`; returns what the watch must replay."""
    created = v1.create_namespaced_config_map(WRITE_NS, configmap("py-cm", {"a": "1"}))
    check(isinstance(created, client.V1ConfigMap), f"create returned a {type(created).__name__}")
    check(created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp,
          f"create did not set uid, resourceVersion and creationTimestamp: {created.metadata}")
    check(created.data == {"a": "1"} and created.metadata.namespace == WRITE_NS, f"created {created}")
    ok(f"created configmap py-cm at resourceVersion {created.metadata.resource_version}")

    status = expect_status(409, "a duplicate create", v1.create_namespaced_config_map, WRITE_NS,
                           configmap("py-cm", {"a": "other"}))
    check(status.get("reason") == "AlreadyExists", f"duplicate create reason: {status}")
    ok("a duplicate create gets 409 AlreadyExists")

    read = v1.read_namespaced_config_map("py-cm", WRITE_NS)
    check(read.metadata.uid == created.metadata.uid and read.data == {"a": "1"}, f"read back {read}")
    check(read.kind == "ConfigMap" and read.api_version == "v1", f"read kind {read.kind} {read.api_version}")
    ok("read it back")

    read.data = {"a": "2", "b": "3"}
    replaced = v1.replace_namespaced_config_map("py-cm", WRITE_NS, read)
    check(replaced.data == {"a": "2", "b": "3"}, f"replace kept data {replaced.data}")
    check(int(replaced.metadata.resource_version) > int(created.metadata.resource_version),
          f"replace did not advance the resourceVersion: {replaced.metadata.resource_version}")
    check(replaced.metadata.uid == created.metadata.uid, "replace changed the uid")
    ok(f"replaced it (resourceVersion {replaced.metadata.resource_version})")

    stale = configmap("py-cm", {"a": "stale"}, resource_version=created.metadata.resource_version)
    status = expect_status(409, "a replace with a stale resourceVersion",
                           v1.replace_namespaced_config_map, "py-cm", WRITE_NS, stale)
    check(status.get("reason") == "Conflict", f"stale replace reason: {status}")
    check(v1.read_namespaced_config_map("py-cm", WRITE_NS).data == {"a": "2", "b": "3"},
          "the stale replace changed the object")
    ok("a replace with a stale resourceVersion gets 409 Conflict and changes nothing")

    for what, call, args in [
        ("read of a missing configmap", v1.read_namespaced_config_map, ("missing", WRITE_NS)),
        ("replace of a missing configmap", v1.replace_namespaced_config_map,
         ("missing", WRITE_NS, configmap("missing", {}))),
        ("delete of a missing configmap", v1.delete_namespaced_config_map, ("missing", WRITE_NS)),
        ("read of a pod", v1.read_namespaced_pod, ("missing", WRITE_NS)),
    ]:
        status = expect_status(404, what, call, *args)
        check(status.get("reason") == "NotFound", f"{what} reason: {status}")
    ok("missing objects get 404 NotFound")

    deleted = v1.delete_namespaced_config_map("py-cm", WRITE_NS)
    # Older releases type the answer as V1Status, newer ones (37+) hand back the JSON as a dict.
    if not isinstance(deleted, dict):
        deleted = v1.api_client.sanitize_for_serialization(deleted)
    check(deleted.get("kind") == "Status" and deleted.get("status") == "Success",
          f"delete answered {deleted}")
    expect_status(404, "a read after delete", v1.read_namespaced_config_map, "py-cm", WRITE_NS)
    left = v1.list_config_map_for_all_namespaces(label_selector="made-by=python-client")
    check(left.items == [], f"left after delete: {[key(c) for c in left.items]}")
    ok("deleted it")
    return [("ADDED", "py-cm", {"a": "1"}), ("MODIFIED", "py-cm", {"a": "2", "b": "3"}),
            ("DELETED", "py-cm", {"a": "2", "b": "3"})]


def live_writes(v1, start, failures):
    """Writes `py-live` once `start` is set (the watch is open by then)."""
    try:
        if not start.wait(WATCH_SECONDS):
            return
        v1.create_namespaced_config_map(WRITE_NS, configmap("py-live", {"n": "1"}))
        v1.patch_namespaced_config_map("py-live", WRITE_NS, {"data": {"n": "2"}})
        v1.delete_namespaced_config_map("py-live", WRITE_NS)
    except Exception as e:  # reported by the main thread
        failures.append(e)


def check_watch(v1, from_rv, replayed):
    expected = replayed + [("ADDED", "py-live", {"n": "1"}), ("MODIFIED", "py-live", {"n": "2"}),
                           ("DELETED", "py-live", {"n": "2"})]
    start, failures = threading.Event(), []
    writer = threading.Thread(target=live_writes, args=(client.CoreV1Api(v1.api_client), start, failures))
    writer.start()
    seen, last_rv = [], int(from_rv)
    w = watch.Watch()
    try:
        for event in w.stream(v1.list_namespaced_config_map, WRITE_NS, resource_version=from_rv,
                              label_selector="made-by=python-client", timeout_seconds=WATCH_SECONDS,
                              _request_timeout=REQUEST_TIMEOUT):
            obj = event["object"]
            check(event["type"] in ("ADDED", "MODIFIED", "DELETED"), f"unexpected event {event['raw_object']}")
            check(isinstance(obj, client.V1ConfigMap), f"a watch event holds a {type(obj).__name__}")
            rv = int(obj.metadata.resource_version)
            check(rv > last_rv, f"watch resourceVersions not increasing: {rv} after {last_rv}")
            last_rv = rv
            seen.append((event["type"], obj.metadata.name, obj.data))
            if len(seen) == len(replayed):
                check(seen == replayed, f"replayed events {seen}, expected {replayed}")
                ok(f"the watch from resourceVersion {from_rv} replayed {[s[0] for s in seen]}")
                start.set()
            if len(seen) == len(expected):
                w.stop()
    finally:
        start.set()
        writer.join()
    if failures:
        raise CheckFailed(f"a live write failed: {failures[0]}")
    check(seen == expected, f"watch events {seen}, expected {expected}")
    ok(f"live writes arrived on the open watch: {[s[0] for s in seen[len(replayed):]]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kubeconfig")
    parser.add_argument("--pods", type=int, required=True)
    parser.add_argument("--namespaces", type=int, required=True)
    args = parser.parse_args()
    try:
        config.load_kube_config(config_file=args.kubeconfig)
        v1 = client.CoreV1Api()
        pods = check_paging(v1, args.pods, args.namespaces)
        check_label_selectors(v1, pods)
        before = v1.list_namespaced_config_map(WRITE_NS).metadata.resource_version
        replayed = check_writes(v1)
        check_watch(v1, before, replayed)
    except CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr, flush=True)
        return 1
    except Exception:
        traceback.print_exc()
        print("FAILED: unexpected exception (above)", file=sys.stderr, flush=True)
        return 2
    print("all Python client checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
