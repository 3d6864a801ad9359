use super::*;

fn png(img: &RgbaImage) -> Vec<u8> {
    let mut out = Vec::new();
    img.write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

fn decode(bytes: &[u8]) -> Result<Preview, ImagingError> {
    decode_probed(bytes, &probe(bytes)?)
}

fn encoded(img: &RgbaImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Vec::new();
    if format == ImageFormat::Jpeg {
        DynamicImage::ImageRgba8(img.clone())
            .into_rgb8()
            .write_to(&mut Cursor::new(&mut out), format)
            .unwrap();
    } else {
        img.write_to(&mut Cursor::new(&mut out), format).unwrap();
    }
    out
}

#[test]
fn sniffs_and_rejects() {
    let img = RgbaImage::from_pixel(40, 20, image::Rgba([10, 40, 200, 255]));
    let d = decode(&png(&img)).unwrap();
    assert_eq!((d.width, d.height, format_name(d.format)), (40, 20, "png"));
    assert_eq!(
        d.image.dimensions(),
        (40, 20),
        "small images are kept as they are"
    );
    let gif = decode(b"GIF89a....").unwrap_err();
    assert!(
        matches!(&gif, ImagingError::OtherFormat { found } if found == "GIF"),
        "{gif:?}"
    );
    assert_eq!(gif.to_string(), "The file is GIF; upload PNG, JPEG or WebP");
    assert!(matches!(
        decode(b"hello world").unwrap_err(),
        ImagingError::UnknownFormat
    ));
}

/// One rule for all three formats: a file cut anywhere before its end marker is
/// refused, even where the decoder would fill in the missing pixels.
#[test]
fn incomplete_files_are_refused_in_every_format() {
    let mut img = RgbaImage::new(64, 48);
    for (x, y, p) in img.enumerate_pixels_mut() {
        *p = image::Rgba([(x * 4) as u8, (y * 5) as u8, ((x * y) % 251) as u8, 255]);
    }
    for format in [ImageFormat::Png, ImageFormat::Jpeg, ImageFormat::WebP] {
        let whole = encoded(&img, format);
        let d = decode(&whole).unwrap();
        assert_eq!((d.width, d.height), (64, 48));
        // Trailing bytes after the end marker are allowed (PNG and JPEG; WebP's RIFF
        // length already tells where the file ends).
        if format != ImageFormat::WebP {
            let mut longer = whole.clone();
            longer.extend_from_slice(b"trailing camera data");
            decode(&longer).unwrap();
        }
        for cut in [1, 2, 10, whole.len() / 3, whole.len() * 2 / 3] {
            let err = decode(&whole[..whole.len() - cut]).unwrap_err();
            assert!(
                matches!(
                    err,
                    ImagingError::Incomplete { .. } | ImagingError::Undecodable { .. }
                ),
                "{format:?} cut {cut}: {err:?}"
            );
        }
    }
}

#[test]
fn images_over_the_limits_are_refused_from_their_header() {
    let img = image::GrayImage::new(20_000, 1);
    let mut bytes = Vec::new();
    img.write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
        .unwrap();
    let err = probe(&bytes).unwrap_err();
    assert!(
        matches!(
            err,
            ImagingError::TooLarge {
                width: 20_000,
                height: 1
            }
        ),
        "{err:?}"
    );
}

#[test]
fn big_images_are_shrunk_in_their_own_pixel_type() {
    let img = image::RgbImage::from_pixel(3000, 1000, image::Rgb([200, 30, 40]));
    let mut bytes = Vec::new();
    img.write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
        .unwrap();
    let probed = probe(&bytes).unwrap();
    assert_eq!(
        probed.cost,
        3000 * 1000 * 3 + 3000 * 400 * 3 + DECODE_SLACK_BYTES
    );
    let d = decode_probed(&bytes, &probed).unwrap();
    assert_eq!((d.width, d.height), (3000, 1000));
    assert_eq!(d.image.dimensions(), (1200, 400));
    assert_eq!(d.image.get_pixel(600, 200).0, [200, 30, 40, 255]);
}

#[test]
fn every_image_within_the_limits_fits_the_budget() {
    // 50 MP, the worst shapes and pixel types of each format.
    for (w, h) in [(7071, 7071), (16_384, 3051), (3051, 16_384)] {
        for (format, pixel_bytes) in [
            (ImageFormat::Png, 8),
            (ImageFormat::Jpeg, 3),
            (ImageFormat::WebP, 4),
        ] {
            let cost = decode_cost(format, w, h, pixel_bytes);
            assert!(cost <= DECODE_BUDGET_BYTES, "{format:?} {w}x{h}: {cost}");
        }
    }
}

#[test]
fn describes_and_themes() {
    let blue = RgbaImage::from_pixel(300, 100, image::Rgba([40, 90, 200, 255]));
    assert_eq!(describe(&blue), "landscape image, mostly blue, mid-tone");
    let mut logo = RgbaImage::from_pixel(100, 100, image::Rgba([0, 0, 0, 0]));
    for x in 30..70 {
        for y in 30..70 {
            logo.put_pixel(x, y, image::Rgba([250, 250, 250, 255]));
        }
    }
    assert_eq!(logo_theme(&logo), "light");
    let mut on_white = RgbaImage::from_pixel(100, 100, image::Rgba([255, 255, 255, 255]));
    for x in 30..70 {
        on_white.put_pixel(x, 50, image::Rgba([10, 10, 10, 255]));
    }
    assert_eq!(logo_theme(&on_white), "dark");
}

#[test]
fn thumbnails_fit_their_edges() {
    let img = RgbaImage::from_pixel(1600, 800, image::Rgba([200, 10, 10, 255]));
    let [s, m, l] = thumbnails(&img).unwrap();
    for (bytes, edge) in [(s, 200), (m, 600), (l, 1200)] {
        let t = image::load_from_memory_with_format(&bytes, ImageFormat::WebP).unwrap();
        assert_eq!((t.width(), t.height()), (edge, edge / 2));
    }
}
