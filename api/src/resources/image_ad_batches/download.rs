//! GET /v1/image-ad-batches/{id}/download: the batch's completed ads as one ZIP, streamed
//! in bounded memory.
//!
//! The `zip` crate (already in the tree through candle, built without its compressors)
//! writes a streaming archive (`ZipWriter::new_stream`: local headers, then data
//! descriptors, then the central directory) into a [`Write`] that hands 64 KiB chunks to a
//! bounded channel the response body reads. The writer runs on a blocking thread and
//! reads each blob chunk by chunk from the store, so what is in memory at once is one
//! chunk being read, one being filled and the channel's few chunks, whatever the
//! batch's size; a slow client stops the writer by filling the channel. Entries are
//! stored, not deflated: PNG and JPEG are compressed already. `async_zip` was the
//! alternative; it would be a new dependency for the same archive.
//!
//! Each completed ad gives its 4K PNG and the JPEG at its placement's standard size (made
//! now, as `/files/` makes it, if nobody fetched it yet), then `manifest.csv` ends the
//! archive: the rows are known once every ad was written (a batch is at most 500 rows).
//! A failure after the first byte (a blob gone, the store down) can no longer become an
//! error response: the body stops with an error, so the client sees a truncated download
//! rather than a ZIP missing files.

use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::store::{self, ZipRow};
use crate::blob::{BlobStore, OwnFile};
use crate::error::ApiResult;
use crate::resources::image_ads::CopyReport;
use crate::resources::image_ads::renditions::{self, Rendition, RenditionFormat};
use crate::store::Db;

/// Size of the chunks handed to the response body.
const CHUNK: usize = 64 * 1024;
/// Chunks waiting for the client at most.
const IN_FLIGHT: usize = 4;
/// Ads read from SQL at a time.
const PAGE: i64 = 100;

/// Hands what the ZIP writer writes to the response body in chunks of [`CHUNK`].
struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "client gone"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// A name part of letters, digits and dashes (at most 40 characters).
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.chars().count() >= 40 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() { "ad".to_owned() } else { out }
}

/// The base name of an ad's files: `NNN-<product>-<size>-<ad id>`.
fn base_name(row: &ZipRow) -> String {
    let size = match (&row.size, row.width, row.height) {
        (Some(s), _, _) => s.replace(':', "x"),
        (None, Some(w), Some(h)) => format!("{w}x{h}"),
        _ => "own-size".to_owned(),
    };
    format!(
        "{:03}-{}-{}-{}",
        row.item,
        slug(&row.product_name),
        size.replace('.', "_"),
        row.ad_id
    )
}

/// The JPEG at the placement's size: the last JPEG listed (the placement's, or the
/// 1080-wide one when they are the same size).
fn placement_jpeg(row: &ZipRow) -> Option<Rendition> {
    renditions::listed("completed", row.image_url.as_deref(), row.width, row.height)
        .into_iter()
        .rfind(|r| r.format == RenditionFormat::Jpeg)
}

/// One manifest row, before the slot columns are known.
struct ManifestRow {
    item: i64,
    ad_id: String,
    product_id: String,
    product_name: String,
    layout: String,
    size: String,
    width: i64,
    height: i64,
    png: String,
    jpeg: String,
    /// (slot, words) of each shown text slot.
    slots: Vec<(String, String)>,
}

/// The manifest as CSV: fixed columns, then one column per slot name in order of first
/// appearance.
fn manifest_csv(rows: &[ManifestRow]) -> Result<Vec<u8>, csv::Error> {
    let mut slot_names: Vec<&str> = Vec::new();
    for r in rows {
        for (s, _) in &r.slots {
            if !slot_names.contains(&s.as_str()) {
                slot_names.push(s);
            }
        }
    }
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    let mut header = vec![
        "item",
        "ad_id",
        "product_id",
        "product_name",
        "layout",
        "size",
        "width",
        "height",
        "png",
        "jpeg",
    ];
    header.extend(slot_names.iter().copied());
    w.write_record(&header)?;
    for r in rows {
        let mut rec = vec![
            r.item.to_string(),
            r.ad_id.clone(),
            r.product_id.clone(),
            r.product_name.clone(),
            r.layout.clone(),
            r.size.clone(),
            r.width.to_string(),
            r.height.to_string(),
            r.png.clone(),
            r.jpeg.clone(),
        ];
        for name in &slot_names {
            let words: Vec<&str> = r
                .slots
                .iter()
                .filter(|(s, _)| s == name)
                .map(|(_, t)| t.as_str())
                .collect();
            rec.push(words.join("\n"));
        }
        w.write_record(&rec)?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// Copies the blob behind `url` (this server's file) into the current ZIP entry, chunk by
/// chunk; a missing rendition is made first.
fn copy_blob(
    rt: &tokio::runtime::Handle,
    blobs: &Arc<dyn BlobStore>,
    url: &str,
    out: &mut impl Write,
) -> Result<(), String> {
    let OwnFile::Key(key) = blobs.own_file(url) else {
        return Err(format!("{url} is not a file of this server"));
    };
    let opened = rt.block_on(async {
        let mut blob = blobs.open(&key).await.map_err(|e| e.to_string())?;
        if blob.is_none()
            && renditions::made_on_request(blobs.as_ref(), &key)
                .await
                .map_err(|e| e.message)?
        {
            blob = blobs.open(&key).await.map_err(|e| e.to_string())?;
        }
        blob.ok_or_else(|| format!("no file {key}"))
    })?;
    let mut chunks = opened.chunks;
    // Each chunk is read in the runtime and written from this blocking thread, where a
    // full channel waits (`blocking_send` may not run inside the runtime).
    while let Some(chunk) = rt.block_on(chunks.next()) {
        let chunk = chunk.map_err(|e| e.to_string())?;
        out.write_all(&chunk).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Writes the whole archive; runs on a blocking thread.
fn write_zip(
    rt: &tokio::runtime::Handle,
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    batch_id: &str,
    out: ChannelWriter,
) -> Result<(), String> {
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut zip = zip::ZipWriter::new_stream(out);
    let mut manifest = Vec::new();
    let mut after = -1;
    loop {
        let rows = rt
            .block_on(store::completed_items(&db.read, batch_id, after, PAGE))
            .map_err(|e| e.message)?;
        let Some(last) = rows.last() else {
            break;
        };
        after = last.item;
        for row in rows {
            let Some(png_url) = row.image_url.clone() else {
                continue;
            };
            let base = base_name(&row);
            let png = format!("{base}.png");
            zip.start_file(&png, options).map_err(|e| e.to_string())?;
            copy_blob(rt, blobs, &png_url, &mut zip)?;
            let mut jpeg = String::new();
            if let Some(r) = placement_jpeg(&row) {
                jpeg = format!("{base}-{}x{}.jpg", r.width, r.height);
                zip.start_file(&jpeg, options).map_err(|e| e.to_string())?;
                copy_blob(rt, blobs, &r.url, &mut zip)?;
            }
            let copy: Option<CopyReport> = row
                .copy_report
                .as_deref()
                .and_then(|c| serde_json::from_str(c).ok());
            manifest.push(ManifestRow {
                item: row.item,
                size: row.size.clone().unwrap_or_default(),
                width: row.width.unwrap_or_default(),
                height: row.height.unwrap_or_default(),
                slots: copy
                    .map(|c| {
                        c.slots
                            .into_iter()
                            .filter(|s| s.shown)
                            .map(|s| (s.slot, s.text))
                            .collect()
                    })
                    .unwrap_or_default(),
                ad_id: row.ad_id,
                product_id: row.product_id,
                product_name: row.product_name,
                layout: row.layout,
                png,
                jpeg,
            });
        }
    }
    let csv = manifest_csv(&manifest).map_err(|e| e.to_string())?;
    zip.start_file("manifest.csv", options)
        .map_err(|e| e.to_string())?;
    zip.write_all(&csv).map_err(|e| e.to_string())?;
    let mut out = zip.finish().map_err(|e| e.to_string())?.into_inner();
    out.flush().map_err(|e| e.to_string())
}

/// The ZIP of batch `id` of `org_id` as a streamed response body (the download's domain
/// call; the dashboard serves it too).
///
/// # Errors
/// IMAGE_AD_BATCH_NOT_FOUND before the first byte; later failures end the stream with an
/// error.
pub async fn zip_stream(
    db: &Db,
    blobs: Arc<dyn BlobStore>,
    org_id: &str,
    id: &str,
) -> ApiResult<axum::body::Body> {
    store::read(db, org_id, id).await?;
    let (tx, mut rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(IN_FLIGHT);
    let rt = tokio::runtime::Handle::current();
    let db = db.clone();
    let batch_id = id.to_owned();
    let errors = tx.clone();
    tokio::task::spawn_blocking(move || {
        let out = ChannelWriter {
            tx,
            buf: Vec::with_capacity(CHUNK),
        };
        if let Err(why) = write_zip(&rt, &db, &blobs, &batch_id, out) {
            tracing::warn!(%batch_id, %why, "batch download stopped");
            let _ = errors.blocking_send(Err(std::io::Error::other(why)));
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Ok(axum::body::Body::from_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_readable_file_name_parts() {
        assert_eq!(slug("Trail Shoe – Red/42"), "trail-shoe-red-42");
        assert_eq!(slug("  ***  "), "ad");
        assert_eq!(slug(&"x".repeat(90)).len(), 40);
    }

    #[test]
    fn manifest_quotes_commas_quotes_and_line_breaks() {
        let row = ManifestRow {
            item: 0,
            ad_id: "ia_1".into(),
            product_id: "prod_1".into(),
            product_name: "Shoe, \"Trail\"".into(),
            layout: "dt_1".into(),
            size: "9:16".into(),
            width: 2160,
            height: 3840,
            png: "000.png".into(),
            jpeg: "000.jpg".into(),
            slots: vec![("headline".into(), "Run\nfar".into())],
        };
        let csv = String::from_utf8(manifest_csv(&[row]).unwrap()).unwrap();
        assert_eq!(
            csv,
            "item,ad_id,product_id,product_name,layout,size,width,height,png,jpeg,headline\r\n\
             0,ia_1,prod_1,\"Shoe, \"\"Trail\"\"\",dt_1,9:16,2160,3840,000.png,000.jpg,\"Run\nfar\"\r\n"
        );
    }
}
