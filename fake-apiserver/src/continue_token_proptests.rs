//! Property tests of the continue-token parser: tokens come from clients, so any text must
//! decode to a token or a reason, never a panic; every token the server issues decodes to
//! itself; and the server answers any continue parameter with a page or a typed error.

use proptest::prelude::*;

use super::*;
use crate::FakeApiServer;
use informer_core::{ErrorClass, ListOptions, ListerWatcher};
use informer_testing::JsonObject;

fn token() -> impl Strategy<Value = ContinueToken> {
    (1u64..u64::MAX, "\\PC{0,40}", any::<usize>(), any::<u64>())
        .prop_map(|(rv, key, pos, epoch)| ContinueToken::new(rv, &key, pos, epoch))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_text_decodes_or_gives_a_reason(text in "\\PC{0,80}") {
        let _ = ContinueToken::decode(&text);
    }

    #[test]
    fn base64_alphabet_soup_decodes_or_gives_a_reason(text in "[A-Za-z0-9_+/=-]{0,120}") {
        let _ = ContinueToken::decode(&text);
    }

    #[test]
    fn issued_tokens_decode_to_themselves(token in token()) {
        prop_assert_eq!(ContinueToken::decode(&token.encode()).unwrap(), token);
    }

    #[test]
    fn base64_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        prop_assert_eq!(base64url_decode(&base64url_encode(&bytes)).unwrap(), bytes);
    }

    /// A real token with a byte changed, cut short, or made up: the server answers with a
    /// page or a 400/410, never a panic.
    #[test]
    fn the_server_answers_any_continue_parameter(
        edit in prop_oneof![
            (any::<usize>(), "[A-Za-z0-9_-]").prop_map(|(i, c)| (Some(i), c)),
            Just((None, String::new())),
        ],
        truncate in any::<usize>(),
        made_up in proptest::option::of("\\PC{0,60}"),
    ) {
        let server = FakeApiServer::new();
        for i in 0..3 {
            server
                .create("configmaps", &serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("c{i}"), "namespace": "ns"}
                }))
                .unwrap();
        }
        let lw = server.lister_watcher::<JsonObject>("configmaps", Some("ns")).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let first = lw
                .list(&ListOptions { limit: Some(1), ..ListOptions::default() })
                .await
                .unwrap();
            let issued = first.continue_token.unwrap();
            let mut token = match &made_up {
                Some(text) => text.clone(),
                None => issued.clone(),
            };
            if let (Some(i), c) = &edit
                && !token.is_empty()
            {
                let mut chars: Vec<char> = token.chars().collect();
                let at = i % chars.len();
                chars[at] = c.chars().next().unwrap_or('A');
                token = chars.into_iter().collect();
            }
            if truncate % 3 == 0 && !token.is_empty() {
                let keep = truncate % token.len();
                token = token.chars().take(keep).collect();
            }
            let answer = lw
                .list(&ListOptions {
                    limit: Some(1),
                    continue_token: Some(token.clone()),
                    ..ListOptions::default()
                })
                .await;
            match answer {
                Ok(page) => assert!(page.items.len() <= 1),
                Err(e) => assert!(
                    matches!(e.class(), ErrorClass::BadRequest | ErrorClass::Expired),
                    "{token:?}: {e}"
                ),
            }
        });
    }
}
