//! The fake API server's continue-token parser, through the server: any continue parameter
//! gets a page or a 400/410, never a panic.
#![no_main]

use std::sync::OnceLock;

use fake_apiserver::{FakeApiServer, FakeListerWatcher};
use informer_core::{ErrorClass, ListOptions, ListerWatcher};
use informer_testing::JsonObject;
use libfuzzer_sys::fuzz_target;

struct Rig {
    server: FakeApiServer,
    lister_watcher: FakeListerWatcher<JsonObject>,
    runtime: tokio::runtime::Runtime,
}

fn rig() -> &'static Rig {
    static RIG: OnceLock<Rig> = OnceLock::new();
    RIG.get_or_init(|| {
        let server = FakeApiServer::new();
        for i in 0..3 {
            server
                .create(
                    "configmaps",
                    &serde_json::json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("c{i}"), "namespace": "ns"}
                    }),
                )
                .expect("create");
        }
        let lister_watcher = server
            .lister_watcher::<JsonObject>("configmaps", Some("ns"))
            .expect("lister-watcher");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        Rig {
            server,
            lister_watcher,
            runtime,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else {
        return;
    };
    let rig = rig();
    // The server logs every request: forget them, or the log grows with every run.
    rig.server.clear_requests();
    let answer = rig.runtime.block_on(rig.lister_watcher.list(&ListOptions {
        limit: Some(1),
        continue_token: Some(token.to_owned()),
        ..ListOptions::default()
    }));
    if let Err(e) = answer {
        assert!(
            matches!(e.class(), ErrorClass::BadRequest | ErrorClass::Expired),
            "{token:?}: {e}"
        );
    }
});
