//! The blob store behind `BlobStore`, against the local folder and against a real
//! S3-compatible server: moto's server (`moto_server` from PyPI, installed into `.venv` by
//! scripts/test) started on a free loopback port per test ([`crate::moto`]). The end-to-end
//! run of `adforge serve` and `adforge worker` on a bucket is in the process-level crate
//! (`tests/e2e/s3.rs`).

use adforge_api::blob::{BlobStore, LocalBlobStore};
use adforge_worker::s3::object_store;
use bytes::Bytes;
use futures_util::StreamExt;

use crate::moto::Moto;
use crate::support::png;

#[path = "../../../../worker/tests/queue/redis_server.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod redis_server;

/// Everything the trait promises, on any store.
async fn contract(store: &dyn BlobStore) {
    let png_bytes = Bytes::from(png(8, 8, [1, 2, 3, 255]));
    // Missing keys, valid or not, are `None`, never errors.
    assert_eq!(store.get("images/none/x.png").await.unwrap(), None);
    assert!(!store.exists("images/none/x.png").await.unwrap());
    assert!(store.open("images/none/x.png").await.unwrap().is_none());
    assert_eq!(store.get("../etc/passwd").await.unwrap(), None);
    assert!(store.put("../escape.png", png_bytes.clone()).await.is_err());
    store.check().await.unwrap();

    store
        .put("images/img_1/original.png", png_bytes.clone())
        .await
        .unwrap();
    store
        .put("images/img_1/thumb.webp", Bytes::from_static(b"thumb"))
        .await
        .unwrap();
    store
        .put("ads/ia_1/v1.png", Bytes::from_static(b"ad"))
        .await
        .unwrap();
    assert_eq!(
        store.get("images/img_1/original.png").await.unwrap(),
        Some(png_bytes.clone())
    );
    assert!(store.exists("images/img_1/original.png").await.unwrap());
    // A folder is no blob.
    assert!(!store.exists("images/img_1").await.unwrap());
    assert_eq!(store.get("images/img_1").await.unwrap(), None);

    // Streaming gives the same bytes and the length up front.
    let blob = store
        .open("images/img_1/original.png")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(blob.len, png_bytes.len() as u64);
    let chunks: Vec<_> = blob.chunks.collect().await;
    let streamed: Vec<u8> = chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect();
    assert_eq!(streamed, png_bytes.to_vec());

    // Replacing is whole.
    store
        .put("ads/ia_1/v1.png", Bytes::from_static(b"ad, second render"))
        .await
        .unwrap();
    assert_eq!(
        store.get("ads/ia_1/v1.png").await.unwrap().as_deref(),
        Some(&b"ad, second render"[..])
    );

    let mut under = store.list("images").await.unwrap();
    under.sort();
    assert_eq!(
        under,
        ["images/img_1/original.png", "images/img_1/thumb.webp"]
    );
    let mut all = store.list("").await.unwrap();
    all.sort();
    assert_eq!(
        all,
        [
            "ads/ia_1/v1.png",
            "images/img_1/original.png",
            "images/img_1/thumb.webp"
        ]
    );
    assert!(store.list("nothing-here").await.unwrap().is_empty());

    store.delete("images/img_1/thumb.webp").await.unwrap();
    assert_eq!(store.get("images/img_1/thumb.webp").await.unwrap(), None);
    assert!(!store.exists("images/img_1/thumb.webp").await.unwrap());
    // Deleting what is not there is fine.
    store.delete("images/img_1/thumb.webp").await.unwrap();
    assert_eq!(
        store.list("images").await.unwrap(),
        ["images/img_1/original.png"]
    );

    // URLs map back to keys through the one mapping.
    let url = store.url("images/img_1/original.png");
    assert_eq!(
        store.own_file(&url),
        adforge_api::blob::OwnFile::Key("images/img_1/original.png".into())
    );
}

#[tokio::test]
async fn local_folder_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::new(dir.path().join("blobs"), "http://127.0.0.1:1");
    contract(&store).await;
    assert_eq!(
        store.url("a/b.png"),
        "http://127.0.0.1:1/files/a/b.png",
        "served by the API"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_bucket_keeps_the_contract() {
    let mut moto = Moto::start();
    moto.bucket("adforge-contract").await;
    // Under a prefix, and at the bucket's root.
    let store = moto.store(
        "s3://adforge-contract/env/blobs",
        "https://cdn.example.test/a",
    );
    contract(&store).await;
    assert_eq!(
        store.url("a/b.png"),
        "https://cdn.example.test/a/a/b.png",
        "--blob-public-url"
    );
    let root = moto.store("s3://adforge-contract", "http://127.0.0.1:1/files");
    let mut everything = root.list("").await.unwrap();
    everything.sort();
    assert_eq!(
        everything,
        [
            "env/blobs/ads/ia_1/v1.png",
            "env/blobs/images/img_1/original.png"
        ],
        "the prefix is where the objects are"
    );

    // Objects carry the content type and cache header the API sends, so a CDN or public
    // bucket serving them directly answers alike.
    let raw = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("adforge-contract")
        .with_endpoint(moto.endpoint())
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_access_key_id("testing")
        .with_secret_access_key("testing")
        .build()
        .unwrap();
    let got = object_store::ObjectStoreExt::get(
        &raw,
        &object_store::path::Path::from("env/blobs/images/img_1/original.png"),
    )
    .await
    .unwrap();
    assert_eq!(
        got.attributes
            .get(&object_store::Attribute::ContentType)
            .map(|v| v.as_ref()),
        Some("image/png")
    );
    assert_eq!(
        got.attributes
            .get(&object_store::Attribute::CacheControl)
            .map(|v| v.as_ref()),
        Some(adforge_api::blob::CACHE_CONTROL)
    );

    // A server that does not answer is an error, not "no blob".
    moto.kill();
    assert!(store.get("images/img_1/original.png").await.is_err());
    assert!(store.check().await.is_err());
}
