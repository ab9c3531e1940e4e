//! Kubeconfig files pointing kubectl and kube-client at the fake server.

use std::io::{self, Write as _};
use std::path::Path;

use serde_json::Value;

/// The context, cluster and user name in generated kubeconfigs.
pub(crate) const CONTEXT_NAME: &str = "fake-apiserver";

/// A kubeconfig (YAML) with one cluster (`server: <url>`), one user (the bearer token when
/// there is one) and one context, current, with `namespace` as its default namespace.
///
/// A plain `http://` cluster is marked `insecure-skip-tls-verify: true`: the JavaScript client
/// (`@kubernetes/client-node`) refuses an `http:` server unless TLS verification is off, and
/// kubectl, kube-client and the Python client ignore the flag when there is no TLS.
pub(crate) fn render(url: &str, token: Option<&str>, namespace: Option<&str>) -> String {
    // JSON strings are valid YAML double-quoted scalars: quoting through serde_json escapes
    // anything a token or URL could contain.
    let q = |s: &str| Value::String(s.to_owned()).to_string();
    let name = q(CONTEXT_NAME);
    let user = match token {
        Some(t) => format!("    token: {}\n", q(t)),
        None => "    {}\n".to_owned(),
    };
    let insecure = if url.starts_with("http://") {
        "    insecure-skip-tls-verify: true\n"
    } else {
        ""
    };
    let ns = namespace
        .map(|n| format!("    namespace: {}\n", q(n)))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: {name}\n  \
           cluster:\n    \
             server: {server}\n\
         {insecure}\
         users:\n\
         - name: {name}\n  \
           user:\n\
         {user}\
         contexts:\n\
         - name: {name}\n  \
           context:\n    \
             cluster: {name}\n    \
             user: {name}\n\
         {ns}\
         current-context: {name}\n\
         preferences: {{}}\n",
        server = q(url),
    )
}

/// Writes `contents` to `path`, creating or truncating it, readable and writable by its
/// owner only (mode 0600 on Unix): a kubeconfig may hold the server's token. The mode is set
/// before anything is written, also on a file that existed with a wider one.
pub(crate) fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        options.mode(0o600);
        let file = options.open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        write_all(file, contents)
    }
    #[cfg(not(unix))]
    {
        write_all(options.open(path)?, contents)
    }
}

fn write_all(mut file: std::fs::File, contents: &[u8]) -> io::Result<()> {
    file.write_all(contents)?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_token_and_namespace() {
        let text = render("http://127.0.0.1:1234", Some("abc\"d"), Some("prod"));
        assert!(
            text.contains(
                "  cluster:\n    server: \"http://127.0.0.1:1234\"\n    insecure-skip-tls-verify: true\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  user:\n    token: \"abc\\\"d\"\n"),
            "{text}"
        );
        assert!(text.contains("    namespace: \"prod\"\n"), "{text}");
        assert!(
            text.contains("current-context: \"fake-apiserver\""),
            "{text}"
        );
    }

    #[test]
    fn renders_an_anonymous_user() {
        let text = render("http://[::1]:80", None, None);
        assert!(text.contains("  user:\n    {}\n"), "{text}");
        assert!(!text.contains("namespace"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn written_for_the_owner_only_also_over_a_wider_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        write_private(&path, b"token: a\n").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&path, b"b").unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"b");
    }

    #[test]
    fn verifies_tls_of_an_https_server() {
        let text = render("https://127.0.0.1:6443", None, None);
        assert!(!text.contains("insecure"), "{text}");
    }
}
