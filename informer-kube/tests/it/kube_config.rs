//! `kube_config`: a kubeconfig file's current context, or a typed error naming the file.

use informer_kube::{KubeError, KubeInformerFactory, client_for_informers, kube_config};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;

use crate::support::Env;

#[tokio::test]
async fn a_kubeconfig_file_gives_its_cluster_and_a_missing_one_a_typed_error() {
    let env = Env::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    env.http.write_kubeconfig(&path, Some("default")).unwrap();
    let config = kube_config(Some(&path)).await.unwrap();
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        env.http.url().trim_end_matches('/')
    );
    assert_eq!(config.default_namespace, "default");
    // A client from it reaches the server.
    let client = client_for_informers(config).unwrap();
    let listed = Api::<ConfigMap>::namespaced(client, "default")
        .list(&Default::default())
        .await
        .unwrap();
    assert!(listed.items.is_empty());
    KubeInformerFactory::from_kubeconfig(&path).await.unwrap();

    let missing = dir.path().join("nowhere");
    match kube_config(Some(&missing)).await {
        Err(error @ KubeError::Kubeconfig { .. }) => {
            assert!(error.to_string().contains("nowhere"), "{error}");
        }
        other => panic!("expected a kubeconfig error, got {other:?}"),
    }
}
