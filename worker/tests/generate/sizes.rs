//! Sizes of a campaign set (issue 42, item 1): one ad made at its reference's shape, then at
//! 1:1, 4:5, 9:16, 1.91:1, 2:3 and 300×250, both as a sized ad (`size` without a source
//! tree: made as today, then laid out again) and as a resize of the first ad's tree. Each
//! PNG has its size's aspect; each tree keeps every quality rule at its shape (checked here
//! again on a fresh check render), the same words and the same node ids; words that cannot
//! fit a shape fail the job with a message naming it.

use std::collections::BTreeSet;
use std::sync::Arc;

use adforge_renderer::tree::TreeDoc;
use adforge_renderer::{RenderOptions, Renderer, Tree, Warning};
use adforge_worker::blob::BlobStore;
use adforge_worker::generate::quality;
use adforge_worker::generate::relayout;
use adforge_worker::{GenerateAdJob, Job, JobError, TargetSize};
use serde_json::Value;

use crate::fixtures::{Harness, ad, job, repo};

const SIZES: [&str; 6] = ["1:1", "4:5", "9:16", "1.91:1", "2:3", "300x250"];

/// The size of a PNG, from its header.
fn png_size(png: &[u8]) -> (u32, u32) {
    let d = image::ImageReader::new(std::io::Cursor::new(png))
        .with_guessed_format()
        .unwrap()
        .into_dimensions()
        .unwrap();
    (d.0, d.1)
}

/// The words of every visible text, as a sorted set.
fn words(tree: &Value) -> BTreeSet<String> {
    let doc = TreeDoc::new(tree);
    doc.node_ids()
        .filter(|id| doc.visible(id))
        .filter_map(|id| doc.text(id).map(str::to_owned))
        .collect()
}

/// Ids of the nodes an edit addresses: texts, images, the root and the logo.
fn addressed(tree: &Value) -> BTreeSet<String> {
    let doc = TreeDoc::new(tree);
    let images: BTreeSet<String> = doc.image_paints().into_iter().map(|p| p.at.node).collect();
    doc.node_ids()
        .filter(|id| {
            doc.kind(id) == Some("TEXT")
                || images.contains(*id)
                || Some(*id) == doc.root_id()
                || doc.slot(id).as_deref() == Some("logo")
        })
        .map(str::to_owned)
        .collect()
}

/// Checks one size of the set against the first ad (`first`, its tree): see the module
/// docs. `what` names the size and path in failures.
fn check_size(
    renderer: &Renderer,
    what: &str,
    size: &TargetSize,
    png: &[u8],
    tree: &Value,
    first: &Value,
) {
    let (w, h) = png_size(png);
    assert_eq!(w.max(h), 3840, "{what}: {w}x{h} is not a 4K render");
    let want = size.aspect();
    let got = f64::from(w) / f64::from(h);
    assert!(
        (got - want).abs() <= want / f64::from(w.min(h)) + 1e-9,
        "{what}: {w}x{h} is {got:.4}:1, not {want:.4}:1"
    );
    // The same words and the same ids as the first ad.
    assert_eq!(words(tree), words(first), "{what}: the words differ");
    assert_eq!(addressed(tree), addressed(first), "{what}: node ids differ");
    let all: BTreeSet<String> = TreeDoc::new(first).node_ids().map(str::to_owned).collect();
    let doc = TreeDoc::new(tree);
    for id in doc.node_ids() {
        let derived = matches!(doc.name(id), Some("Contrast Panel" | "Logo Plate"));
        assert!(all.contains(id) || derived, "{what}: new node {id}");
    }
    // The rules again, on a fresh check render of the returned tree.
    let parsed = Tree::from_value(tree.clone()).unwrap();
    let out = renderer
        .render(
            &parsed,
            &RenderOptions {
                width: Some(540),
                encode_png: false,
            },
        )
        .unwrap();
    for warning in &out.report.warnings {
        assert!(
            !matches!(
                warning,
                Warning::TextOverflow { .. }
                    | Warning::TextTruncated { .. }
                    | Warning::LowContrast { .. }
            ),
            "{what}: {warning:?}"
        );
    }
    assert_eq!(quality::crowded_text(tree), None, "{what}");
    assert_eq!(quality::text_margin(tree), None, "{what}");
    // The readable floor, on the sizes drawn.
    let (dw, dh) = parsed.design_size();
    let floor = relayout::floor(size, f64::from(dw), f64::from(dh));
    assert!(floor >= f64::from(dw.min(dh)) * relayout::READABLE_FLOOR);
    for f in &out.report.fitted_text {
        if doc.slot(&f.node).as_deref() != Some("logo") {
            assert!(
                f64::from(f.font_size) >= floor * 0.98,
                "{what}: {} at {} px, under the floor {floor:.0}",
                f.node,
                f.font_size
            );
        }
    }
    // The logo shows.
    let logo = doc
        .node_ids()
        .find(|id| doc.slot(id).as_deref() == Some("logo"))
        .unwrap_or_else(|| panic!("{what}: no logo"));
    assert!(doc.visible(logo), "{what}: the logo is hidden");
    // The product at least as prominent as in the first ad, where the shape allows: in a
    // wide shape it may give the words room, never under the rule's least share, and then
    // it takes most of the canvas's height.
    let source = quality::product_share(first).unwrap();
    let share = quality::product_share(tree).unwrap();
    assert!(
        share >= adforge_worker::blueprint::MIN_PRODUCT_SHARE,
        "{what}: {share}"
    );
    // Tall shapes have the room: the source's share. Square-ish and wide ones give the
    // words room first, the product keeping at least half its share; a small display size
    // whose floor is its pixels' (10 px at 300x250) lets the product yield down to the
    // rule's least share before its type gets smaller.
    let px_floor = relayout::READABLE_FLOOR_PX * f64::from(dw.max(dh))
        / f64::from(size.width.max(size.height))
        > relayout::READABLE_FLOOR * f64::from(dw.min(dh));
    if want < 0.8 {
        assert!(
            share >= 0.95 * source,
            "{what}: the product covers {share:.3}, the first ad {source:.3}"
        );
    } else if !px_floor {
        assert!(
            share >= 0.5 * source,
            "{what}: the product covers {share:.3}, the first ad {source:.3}"
        );
    }
    if want > 1.3 && share < 0.95 * source {
        let product = doc
            .node_ids()
            .filter(|id| doc.slot(id).as_deref() == Some("product_image"))
            .find_map(|id| doc.bounds(id))
            .unwrap();
        assert!(
            product.height >= 0.7 * f64::from(dh),
            "{what}: the product gave room but is {:.0} of {dh} tall",
            product.height
        );
    }
}

/// [`check_size`] on a blocking thread (the check render fetches the fixtures' images).
async fn checked(
    renderer: &Arc<Renderer>,
    what: String,
    size: &TargetSize,
    png: Vec<u8>,
    tree: Value,
    first: &Value,
) {
    let (renderer, size, first) = (renderer.clone(), size.clone(), first.clone());
    tokio::task::spawn_blocking(move || check_size(&renderer, &what, &size, &png, &tree, &first))
        .await
        .unwrap();
}

/// The first ad's job: the fixture's product with facts, on the product-shot reference.
fn first_job(base: &str) -> GenerateAdJob {
    job(base, "ia_sizes", "/ref/object45.png", true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_ad_in_every_size_both_as_sized_ads_and_as_resizes() {
    let h = Harness::new().await;
    // The handler's renderer reads the fixtures' images as the job did.
    let renderer = h.handler.renderer().clone();
    let first = h
        .run(Job::GenerateImageAd(first_job(&h.base)))
        .await
        .0
        .unwrap();
    let first = ad(first).json_tree.unwrap();
    let dir = repo().join("target/generate-samples/sizes");
    std::fs::create_dir_all(&dir).unwrap();
    for (n, name) in SIZES.iter().enumerate() {
        let size = TargetSize::placement(name).unwrap();
        // A sized ad: made as the first (same ad id and version, so the same node ids and
        // words), then laid out.
        let mut sized = first_job(&h.base);
        sized.size = Some(size.clone());
        let done = h.run(Job::GenerateImageAd(sized)).await.0;
        let done = ad(done.unwrap_or_else(|e| panic!("sized {name}: {e:?}")));
        let png = h
            .blob(&adforge_worker::generate::blob_key("ia_sizes", 1))
            .await;
        let tree = done.json_tree.unwrap();
        checked(&renderer, format!("sized {name}"), &size, png, tree, &first).await;
        // A resize of the first ad's tree: a new ad, the first's ids and words.
        let mut resize = first_job(&h.base);
        resize.ad_id = format!("ia_resized_{n}");
        resize.size = Some(TargetSize {
            source_tree: Some(first.clone()),
            ..size.clone()
        });
        let done = h.run(Job::GenerateImageAd(resize)).await.0;
        let done = ad(done.unwrap_or_else(|e| panic!("resize {name}: {e:?}")));
        assert!(done.copy.is_none(), "a resize writes no new words");
        let png = h
            .blob(&adforge_worker::generate::blob_key(
                &format!("ia_resized_{n}"),
                1,
            ))
            .await;
        let tree = done.json_tree.unwrap();
        if *name == "9:16" {
            let (got, was) = (headline_to_width(&tree), headline_to_width(&first));
            assert!(
                got >= 0.8 * was,
                "9:16 headline {got:.4} of the width, the first {was:.4}"
            );
        }
        let file = name.replace([':', '.'], "_");
        std::fs::write(dir.join(format!("{file}.png")), &png).unwrap();
        checked(
            &renderer,
            format!("resize {name}"),
            &size,
            png,
            tree,
            &first,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_that_cannot_fit_a_size_fail_the_job_naming_it() {
    let h = Harness::new().await;
    let first = h
        .run(Job::GenerateImageAd(first_job(&h.base)))
        .await
        .0
        .unwrap();
    let mut tree = ad(first).json_tree.unwrap();
    let headline = {
        let doc = TreeDoc::new(&tree);
        doc.node_ids()
            .find(|id| doc.slot(id).as_deref() == Some("headline"))
            .unwrap()
            .to_owned()
    };
    let long = "Every single morning deserves a far better cup of coffee than the one you had \
        yesterday, smooth and low in acid, steeped slowly for eighteen hours, ready in one \
        minute at home and kind to your stomach, your wallet and your very busy mornings";
    // Four times over: far more than a 300×250 holds at 10 px.
    let long = [long; 4].join(" ");
    TreeDoc::new(&mut tree).set_text(&headline, &long).unwrap();
    let mut resize = first_job(&h.base);
    resize.ad_id = "ia_too_long".into();
    resize.size = Some(TargetSize {
        source_tree: Some(tree),
        ..TargetSize::placement("300x250").unwrap()
    });
    let err = h.run(Job::GenerateImageAd(resize)).await.0.unwrap_err();
    let JobError::Abort { message, .. } = &err else {
        panic!("expected an abort, got {err:?}");
    };
    assert!(message.contains("300x250"), "{message}");
    assert!(message.contains("readable floor"), "{message}");
    assert!(message.contains("shorten"), "{message}");
    // Nothing was stored for it.
    assert!(
        h.blobs
            .get(&adforge_worker::generate::blob_key("ia_too_long", 1))
            .await
            .unwrap()
            .is_none()
    );
}

/// The headline's type size over its canvas's width.
fn headline_to_width(tree: &Value) -> f64 {
    let doc = TreeDoc::new(tree);
    let (w, _) = relayout::design_size(tree).unwrap();
    let size = doc
        .node_ids()
        .find(|id| doc.slot(id).as_deref() == Some("headline"))
        .and_then(|id| doc.font_size(id))
        .unwrap();
    size / w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_centred_product_reference_makes_every_feed_size() {
    // A real reference with its product in the middle and words above and below it: the
    // product yields room to the words before the type gets smaller.
    let h = Harness::new().await;
    let renderer = h.handler.renderer().clone();
    let first_job = |base: &str| job(base, "ia_centred", "/ref/centred.png", true);
    let first = h
        .run(Job::GenerateImageAd(first_job(&h.base)))
        .await
        .0
        .unwrap();
    let first = ad(first).json_tree.unwrap();
    for (n, name) in ["1:1", "4:5", "9:16", "1.91:1", "300x250"]
        .iter()
        .enumerate()
    {
        let size = TargetSize::placement(name).unwrap();
        let mut resize = first_job(&h.base);
        resize.ad_id = format!("ia_centred_{n}");
        resize.size = Some(TargetSize {
            source_tree: Some(first.clone()),
            ..size.clone()
        });
        let done = h.run(Job::GenerateImageAd(resize)).await.0;
        let done = ad(done.unwrap_or_else(|e| panic!("centred {name}: {e:?}")));
        let png = h
            .blob(&adforge_worker::generate::blob_key(
                &format!("ia_centred_{n}"),
                1,
            ))
            .await;
        let tree = done.json_tree.unwrap();
        if *name == "9:16" {
            // A 9:16 is as wide as a 4:5: its headline about as large for its width.
            let (got, was) = (headline_to_width(&tree), headline_to_width(&first));
            assert!(
                got >= 0.8 * was,
                "9:16 headline {got:.4} of the width, the source's {was:.4}"
            );
        }
        checked(
            &renderer,
            format!("centred {name}"),
            &size,
            png,
            tree,
            &first,
        )
        .await;
    }
}
