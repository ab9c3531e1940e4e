// The official JavaScript Kubernetes client (`@kubernetes/client-node`) against the fake API
// server.
//
// Usage: node client_test.mjs KUBECONFIG --pods N --namespaces K
//
// The server must hold exactly N seeded pods spread over the namespaces ns-0 .. ns-{K-1}, and
// no churn. The script checks, through the client's public API only (CoreV1Api with the
// object-parameter calls, and the Watch class):
//
// - paging: pods across namespaces with `limit` and `_continue`, the total,
//   `remainingItemCount`, one resourceVersion for every page, the per-namespace lists adding up;
// - label selectors (equality and set-based), compared with a local evaluation of the full list;
// - a ConfigMap's life: create (and 409 on a duplicate), read, replace, 409 on a replace with a
//   stale resourceVersion, 404 for missing objects, delete;
// - a watch from the resourceVersion of a list taken before those writes, which replays them
//   as ADDED, MODIFIED, DELETED, then shows live writes made while it is open.
//
// Progress goes to stdout; the first failed check is printed on stderr as `FAILED: ...` and the
// exit status is 1 (2 for an unexpected exception).

import * as k8s from '@kubernetes/client-node';
import { isDeepStrictEqual, parseArgs } from 'node:util';

const PAGE = 40;
const WRITE_NS = 'ns-0';
const WATCH_SECONDS = 30;
const LABEL = 'made-by=js-client';

class CheckFailed extends Error {}

function check(condition, message) {
    if (!condition) {
        throw new CheckFailed(message);
    }
}

function ok(message) {
    console.log(`ok: ${message}`);
}

const key = (o) => `${o.metadata.namespace}/${o.metadata.name}`;
const show = (v) => JSON.stringify(v);

/** Awaits `promise`, which must reject with an ApiException of HTTP status `code`; returns the Status. */
async function expectStatus(code, what, promise) {
    let result;
    try {
        result = await promise;
    } catch (e) {
        check(e instanceof k8s.ApiException, `${what}: expected an ApiException, got ${e}`);
        check(e.code === code, `${what}: expected HTTP ${code}, got ${e.code}: ${show(e.body)}`);
        let body = e.body;
        if (typeof body === 'string') {
            try {
                body = JSON.parse(body);
            } catch {
                throw new CheckFailed(`${what}: the ${code} answer is not JSON: ${e.body}`);
            }
        }
        check(body?.kind === 'Status' && body?.code === code, `${what}: not a matching Status: ${show(body)}`);
        return body;
    }
    throw new CheckFailed(`${what}: expected HTTP ${code}, but the call succeeded: ${show(result)}`);
}

async function checkPaging(api, total, namespaces) {
    const pods = [];
    const versions = new Set();
    let pages = 0;
    let token;
    for (;;) {
        const page = await api.listPodForAllNamespaces({ limit: PAGE, _continue: token });
        pages += 1;
        check(page.items.length <= PAGE, `page ${pages} has ${page.items.length} items > limit ${PAGE}`);
        versions.add(page.metadata.resourceVersion);
        pods.push(...page.items);
        token = page.metadata._continue;
        if (!token) {
            break;
        }
        check(
            page.metadata.remainingItemCount === total - pods.length,
            `page ${pages}: remainingItemCount ${page.metadata.remainingItemCount}, expected ${total - pods.length}`,
        );
        check(pages <= Math.floor(total / PAGE) + 1, `more pages than ${total} pods need: ${pages}`);
    }
    check(pods.length === total, `paged list returned ${pods.length} pods, expected ${total}`);
    check(pages === Math.ceil(total / PAGE), `${pages} pages for ${total} pods with limit ${PAGE}`);
    check(new Set(pods.map(key)).size === total, 'the pages repeat pods');
    check(versions.size === 1, `the pages of one list have different resourceVersions: ${[...versions]}`);
    for (const p of pods) {
        check(p.spec.containers.length > 0 && p.spec.containers[0].name, `${key(p)} has no containers`);
        check(p.status.phase === 'Running', `${key(p)} phase ${p.status.phase}`);
        check(p.metadata.creationTimestamp instanceof Date, `${key(p)} creationTimestamp is not a Date`);
    }
    ok(`${total} pods across namespaces in ${pages} pages of ${PAGE} at resourceVersion ${[...versions][0]}`);

    const names = new Set((await api.listNamespace()).items.map((n) => n.metadata.name));
    let perNamespace = 0;
    for (let i = 0; i < namespaces; i += 1) {
        const ns = `ns-${i}`;
        check(names.has(ns), `namespace ${ns} is not listed: ${[...names]}`);
        const items = (await api.listNamespacedPod({ namespace: ns })).items;
        check(
            items.every((p) => p.metadata.namespace === ns),
            `the list of ${ns} has foreign pods`,
        );
        perNamespace += items.length;
    }
    check(perNamespace === total, `per-namespace lists add up to ${perNamespace}, expected ${total}`);
    ok(`per-namespace lists of ${namespaces} namespaces add up to ${total}`);
    return pods;
}

async function checkLabelSelectors(api, pods) {
    const labels = new Map(pods.map((p) => [key(p), p.metadata.labels ?? {}]));
    const app = pods[0].metadata.labels.app;
    const cases = [
        [`app=${app}`, (l) => l.app === app],
        [`tier in (frontend),app!=${app}`, (l) => l.tier === 'frontend' && l.app !== app],
        ['tier notin (frontend)', (l) => l.tier !== 'frontend'],
        ['app,!absent', (l) => 'app' in l && !('absent' in l)],
        ['absent', (l) => 'absent' in l],
    ];
    for (const [selector, matches] of cases) {
        const expected = [...labels].filter(([, l]) => matches(l)).map(([k]) => k).sort();
        const got = (await api.listPodForAllNamespaces({ labelSelector: selector })).items.map(key).sort();
        check(
            isDeepStrictEqual(got, expected),
            `selector ${show(selector)}: ${got.length} pods, expected ${expected.length}`,
        );
        ok(`label selector ${show(selector)} matches ${got.length} pods`);
    }
    const expected = [...labels]
        .filter(([k, l]) => k.startsWith('ns-1/') && l.app === app)
        .map(([k]) => k)
        .sort();
    const got = (await api.listNamespacedPod({ namespace: 'ns-1', labelSelector: `app=${app}` })).items
        .map(key)
        .sort();
    check(isDeepStrictEqual(got, expected), `namespaced selector app=${app} in ns-1: ${got}, expected ${expected}`);
    ok(`namespaced label selector matches ${got.length} pods`);
}

function configMap(name, data, resourceVersion) {
    return { metadata: { name, labels: { 'made-by': 'js-client' }, resourceVersion }, data };
}

/** Creates, reads, replaces and deletes `js-cm`; returns what the watch must replay. */
async function checkWrites(api) {
    const created = await api.createNamespacedConfigMap({
        namespace: WRITE_NS,
        body: configMap('js-cm', { a: '1' }),
    });
    check(
        created.metadata.uid && created.metadata.resourceVersion && created.metadata.creationTimestamp,
        `create did not set uid, resourceVersion and creationTimestamp: ${show(created.metadata)}`,
    );
    check(isDeepStrictEqual(created.data, { a: '1' }) && created.metadata.namespace === WRITE_NS, show(created));
    ok(`created configmap js-cm at resourceVersion ${created.metadata.resourceVersion}`);

    let status = await expectStatus(
        409,
        'a duplicate create',
        api.createNamespacedConfigMap({ namespace: WRITE_NS, body: configMap('js-cm', { a: 'other' }) }),
    );
    check(status.reason === 'AlreadyExists', `duplicate create reason: ${show(status)}`);
    ok('a duplicate create gets 409 AlreadyExists');

    const read = await api.readNamespacedConfigMap({ name: 'js-cm', namespace: WRITE_NS });
    check(read.metadata.uid === created.metadata.uid && isDeepStrictEqual(read.data, { a: '1' }), show(read));
    check(read.kind === 'ConfigMap' && read.apiVersion === 'v1', `read kind ${read.kind} ${read.apiVersion}`);
    ok('read it back');

    read.data = { a: '2', b: '3' };
    const replaced = await api.replaceNamespacedConfigMap({ name: 'js-cm', namespace: WRITE_NS, body: read });
    check(isDeepStrictEqual(replaced.data, { a: '2', b: '3' }), `replace kept data ${show(replaced.data)}`);
    check(
        Number(replaced.metadata.resourceVersion) > Number(created.metadata.resourceVersion),
        `replace did not advance the resourceVersion: ${replaced.metadata.resourceVersion}`,
    );
    check(replaced.metadata.uid === created.metadata.uid, 'replace changed the uid');
    ok(`replaced it (resourceVersion ${replaced.metadata.resourceVersion})`);

    status = await expectStatus(
        409,
        'a replace with a stale resourceVersion',
        api.replaceNamespacedConfigMap({
            name: 'js-cm',
            namespace: WRITE_NS,
            body: configMap('js-cm', { a: 'stale' }, created.metadata.resourceVersion),
        }),
    );
    check(status.reason === 'Conflict', `stale replace reason: ${show(status)}`);
    const after = await api.readNamespacedConfigMap({ name: 'js-cm', namespace: WRITE_NS });
    check(isDeepStrictEqual(after.data, { a: '2', b: '3' }), 'the stale replace changed the object');
    ok('a replace with a stale resourceVersion gets 409 Conflict and changes nothing');

    for (const [what, call] of [
        ['read of a missing configmap', () => api.readNamespacedConfigMap({ name: 'missing', namespace: WRITE_NS })],
        [
            'replace of a missing configmap',
            () =>
                api.replaceNamespacedConfigMap({
                    name: 'missing',
                    namespace: WRITE_NS,
                    body: configMap('missing', {}),
                }),
        ],
        [
            'delete of a missing configmap',
            () => api.deleteNamespacedConfigMap({ name: 'missing', namespace: WRITE_NS }),
        ],
        ['read of a pod', () => api.readNamespacedPod({ name: 'missing', namespace: WRITE_NS })],
    ]) {
        status = await expectStatus(404, what, call());
        check(status.reason === 'NotFound', `${what} reason: ${show(status)}`);
    }
    ok('missing objects get 404 NotFound');

    const deleted = await api.deleteNamespacedConfigMap({ name: 'js-cm', namespace: WRITE_NS });
    check(deleted.status === 'Success', `delete answered ${show(deleted)}`);
    await expectStatus(
        404,
        'a read after delete',
        api.readNamespacedConfigMap({ name: 'js-cm', namespace: WRITE_NS }),
    );
    const left = await api.listConfigMapForAllNamespaces({ labelSelector: LABEL });
    check(left.items.length === 0, `left after delete: ${left.items.map(key)}`);
    ok('deleted it');
    return [
        ['ADDED', 'js-cm', { a: '1' }],
        ['MODIFIED', 'js-cm', { a: '2', b: '3' }],
        ['DELETED', 'js-cm', { a: '2', b: '3' }],
    ];
}

/** Creates, patches (JSON patch) and deletes `js-live`. */
async function liveWrites(api) {
    await api.createNamespacedConfigMap({ namespace: WRITE_NS, body: configMap('js-live', { n: '1' }) });
    await api.patchNamespacedConfigMap({
        name: 'js-live',
        namespace: WRITE_NS,
        body: [{ op: 'replace', path: '/data/n', value: '2' }],
    });
    await api.deleteNamespacedConfigMap({ name: 'js-live', namespace: WRITE_NS });
}

async function checkWatch(kc, api, fromRv, replayed) {
    const expected = [
        ...replayed,
        ['ADDED', 'js-live', { n: '1' }],
        ['MODIFIED', 'js-live', { n: '2' }],
        ['DELETED', 'js-live', { n: '2' }],
    ];
    const seen = [];
    let lastRv = Number(fromRv);
    let failure;
    let writes;
    let controller;
    const finished = new Promise((resolve) => {
        const done = (err) => resolve(err);
        const onEvent = (type, obj) => {
            try {
                check(['ADDED', 'MODIFIED', 'DELETED'].includes(type), `unexpected event ${type} ${show(obj)}`);
                const rv = Number(obj.metadata.resourceVersion);
                check(rv > lastRv, `watch resourceVersions not increasing: ${rv} after ${lastRv}`);
                lastRv = rv;
                seen.push([type, obj.metadata.name, obj.data]);
                if (seen.length === replayed.length) {
                    check(isDeepStrictEqual(seen, replayed), `replayed events ${show(seen)}, expected ${show(replayed)}`);
                    ok(`the watch from resourceVersion ${fromRv} replayed ${seen.map((s) => s[0])}`);
                    writes = liveWrites(api).catch((e) => {
                        failure ??= new CheckFailed(`a live write failed: ${e}`);
                        resolve(failure);
                    });
                }
                if (seen.length === expected.length) {
                    resolve(null);
                }
            } catch (e) {
                failure ??= e;
                resolve(e);
            }
        };
        new k8s.Watch(kc)
            .watch(
                `/api/v1/namespaces/${WRITE_NS}/configmaps`,
                { resourceVersion: fromRv, labelSelector: LABEL, timeoutSeconds: WATCH_SECONDS },
                onEvent,
                done,
            )
            .then((c) => {
                controller = c;
            }, resolve);
    });
    const ended = await finished;
    controller?.abort();
    if (failure) {
        throw failure;
    }
    await writes;
    check(
        isDeepStrictEqual(seen, expected),
        `watch events ${show(seen)}, expected ${show(expected)} (the watch ended with ${ended})`,
    );
    ok(`live writes arrived on the open watch: ${seen.slice(replayed.length).map((s) => s[0])}`);
}

async function main() {
    const { values, positionals } = parseArgs({
        allowPositionals: true,
        options: { pods: { type: 'string' }, namespaces: { type: 'string' } },
    });
    check(positionals.length === 1 && values.pods && values.namespaces, 'usage: client_test.mjs KUBECONFIG --pods N --namespaces K');
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(positionals[0]);
    const api = kc.makeApiClient(k8s.CoreV1Api);
    const pods = await checkPaging(api, Number(values.pods), Number(values.namespaces));
    await checkLabelSelectors(api, pods);
    const before = (await api.listNamespacedConfigMap({ namespace: WRITE_NS })).metadata.resourceVersion;
    const replayed = await checkWrites(api);
    await checkWatch(kc, api, before, replayed);
    console.log('all JavaScript client checks passed');
}

try {
    await main();
    process.exit(0);
} catch (e) {
    if (e instanceof CheckFailed) {
        console.error(`FAILED: ${e.message}`);
        process.exit(1);
    }
    console.error(e);
    console.error('FAILED: unexpected exception (above)');
    process.exit(2);
}
