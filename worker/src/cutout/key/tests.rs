//! Unit tests of the colour key.

use super::*;

fn bottle_on(ground: impl Fn(u32, u32) -> [u8; 3]) -> RgbImage {
    RgbImage::from_fn(300, 200, |x, y| {
        let inside = (120..180).contains(&x) && (40..180).contains(&y);
        image::Rgb(if inside { [160, 60, 30] } else { ground(x, y) })
    })
}

#[test]
fn a_flat_ground_and_a_sweep_are_keyed_a_scene_is_not() {
    let flat = GroundModel::fit(&bottle_on(|_, _| [250, 250, 250])).unwrap();
    assert!(flat.key([250.0; 3], 0.1, 0.1) == 0.0);
    assert!(flat.key([160.0, 60.0, 30.0], 0.5, 0.5) == 1.0);

    // A grey studio sweep: lighter at the bottom.
    let sweep = GroundModel::fit(&bottle_on(|_, y| {
        let g = 170 + (y * 60 / 200) as u8;
        [g, g, g]
    }))
    .unwrap();
    assert!(
        sweep.key([200.0; 3], 0.3, 0.5) < 0.01,
        "the sweep's middle is ground"
    );

    // Stripes of many colours along the border: not a ground.
    let scene = bottle_on(|x, y| [((x * 37) % 255) as u8, ((y * 53) % 255) as u8, 90]);
    assert!(GroundModel::fit(&scene).is_none());
}

#[test]
fn an_enclosed_hole_is_product() {
    // A ring of product around a hole of ground colour.
    let (w, h) = (20usize, 20usize);
    let mask: Vec<f32> = (0..w * h)
        .map(|i| {
            let (x, y) = ((i % w) as i32 - 10, (i / w) as i32 - 10);
            let r2 = x * x + y * y;
            if (9..49).contains(&r2) { 1.0 } else { 0.0 }
        })
        .collect();
    let plain: Vec<bool> = mask.iter().map(|m| *m <= 0.0).collect();
    let ground = ground_reaching_border(&plain, w, h);
    assert!(ground[0], "the corner is ground");
    assert!(!ground[10 * w + 10], "the enclosed centre is not");
}

/// Issue 40: a pale label across a dark jar touches the ground at the jar's sides; its
/// colour lies inside the key's ramp (key 0.2 to 0.4), not within the border's noise.
#[test]
fn a_pale_band_touching_the_silhouette_is_product() {
    let ground = GroundModel::fit(&RgbImage::from_fn(60, 60, |x, y| {
        let jar = (20..40).contains(&x) && (10..50).contains(&y);
        let label = jar && (25..35).contains(&y);
        image::Rgb(match (jar, label) {
            (_, true) => [242, 235, 216],
            (true, false) => [110, 60, 22],
            _ => [221, 221, 221],
        })
    }))
    .unwrap();
    let label = ground.key([242.0, 235.0, 216.0], 0.5, 0.5);
    assert!((0.1..0.5).contains(&label), "the label keys at {label}");
    let d = dist([242.0, 235.0, 216.0], ground.at(0.5, 0.5));
    assert!(!ground.plain(d), "the label is not plain ground");
    assert!(ground.plain(dist([222.0, 220.0, 221.0], ground.at(0.1, 0.1))));
}

/// A spot of light behind the product, brighter than anything the border shows: the
/// ground the flood reached teaches the model, and the spot becomes plain ground; the
/// product's pale band, never reached, is not learnt.
#[test]
fn the_ground_the_flood_reached_corrects_the_model() {
    let (w, h) = (128usize, 96usize);
    let jar = |x: usize, y: usize| (54..74).contains(&x) && (20..80).contains(&y);
    let img = RgbImage::from_fn(w as u32, h as u32, |x, y| {
        let (x, y) = (x as usize, y as usize);
        if jar(x, y) {
            return image::Rgb(if (40..60).contains(&y) {
                [242, 235, 216]
            } else {
                [110, 60, 22]
            });
        }
        let r2 = ((x as f32 - 64.0) / 128.0).powi(2) + ((y as f32 - 48.0) / 96.0).powi(2);
        let g = (212.0 + 16.0 * (-r2 / 0.06).exp()).round() as u8;
        image::Rgb([g, g, g])
    });
    let mut ground = GroundModel::fit(&img).unwrap();
    let plain = |ground: &GroundModel| {
        let keyed = ground.mask(&img);
        ground_reaching_border(&keyed.iter().map(|k| *k <= 0.0).collect::<Vec<_>>(), w, h)
    };
    let beside = 48 * w + 50;
    let first = plain(&ground);
    assert!(
        !first[beside],
        "the bright spot beside the jar is off the border's model"
    );
    let mut outside = first;
    for _ in 0..3 {
        ground.refine(&img, &outside);
        for (o, more) in outside.iter_mut().zip(plain(&ground)) {
            *o |= more;
        }
    }
    assert!(
        outside[beside],
        "after the model learns the spot, it is ground"
    );
    assert!(
        !outside[50 * w + 56] && !outside[30 * w + 64],
        "the label and the body stay"
    );
}

#[test]
fn a_seam_narrower_than_three_pixels_does_not_carry_the_flood() {
    // A product (x 10..30) split by a plain seam `width` pixels wide (x 19..19 + width)
    // down to a pocket of plain ground inside it (y 12..18).
    let (w, h) = (40usize, 30usize);
    let ground = |width: usize| {
        let plain: Vec<bool> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                let product = (10..30).contains(&x) && (5..25).contains(&y);
                let seam = (19..19 + width).contains(&x) && y < 18;
                let pocket = (12..28).contains(&x) && (12..18).contains(&y);
                !product || seam || pocket
            })
            .collect();
        ground_reaching_border(&plain, w, h)
    };
    let pocket = 15 * w + 14;
    let narrow = ground(2);
    assert!(!narrow[pocket], "a 2 px seam does not carry the flood");
    assert!(!narrow[10 * w + 19], "nor is the seam itself cut");
    assert!(narrow[0] && narrow[2 * w + 19], "the ground outside is cut");
    assert!(ground(3)[pocket], "a 3 px channel is ground");
}

/// A product whose middle the flood took (a white body on a near-white ground): the
/// taken middle is a bay; the ground around a convex product, and beside a bottle's
/// neck, is not.
#[test]
fn ground_taken_from_inside_the_product_is_a_bay() {
    let (w, h) = (30usize, 30usize);
    // A bottle: a neck (x 13..17, y 3..10) on a body (x 8..22, y 10..27).
    let bottle = |x: usize, y: usize| {
        ((13..17).contains(&x) && (3..10).contains(&y))
            || ((8..22).contains(&x) && (10..27).contains(&y))
    };
    let whole: Vec<bool> = (0..w * h).map(|i| bottle(i % w, i / w)).collect();
    assert!(
        bays(&whole, w, h).iter().all(|b| !b),
        "a whole bottle has no bay, its shoulders included"
    );
    // The flood came in from the bottom and took a slot up the body (x 12..18, y 14..27).
    let slot = |x: usize, y: usize| (12..18).contains(&x) && (14..27).contains(&y);
    let keep: Vec<bool> = (0..w * h)
        .map(|i| whole[i] && !slot(i % w, i / w))
        .collect();
    let bay = bays(&keep, w, h);
    assert!(
        bay[20 * w + 14] && bay[26 * w + 14],
        "the slot is a bay, to its mouth"
    );
    assert!(
        !bay[5 * w + 5] && !bay[8 * w + 10],
        "the ground around is not"
    );
}

/// A shadow fades in from the ground and is reached; a grey part of the product a step
/// darker than the ground, though its colour is the ground darkened too, is not.
#[test]
fn a_shadow_fades_in_a_grey_part_steps_in() {
    // Row 0 is ground (the seed). Columns 0..5 darken by 0.03 a row (a shadow's edge),
    // columns 5..10 are ground, columns 10..20 jump to 0.85 on row 1 (a grey cap on
    // grey).
    let (w, h) = (20usize, 10usize);
    let shade: Vec<Option<f32>> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            Some(if y == 0 || (5..10).contains(&x) {
                1.0
            } else if x < 5 {
                1.0 - 0.03 * y as f32
            } else {
                0.85
            })
        })
        .collect();
    let seed: Vec<bool> = (0..w * h).map(|i| i < w).collect();
    let reached = shadow_reach(&seed, &shade, w, h);
    assert!(reached[9 * w + 2], "the shadow's darkest row is reached");
    assert!(
        !reached[w + 15] && !reached[9 * w + 15],
        "the grey part behind its step is not"
    );
    // A pixel off the ground's line has no shade at all.
    let ground = GroundModel::fit(&RgbImage::from_fn(40, 40, |_, _| {
        image::Rgb([200, 200, 200])
    }))
    .unwrap();
    assert!(
        ground
            .shade([160.0, 160.0, 160.0], 0.5, 0.5)
            .is_some_and(|k| (k - 0.8).abs() < 0.01)
    );
    assert!(
        ground.shade([160.0, 120.0, 90.0], 0.5, 0.5).is_none(),
        "a brown is no shadow of grey"
    );
    assert!(
        ground.shade([60.0, 60.0, 60.0], 0.5, 0.5).is_none(),
        "too dark for a shadow"
    );
}
