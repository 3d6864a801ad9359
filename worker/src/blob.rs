//! Blob storage behind a small trait, chosen once at start-up. The default keeps blobs in
//! a local folder that the API serves under `/files/...`; `crate::s3` keeps them in an
//! S3-compatible bucket behind the same trait. Keys are `/`-separated paths of
//! `[A-Za-z0-9._-]` segments.
//!
//! It lives here, below the API, because workers write their outputs (rendered ads,
//! thumbnails) to the same store the API serves from.

use std::path::PathBuf;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;

/// A stored blob as a stream of chunks (see [`BlobStore::open`]).
pub struct BlobStream {
    /// Its length in bytes.
    pub len: u64,
    /// Its bytes, in order.
    pub chunks: BoxStream<'static, Result<Bytes, std::io::Error>>,
}

/// Where blobs live.
pub trait BlobStore: Send + Sync {
    /// Stores `bytes` under `key`, replacing what was there (writes are atomic).
    fn put<'a>(&'a self, key: &'a str, bytes: Bytes) -> BoxFuture<'a, Result<(), crate::Error>>;
    /// The blob, or `None` when there is none.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, crate::Error>>;
    /// The blob as a stream, for serving without holding it in memory; `None` when there
    /// is none. By default the whole blob in one chunk.
    fn open<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<BlobStream>, crate::Error>> {
        Box::pin(async move {
            Ok(self.get(key).await?.map(|bytes| BlobStream {
                len: bytes.len() as u64,
                chunks: Box::pin(futures_util::stream::once(async move { Ok(bytes) })),
            }))
        })
    }
    /// Removes the blob under `key`; removing a missing blob is not an error.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), crate::Error>>;
    /// The keys stored under the folder `prefix` (`images/img_1`; `""` for all), in no
    /// particular order.
    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>, crate::Error>>;
    /// Whether a blob (a file, never a folder) is stored under `key`.
    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, crate::Error>> {
        Box::pin(async move { Ok(self.get(key).await?.is_some()) })
    }
    /// Whether the store answers (the API's `/readyz`). By default a lookup of a key
    /// nothing is stored under: an answer, even "no such blob", means the store is up.
    fn check(&self) -> BoxFuture<'_, Result<(), crate::Error>> {
        Box::pin(async move { self.exists(".readyz-probe").await.map(|_| ()) })
    }
    /// The absolute public URL a client fetches the blob from.
    fn url(&self, key: &str) -> String;
    /// What `url` is to this store: one of its files (by key), a malformed URL under its
    /// `/files/`, or someone else's URL. See [`own_file`].
    fn own_file(&self, url: &str) -> OwnFile {
        own_file(&self.url(""), url)
    }
}

/// What an absolute URL is to a blob store whose files are served under `files_prefix`
/// (`{public_url}/files/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnFile {
    /// Not under this store's `/files/`: any other http(s) URL.
    Foreign,
    /// Under this store's `/files/`, naming the blob `key` (a valid key; whether a blob is
    /// stored under it is for [`BlobStore::get`] / [`BlobStore::exists`] to say).
    Key(String),
    /// Under this store's `/files/` but in a form this server never hands out; the text
    /// says what to change, and reads after "the URL ...".
    Invalid(String),
}

/// What to tell a client whose own-file URL names no file (a folder, a missing or a
/// malformed key: all alike, so that answers do not reveal which ids exist).
pub const NO_SUCH_FILE: &str = "names no file of this server; give a file URL exactly as the API returned it (an image's `src`)";

/// Decides whether `url` is one of the files served under `files_prefix`
/// (`{public_url}/files/`) and under which blob key. The one place that maps this
/// server's own URLs to keys: the API's reference check, the PATCH tree check and the
/// worker's fetcher all call it, so what one accepts the others can read.
///
/// A URL is ours when its scheme, host and port (default ports filled in, case ignored)
/// are those of `files_prefix` and its path starts with the prefix's path (`/files/`, or
/// `/files` exactly). Ours, it must be plain: no user info, query or fragment, every
/// percent-escape well formed and decoding to UTF-8, no `.`/`..` segment or encoded `/`,
/// and a key [`valid_key`] accepts.
pub fn own_file(files_prefix: &str, url: &str) -> OwnFile {
    let (Some(prefix), Some(target)) = (split_url(files_prefix), split_url(url)) else {
        return OwnFile::Foreign;
    };
    if prefix.scheme != target.scheme
        || !prefix.host.eq_ignore_ascii_case(target.host)
        || prefix.port != target.port
    {
        return OwnFile::Foreign;
    }
    let folder = prefix.path.trim_end_matches('/');
    let raw_key = if target.path == folder {
        ""
    } else if let Some(rest) = target.path.strip_prefix(folder)
        && let Some(rest) = rest.strip_prefix('/')
    {
        rest
    } else {
        return OwnFile::Foreign;
    };
    let invalid = |why: &str| OwnFile::Invalid(why.to_owned());
    if target.userinfo {
        return invalid(
            "has a user name or password before the host (`…@`); this server's files take none: remove it",
        );
    }
    if target.query.is_some() {
        return invalid(
            "has a query (`?…`); this server's files are addressed by their path alone: remove it",
        );
    }
    if target.fragment.is_some() {
        return invalid(
            "has a fragment (`#…`); this server's files are addressed by their path alone: remove it",
        );
    }
    let mut segments = Vec::new();
    for raw in raw_key.split('/') {
        let Some(seg) = percent_decode(raw) else {
            return invalid(
                "has a malformed percent-escape or one that is not UTF-8; give the file URL exactly as the API returned it",
            );
        };
        if seg == "." || seg == ".." {
            return invalid(
                "has a `.` or `..` segment (also when percent-encoded); give the file URL exactly as the API returned it, without relative segments",
            );
        }
        if seg.contains(['/', '\\']) {
            return invalid(
                "has an encoded slash or backslash (`%2F`, `%5C`); give the file URL exactly as the API returned it",
            );
        }
        segments.push(seg);
    }
    let key = segments.join("/");
    if valid_key(&key) {
        OwnFile::Key(key)
    } else {
        invalid(NO_SUCH_FILE)
    }
}

/// The parts of an absolute http(s) URL that [`own_file`] compares.
struct UrlParts<'a> {
    scheme: String,
    userinfo: bool,
    host: &'a str,
    port: u16,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

fn split_url(url: &str) -> Option<UrlParts<'_>> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (rest, fragment) = match rest.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (rest, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((_, hp)) => (true, hp),
        None => (false, authority),
    };
    // `[v6]:port`, `host:port` or a bare host.
    let (host, port) = match host_port.rfind(':') {
        Some(i) if !host_port[i..].contains(']') => {
            let port = &host_port[i + 1..];
            let port = if port.is_empty() {
                default_port
            } else {
                port.parse().ok()?
            };
            (&host_port[..i], port)
        }
        _ => (host_port, default_port),
    };
    if host.is_empty() {
        return None;
    }
    Some(UrlParts {
        scheme,
        userinfo,
        host,
        port,
        path,
        query,
        fragment,
    })
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Checks a key is a safe relative path: `/`-separated segments of `[A-Za-z0-9._-]`, none
/// empty, `.` or `..`, each at most 255 bytes (a file name any file system takes), at most
/// 512 bytes in all.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 512
        && key.split('/').all(|seg| {
            !seg.is_empty()
                && seg.len() <= 255
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
        })
}

/// Content type by file extension, for serving.
pub fn content_type_for(key: &str) -> &'static str {
    match key.rsplit('.').next().unwrap_or("") {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

/// The long-lived cache header of every blob: keys are never reused for other content.
pub const CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// Blobs in a local folder, served by this API at `{public_url}/files/{key}`.
pub struct LocalBlobStore {
    root: PathBuf,
    /// URLs are `{files_base}/{key}`.
    files_base: String,
}

impl LocalBlobStore {
    /// Blobs under `root`, served by the API at `{public_url}/files/{key}`.
    pub fn new(root: PathBuf, public_url: &str) -> Self {
        Self::with_files_base(root, &format!("{}/files", public_url.trim_end_matches('/')))
    }

    /// Blobs under `root` whose URLs are `{files_base}/{key}` (a CDN or web server in front
    /// of the folder).
    pub fn with_files_base(root: PathBuf, files_base: &str) -> Self {
        Self {
            root,
            files_base: files_base.trim_end_matches('/').to_string(),
        }
    }

    fn path(&self, key: &str) -> Result<PathBuf, crate::Error> {
        if valid_key(key) {
            Ok(self.root.join(key))
        } else {
            Err(crate::Error::InvalidBlobKey(key.to_string()))
        }
    }

    /// The regular file stored under `key`, or `None` when there is none: a key that is
    /// not valid, names nothing, or names a folder (`images`, `images/img_…`) or anything
    /// else that is not a regular file. Only a failing medium is an error.
    async fn open_file(&self, key: &str) -> Result<Option<tokio::fs::File>, crate::Error> {
        use std::io::ErrorKind;
        let Ok(path) = self.path(key) else {
            return Ok(None);
        };
        let file = match tokio::fs::File::open(&path).await {
            Ok(f) => f,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::NotFound
                        | ErrorKind::NotADirectory
                        | ErrorKind::IsADirectory
                        | ErrorKind::InvalidFilename
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(crate::Error::Blob(e)),
        };
        let meta = file.metadata().await.map_err(crate::Error::Blob)?;
        Ok(meta.is_file().then_some(file))
    }
}

impl BlobStore for LocalBlobStore {
    fn put<'a>(&'a self, key: &'a str, bytes: Bytes) -> BoxFuture<'a, Result<(), crate::Error>> {
        Box::pin(async move {
            let path = self.path(key)?;
            if let Some(dir) = path.parent() {
                tokio::fs::create_dir_all(dir)
                    .await
                    .map_err(crate::Error::Blob)?;
            }
            let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
            tokio::fs::write(&tmp, &bytes)
                .await
                .map_err(crate::Error::Blob)?;
            tokio::fs::rename(&tmp, &path)
                .await
                .map_err(crate::Error::Blob)?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, crate::Error>> {
        Box::pin(async move {
            use tokio::io::AsyncReadExt;
            let Some(mut file) = self.open_file(key).await? else {
                return Ok(None);
            };
            let len = file.metadata().await.map_err(crate::Error::Blob)?.len();
            let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
            file.read_to_end(&mut buf)
                .await
                .map_err(crate::Error::Blob)?;
            Ok(Some(Bytes::from(buf)))
        })
    }

    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, crate::Error>> {
        Box::pin(async move { Ok(self.open_file(key).await?.is_some()) })
    }

    fn open<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<BlobStream>, crate::Error>> {
        Box::pin(async move {
            use tokio::io::AsyncReadExt;
            let Some(file) = self.open_file(key).await? else {
                return Ok(None);
            };
            let len = file.metadata().await.map_err(crate::Error::Blob)?.len();
            let chunks = futures_util::stream::try_unfold(file, |mut file| async move {
                let mut buf = bytes::BytesMut::with_capacity(64 * 1024);
                match file.read_buf(&mut buf).await? {
                    0 => Ok(None),
                    _ => Ok(Some((buf.freeze(), file))),
                }
            });
            Ok(Some(BlobStream {
                len,
                chunks: Box::pin(chunks),
            }))
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), crate::Error>> {
        Box::pin(async move {
            let path = self.path(key)?;
            match tokio::fs::remove_file(&path).await {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(crate::Error::Blob(e)),
            }
        })
    }

    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>, crate::Error>> {
        Box::pin(async move {
            let prefix = prefix.trim_end_matches('/');
            let start = if prefix.is_empty() {
                self.root.clone()
            } else {
                self.path(prefix)?
            };
            let mut keys = Vec::new();
            let mut folders = vec![(start, prefix.to_owned())];
            while let Some((dir, key)) = folders.pop() {
                let mut entries = match tokio::fs::read_dir(&dir).await {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => continue,
                    Err(e) => return Err(crate::Error::Blob(e)),
                };
                while let Some(entry) = entries.next_entry().await.map_err(crate::Error::Blob)? {
                    let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                        continue;
                    };
                    let child = if key.is_empty() {
                        name
                    } else {
                        format!("{key}/{name}")
                    };
                    let kind = entry.file_type().await.map_err(crate::Error::Blob)?;
                    // Half-written `*.tmp-…` files of a `put` in progress are not blobs.
                    if kind.is_dir() {
                        folders.push((entry.path(), child));
                    } else if kind.is_file() && valid_key(&child) && !child.contains(".tmp-") {
                        keys.push(child);
                    }
                }
            }
            Ok(keys)
        })
    }

    fn check(&self) -> BoxFuture<'_, Result<(), crate::Error>> {
        Box::pin(async move {
            // The folder appears with the first blob; a missing one is made, so that a
            // fresh data dir is ready and an unwritable one is not.
            tokio::fs::create_dir_all(&self.root)
                .await
                .map_err(crate::Error::Blob)?;
            let meta = tokio::fs::metadata(&self.root)
                .await
                .map_err(crate::Error::Blob)?;
            if meta.is_dir() {
                Ok(())
            } else {
                Err(crate::Error::Blob(std::io::Error::other(
                    "the blob folder is not a folder",
                )))
            }
        })
    }

    fn url(&self, key: &str) -> String {
        format!("{}/{key}", self.files_base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked() {
        assert!(valid_key("images/img_1/original.png"));
        for bad in ["", "../x", "a//b", "a/./b", "/abs", "a\\b", "sp ace"] {
            assert!(!valid_key(bad), "{bad}");
        }
        assert_eq!(content_type_for("a/b.webp"), "image/webp");
        assert!(!valid_key(&"a".repeat(256)));
    }

    #[test]
    fn own_urls_map_to_keys_or_say_what_to_change() {
        let p = "http://127.0.0.1:8080/files/";
        let key = |k: &str| OwnFile::Key(k.to_owned());
        assert_eq!(
            own_file(p, "http://127.0.0.1:8080/files/a/b.png"),
            key("a/b.png")
        );
        assert_eq!(
            own_file(p, "HTTP://127.0.0.1:8080/files/a.png"),
            key("a.png")
        );
        assert_eq!(
            own_file(p, "http://127.0.0.1:8080/files/a%2Dz.png"),
            key("a-z.png")
        );
        let https = "https://Ads.Example.com/files/";
        assert_eq!(
            own_file(https, "https://ads.example.com:443/files/x.png"),
            key("x.png")
        );
        for foreign in [
            "http://127.0.0.1:8081/files/a.png",
            "https://127.0.0.1:8080/files/a.png",
            "http://localhost:8080/files/a.png",
            "http://127.0.0.1:8080/filesx/a.png",
            "http://127.0.0.1:8080/x/files/a.png",
            "ftp://127.0.0.1:8080/files/a.png",
        ] {
            assert_eq!(own_file(p, foreign), OwnFile::Foreign, "{foreign}");
        }
        for (bad, says) in [
            ("http://127.0.0.1:8080/files/../x", "`..`"),
            ("http://127.0.0.1:8080/files/a/%2e%2e/x", "`..`"),
            ("http://127.0.0.1:8080/files/a/%2E/x", "`..`"),
            ("http://127.0.0.1:8080/files/a.png?x=1", "query"),
            ("http://127.0.0.1:8080/files/a.png#top", "fragment"),
            ("http://u:p@127.0.0.1:8080/files/a.png", "password"),
            ("http://127.0.0.1:8080/files/a%2fb.png", "slash"),
            (
                "http://127.0.0.1:8080/files/%c0%ae%c0%ae/x",
                "percent-escape",
            ),
            ("http://127.0.0.1:8080/files/a%zz", "percent-escape"),
            ("http://127.0.0.1:8080/files/", "names no file"),
            ("http://127.0.0.1:8080/files", "names no file"),
            ("http://127.0.0.1:8080/files/a//b", "names no file"),
            ("http://127.0.0.1:8080/files/sp%20ace", "names no file"),
        ] {
            match own_file(p, bad) {
                OwnFile::Invalid(why) => assert!(why.contains(says), "{bad}: {why}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn folders_and_odd_keys_are_no_blob() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalBlobStore::new(dir.path().to_path_buf(), "http://h");
        store
            .put("images/img_1/original.png", Bytes::from_static(b"x"))
            .await
            .unwrap();
        let got = store.get("images/img_1/original.png").await.unwrap();
        assert_eq!(got.as_deref(), Some(&b"x"[..]));
        assert!(store.exists("images/img_1/original.png").await.unwrap());
        for none in [
            "images",
            "images/img_1",
            "images/img_2",
            "images/img_1/original.png/x",
            "../etc/passwd",
            "",
        ] {
            assert_eq!(store.get(none).await.unwrap(), None, "{none}");
            assert!(!store.exists(none).await.unwrap(), "{none}");
        }
        assert_eq!(
            store.own_file("http://h/files/images/img_1/original.png"),
            OwnFile::Key("images/img_1/original.png".into())
        );
    }
}
