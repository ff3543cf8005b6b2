//! A remote object store holding the cache's layout (`objects/`, `runs/`, `values/`) under a
//! prefix of an S3-compatible bucket, through `object_store`. Every write is create-if-absent
//! (`If-None-Match: *`), so racing writers are harmless: content addressing makes their bytes
//! equal. Credentials come from the environment or an AWS profile at run time and are never
//! stored; the URL names only the bucket and prefix.

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Why a remote operation did not give an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RemoteError {
    /// The URL or the credentials are not usable: nothing was tried.
    #[error("{0}")]
    Config(String),
    /// The store could not be reached or refused the request; the caller degrades to local.
    #[error("{0}")]
    Unavailable(String),
}

/// Where a remote cache lives: `s3://bucket/prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    pub bucket: String,
    /// The folder inside the bucket, without leading or trailing `/` (may be empty).
    pub prefix: String,
}

impl RemoteUrl {
    /// Parses `s3://bucket[/prefix]`. Credentials in the URL are refused: they would end up in
    /// manifests, logs and shell histories.
    pub fn parse(url: &str) -> Result<Self, RemoteError> {
        let rest = url.strip_prefix("s3://").ok_or_else(|| {
            RemoteError::Config(format!(
                "remote cache `{url}`: only `s3://bucket/prefix` URLs are supported (any S3-compatible store, its endpoint in AWS_ENDPOINT_URL)"
            ))
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.contains('@') || bucket.contains(':') {
            return Err(RemoteError::Config(format!(
                "remote cache `{url}`: credentials do not belong in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) instead"
            )));
        }
        if bucket.is_empty() || !bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.') {
            return Err(RemoteError::Config(format!("remote cache `{url}`: `{bucket}` is not an S3 bucket name (lowercase letters, digits, `-` and `.`)")));
        }
        let prefix = prefix.trim_matches('/').to_string();
        if prefix.split('/').any(|part| part == ".." || part == ".") {
            return Err(RemoteError::Config(format!("remote cache `{url}`: the prefix may not contain `.` or `..`")));
        }
        Ok(Self { bucket: bucket.to_string(), prefix })
    }
}

impl std::fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

/// How to reach the store, read from the environment (and an AWS profile) when it is opened.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Connection {
    pub endpoint: Option<String>,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl Connection {
    /// The usual AWS variables: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN`, `AWS_REGION` / `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_S3` /
    /// `AWS_ENDPOINT_URL`; without keys in the environment, the profile `AWS_PROFILE` (or
    /// `default`) of `~/.aws/credentials` and `~/.aws/config` (or `AWS_SHARED_CREDENTIALS_FILE`
    /// and `AWS_CONFIG_FILE`). Instance metadata is never queried.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, RemoteError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let profile_name = var("AWS_PROFILE").unwrap_or_else(|| "default".to_string());
        let home = var("HOME").unwrap_or_default();
        let credentials_file = var("AWS_SHARED_CREDENTIALS_FILE").unwrap_or_else(|| format!("{home}/.aws/credentials"));
        let config_file = var("AWS_CONFIG_FILE").unwrap_or_else(|| format!("{home}/.aws/config"));
        let credentials = ini_section(&std::fs::read_to_string(&credentials_file).unwrap_or_default(), &profile_name);
        let config_section = if profile_name == "default" { "default".to_string() } else { format!("profile {profile_name}") };
        let config = ini_section(&std::fs::read_to_string(&config_file).unwrap_or_default(), &config_section);
        let (access_key_id, secret_access_key, session_token) = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            (Some(id), Some(secret)) => (id, secret, var("AWS_SESSION_TOKEN")),
            _ => match (credentials.get("aws_access_key_id"), credentials.get("aws_secret_access_key")) {
                (Some(id), Some(secret)) => (id.clone(), secret.clone(), credentials.get("aws_session_token").cloned()),
                _ => {
                    return Err(RemoteError::Config(format!(
                    "no credentials for the remote cache: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with a profile in {credentials_file}"
                )))
                }
            },
        };
        let region =
            var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).or_else(|| config.get("region").cloned()).unwrap_or_else(|| "us-east-1".to_string());
        let endpoint = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")).or_else(|| config.get("endpoint_url").cloned());
        Ok(Self { endpoint, region, access_key_id, secret_access_key, session_token })
    }
}

/// The `key = value` lines of one `[section]` of an AWS INI file.
fn ini_section(text: &str, section: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
        } else if inside {
            if let Some((key, value)) = line.split_once('=') {
                out.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
    }
    out
}

/// A tokio runtime of the store's own: the cache interface is synchronous and is called from
/// the engine's async threads and from blocking ones alike, so requests run here and the
/// caller waits on a channel.
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    fn drop(&mut self) {
        // Dropping a runtime inside another's async context panics; this does not wait.
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// An S3-compatible bucket holding a cache under a prefix.
pub struct RemoteStore {
    store: Arc<AmazonS3>,
    url: RemoteUrl,
    runtime: Runtime,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteStore({})", self.url)
    }
}

impl RemoteStore {
    /// Opens `url` with credentials from the process environment. Nothing is sent yet.
    pub fn open(url: &str) -> Result<Self, RemoteError> {
        Self::open_with(RemoteUrl::parse(url)?, Connection::from_env(&|name| std::env::var(name).ok())?)
    }

    pub fn open_with(url: RemoteUrl, connection: Connection) -> Result<Self, RemoteError> {
        let allow_http = connection.endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
        // Short limits: an unreachable store must degrade to local quickly, not stall runs.
        let client = ClientOptions::new().with_allow_http(allow_http).with_connect_timeout(Duration::from_secs(3)).with_timeout(Duration::from_secs(60));
        let retry = RetryConfig { max_retries: 2, retry_timeout: Duration::from_secs(10), ..RetryConfig::default() };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&url.bucket)
            .with_region(&connection.region)
            .with_access_key_id(&connection.access_key_id)
            .with_secret_access_key(&connection.secret_access_key)
            .with_client_options(client)
            .with_retry(retry);
        if let Some(token) = &connection.session_token {
            builder = builder.with_token(token);
        }
        if let Some(endpoint) = &connection.endpoint {
            builder = builder.with_endpoint(endpoint).with_virtual_hosted_style_request(false);
        }
        let store = builder.build().map_err(|e| RemoteError::Config(format!("remote cache {url}: {e}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("runner-remote-cache")
            .enable_all()
            .build()
            .map_err(|e| RemoteError::Config(format!("remote cache {url}: no runtime: {e}")))?;
        Ok(Self { store: Arc::new(store), url, runtime: Runtime(Some(runtime)) })
    }

    pub fn url(&self) -> &RemoteUrl {
        &self.url
    }

    fn path(&self, relative: &str) -> ObjectPath {
        if self.url.prefix.is_empty() {
            ObjectPath::from(relative)
        } else {
            ObjectPath::from(format!("{}/{relative}", self.url.prefix))
        }
    }

    /// Runs `future` on the store's runtime and waits for it from any thread.
    fn block<T: Send + 'static>(&self, future: impl Future<Output = Result<T, RemoteError>> + Send + 'static) -> Result<T, RemoteError> {
        let Some(rt) = &self.runtime.0 else { return Err(RemoteError::Unavailable("the remote cache is closed".to_string())) };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(future.await);
        });
        rx.recv().unwrap_or_else(|_| Err(RemoteError::Unavailable("the remote cache request was abandoned".to_string())))
    }

    /// The bytes at `relative` (e.g. `objects/ab/abcd…`), or `None` when there is no such object.
    pub fn get(&self, relative: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        let (store, path, url) = (self.store.clone(), self.path(relative), self.url.to_string());
        self.block(async move {
            match store.get(&path).await {
                Ok(result) => result.bytes().await.map(|b| Some(b.to_vec())).map_err(|e| unavailable(&url, &e)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(unavailable(&url, &e)),
            }
        })
    }

    /// Writes `bytes` at `relative` unless an object is already there (then nothing changes:
    /// returns false). With `overwrite`, replaces what is there (a verified-corrupt object).
    pub fn put(&self, relative: &str, bytes: Vec<u8>, overwrite: bool) -> Result<bool, RemoteError> {
        let (store, path, url) = (self.store.clone(), self.path(relative), self.url.to_string());
        let mode = if overwrite { PutMode::Overwrite } else { PutMode::Create };
        self.block(async move {
            match store.put_opts(&path, PutPayload::from(bytes), PutOptions { mode, ..PutOptions::default() }).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
                Err(e) => Err(unavailable(&url, &e)),
            }
        })
    }

    /// Several gets at once (at most `parallel` in flight), in the order asked.
    pub fn get_many(&self, relatives: &[String], parallel: usize) -> Vec<Result<Option<Vec<u8>>, RemoteError>> {
        use futures::StreamExt;
        let (store, url) = (self.store.clone(), self.url.to_string());
        let paths: Vec<ObjectPath> = relatives.iter().map(|r| self.path(r)).collect();
        let count = paths.len();
        let result = self.block(async move {
            let results = futures::stream::iter(paths)
                .map(|path| {
                    let (store, url) = (store.clone(), url.clone());
                    async move {
                        match store.get(&path).await {
                            Ok(result) => result.bytes().await.map(|b| Some(b.to_vec())).map_err(|e| unavailable(&url, &e)),
                            Err(object_store::Error::NotFound { .. }) => Ok(None),
                            Err(e) => Err(unavailable(&url, &e)),
                        }
                    }
                })
                .buffered(parallel.max(1))
                .collect::<Vec<_>>()
                .await;
            Ok(results)
        });
        result.unwrap_or_else(|e| vec![Err(e); count])
    }

    /// The names (relative to the prefix) of every object under `relative_dir`.
    pub fn list(&self, relative_dir: &str) -> Result<Vec<String>, RemoteError> {
        use futures::TryStreamExt;
        let (store, path, url) = (self.store.clone(), self.path(relative_dir), self.url.to_string());
        let strip = if self.url.prefix.is_empty() { String::new() } else { format!("{}/", self.url.prefix) };
        self.block(async move {
            let metas: Vec<object_store::ObjectMeta> = store.list(Some(&path)).try_collect().await.map_err(|e| unavailable(&url, &e))?;
            Ok(metas.into_iter().map(|m| m.location.as_ref().strip_prefix(strip.as_str()).unwrap_or(m.location.as_ref()).to_string()).collect())
        })
    }
}

fn unavailable(url: &str, error: &object_store::Error) -> RemoteError {
    // object_store's messages nest their causes; the first line says what failed.
    let text = error.to_string();
    RemoteError::Unavailable(format!("{url}: {}", text.lines().next().unwrap_or(&text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_and_a_prefix_and_never_credentials() {
        assert_eq!(RemoteUrl::parse("s3://team-cache/runner/v1/").expect("url"), RemoteUrl { bucket: "team-cache".into(), prefix: "runner/v1".into() });
        assert_eq!(RemoteUrl::parse("s3://b").expect("url").to_string(), "s3://b");
        let refused = |url: &str| RemoteUrl::parse(url).expect_err(url).to_string();
        assert!(refused("s3://AKIA:secret@bucket/x").contains("credentials do not belong in the URL"));
        assert!(refused("gs://bucket").contains("only `s3://bucket/prefix`"));
        assert!(refused("s3://Bucket_Name").contains("not an S3 bucket name"));
        assert!(refused("s3://b/../up").contains("`..`"));
    }

    #[test]
    fn credentials_come_from_the_environment_then_the_profile() {
        let dir = tempfile::tempdir().expect("tempdir");
        let credentials = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(&credentials, "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n[team]\naws_access_key_id = T\naws_secret_access_key = TS\naws_session_token = TT\n")
            .expect("write");
        std::fs::write(&config, "[profile team]\nregion = eu-west-3\nendpoint_url = http://127.0.0.1:9000\n").expect("write");
        let files = [("AWS_SHARED_CREDENTIALS_FILE", credentials.display().to_string()), ("AWS_CONFIG_FILE", config.display().to_string())];
        let lookup = |extra: &'static [(&'static str, &'static str)]| {
            let files = files.clone();
            move |name: &str| files.iter().map(|(k, v)| (*k, v.as_str())).chain(extra.iter().copied()).find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let env_keys =
            Connection::from_env(&lookup(&[("AWS_ACCESS_KEY_ID", "E"), ("AWS_SECRET_ACCESS_KEY", "ES"), ("AWS_ENDPOINT_URL", "http://127.0.0.1:8333")]))
                .expect("env");
        assert_eq!(
            (env_keys.access_key_id.as_str(), env_keys.region.as_str(), env_keys.endpoint.as_deref()),
            ("E", "us-east-1", Some("http://127.0.0.1:8333"))
        );
        let team = Connection::from_env(&lookup(&[("AWS_PROFILE", "team")])).expect("profile");
        assert_eq!(
            (team.access_key_id.as_str(), team.session_token.as_deref(), team.region.as_str(), team.endpoint.as_deref()),
            ("T", Some("TT"), "eu-west-3", Some("http://127.0.0.1:9000"))
        );
        assert_eq!(Connection::from_env(&lookup(&[])).expect("default").access_key_id, "D");
        let none = Connection::from_env(&|name: &str| (name == "HOME").then(|| dir.path().join("nowhere").display().to_string())).expect_err("no credentials");
        assert!(none.to_string().contains("set AWS_ACCESS_KEY_ID"), "{none}");
    }
}
