//! The http fetcher against a local server: limits and the private-address guard.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use adforge_renderer::{
    FetchLimits, FontLibrary, HttpFetcher, ImageFetcher, RenderOptions, Renderer, Tree, Warning,
};

use crate::harness::repo_root;

/// Serves `body` to every request (up to `n`), with an optional delay before answering.
fn serve(body: Vec<u8>, n: usize, delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            std::thread::sleep(delay);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    format!("http://{addr}/photo.png")
}

fn coffee() -> Vec<u8> {
    std::fs::read(repo_root().join("assets/samples/coffee.png")).unwrap()
}

#[test]
fn fetches_from_a_local_server_when_private_urls_are_allowed() {
    let url = serve(coffee(), 1, Duration::ZERO);
    let fetcher = HttpFetcher::new(FetchLimits {
        allow_private: true,
        ..FetchLimits::default()
    });
    let renderer = Renderer::new(FontLibrary::bundled(), Arc::new(fetcher));
    let json = format!(
        r#"{{"nodes":{{"r":{{"type":"FRAME","width":40,"height":40,"fills":[{{"type":"IMAGE","imageFillUrl":"{url}","scaleMode":"FILL"}}]}}}}}}"#
    );
    let out = renderer
        .render(
            &Tree::parse(&json).unwrap(),
            &RenderOptions {
                width: Some(40),
                encode_png: false,
            },
        )
        .unwrap();
    assert!(out.report.warnings.is_empty(), "{:?}", out.report.warnings);
    assert!(out.pixmap.pixel(20, 20).unwrap().alpha() == 255);
}

#[test]
fn private_addresses_are_refused_by_default() {
    let url = serve(coffee(), 1, Duration::ZERO);
    let err = HttpFetcher::new(FetchLimits::default())
        .fetch(&url)
        .unwrap_err();
    assert!(err.contains("not a public address"), "{err}");
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "::1",
        "fe80::1",
        "fd00:ec2::254",
        "100.64.0.1",
    ] {
        assert!(
            !adforge_renderer::address::is_public(ip.parse().unwrap()),
            "{ip}"
        );
    }
    assert!(adforge_renderer::address::is_public(
        "93.184.216.34".parse().unwrap()
    ));
}

#[test]
fn size_limit() {
    let url = serve(coffee(), 1, Duration::ZERO);
    let fetcher = HttpFetcher::new(FetchLimits {
        allow_private: true,
        max_bytes: 1000,
        ..FetchLimits::default()
    });
    assert!(fetcher.fetch(&url).is_err());
}

#[test]
fn time_limit() {
    let url = serve(coffee(), 1, Duration::from_secs(3));
    let fetcher = HttpFetcher::new(FetchLimits {
        allow_private: true,
        timeout: Duration::from_millis(300),
        ..FetchLimits::default()
    });
    let start = std::time::Instant::now();
    assert!(fetcher.fetch(&url).is_err());
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn local_paths_only_with_a_base_dir() {
    let err = HttpFetcher::new(FetchLimits::default())
        .fetch("assets/samples/coffee.png")
        .unwrap_err();
    assert!(err.contains("http"), "{err}");
    let ok = HttpFetcher::new(FetchLimits::default())
        .with_local_files(repo_root())
        .fetch("assets/samples/coffee.png");
    assert!(ok.is_ok());
}

#[test]
fn undecodable_image_is_reported() {
    let url = serve(b"not an image at all".to_vec(), 1, Duration::ZERO);
    let fetcher = HttpFetcher::new(FetchLimits {
        allow_private: true,
        ..FetchLimits::default()
    });
    let renderer = Renderer::new(FontLibrary::bundled(), Arc::new(fetcher));
    let json = format!(
        r#"{{"nodes":{{"r":{{"type":"FRAME","width":40,"height":40,"fills":[{{"type":"IMAGE","imageFillUrl":"{url}"}}]}}}}}}"#
    );
    let out = renderer
        .render(
            &Tree::parse(&json).unwrap(),
            &RenderOptions {
                width: Some(40),
                encode_png: false,
            },
        )
        .unwrap();
    assert!(
        matches!(&out.report.warnings[..], [Warning::ImageFailed { node, .. }] if node == "r"),
        "{:?}",
        out.report.warnings
    );
}

/// Counts fetches, serving one local file for every URL.
struct Counting(std::sync::atomic::AtomicUsize);

impl ImageFetcher for Counting {
    fn fetch(&self, _url: &str) -> Result<Vec<u8>, String> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(coffee())
    }
}

#[test]
fn image_cache_fetches_once_and_evicts_by_size() {
    let json = r#"{"nodes":{"r":{"type":"FRAME","width":40,"height":40,"fills":[{"type":"IMAGE","imageFillUrl":"https://cdn.example.com/a.png"}]}}}"#;
    let other = json.replace("a.png", "b.png");
    let opts = RenderOptions {
        width: Some(40),
        encode_png: false,
    };
    let fetcher = Arc::new(Counting(0.into()));
    let count = || fetcher.0.load(std::sync::atomic::Ordering::SeqCst);
    // coffee.png decodes to 600x400x4 = 960,000 bytes: room for one image only.
    let cached = Renderer::new(FontLibrary::bundled(), fetcher.clone()).with_image_cache(1_500_000);
    let a = Tree::parse(json).unwrap();
    let b = Tree::parse(&other).unwrap();
    let first = cached.render(&a, &opts).unwrap().pixmap;
    let second = cached.render(&a, &opts).unwrap().pixmap;
    assert_eq!(count(), 1);
    assert_eq!(first.data(), second.data());
    cached.render(&b, &opts).unwrap();
    cached.render(&a, &opts).unwrap();
    assert_eq!(count(), 3, "b evicted a");
    let uncached = Renderer::new(FontLibrary::bundled(), fetcher.clone());
    uncached.render(&a, &opts).unwrap();
    uncached.render(&a, &opts).unwrap();
    assert_eq!(count(), 5);
}

/// Serves the PNG in its slot for every URL, counting fetches; the test swaps the slot.
struct Swappable(std::sync::Mutex<Vec<u8>>, std::sync::atomic::AtomicUsize);

impl ImageFetcher for Swappable {
    fn fetch(&self, _url: &str) -> Result<Vec<u8>, String> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(self.0.lock().unwrap().clone())
    }
}

fn solid_png(r: u8, g: u8, b: u8) -> Vec<u8> {
    let mut p = tiny_skia::Pixmap::new(8, 8).unwrap();
    p.fill(tiny_skia::Color::from_rgba8(r, g, b, 255));
    p.encode_png().unwrap()
}

/// The cache keyed by content: every render fetches (the URL may change), an image whose
/// bytes were seen is not decoded again (the cache holds one entry), and new bytes at the
/// same URL are drawn, never the old image.
#[test]
fn content_image_cache_decodes_each_content_once_and_never_serves_stale_pixels() {
    let json = r#"{"nodes":{"r":{"type":"FRAME","width":40,"height":40,"fills":[{"type":"IMAGE","imageFillUrl":"https://cdn.example.com/p.png"}]}}}"#;
    let opts = RenderOptions {
        width: Some(40),
        encode_png: false,
    };
    let fetcher = Arc::new(Swappable(solid_png(255, 0, 0).into(), 0.into()));
    let fetches = || fetcher.1.load(std::sync::atomic::Ordering::SeqCst);
    let renderer =
        Renderer::new(FontLibrary::bundled(), fetcher.clone()).with_content_image_cache(1 << 20);
    let tree = Tree::parse(json).unwrap();
    let centre = |p: &tiny_skia::Pixmap| {
        let c = p.pixel(20, 20).unwrap();
        (c.red(), c.green(), c.blue())
    };
    let first = renderer.render(&tree, &opts).unwrap().pixmap;
    assert_eq!(centre(&first), (255, 0, 0));
    assert_eq!(renderer.cached_images(), 1);
    let again = renderer.render(&tree, &opts).unwrap().pixmap;
    assert_eq!(first.data(), again.data());
    assert_eq!(
        (fetches(), renderer.cached_images()),
        (2, 1),
        "fetched, not decoded again"
    );
    *fetcher.0.lock().unwrap() = solid_png(0, 0, 255);
    let swapped = renderer.render(&tree, &opts).unwrap().pixmap;
    assert_eq!(
        centre(&swapped),
        (0, 0, 255),
        "the URL's new bytes are drawn"
    );
    assert_eq!(renderer.cached_images(), 2);
    assert_eq!(Renderer::with_defaults().cached_images(), 0);
}
