//! What the visual editor offers for image slots: the organisation's images that belong to
//! an ad's brand and product (its logos, the product's photos, its variants' images) and
//! the cut-outs made of them; for a design template, which belongs to no brand, the
//! organisation's newest product photos, logos and cut-outs.

use adforge_api::store::Db;

/// Most images offered for a template.
pub const TEMPLATE_IMAGES: i64 = 60;

/// One live image: id, blob key, small thumbnail's key, alt text, type, and the image it
/// was cut out of.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ImageRow {
    pub id: String,
    pub blob_key: String,
    pub thumb_small_key: Option<String>,
    pub alt_text: Option<String>,
    pub image_type: Option<String>,
    pub cutout_of: Option<String>,
}

const COLUMNS: &str = "id, blob_key, thumb_small_key, alt_text, image_type, cutout_of";

/// The `image_ids` of the product's live variants, in the variants' order.
///
/// # Errors
/// Database failures.
pub async fn variant_image_ids(
    db: &Db,
    org_id: &str,
    product_id: &str,
) -> Result<Vec<String>, sqlx::Error> {
    let lists: Vec<String> = adforge_api::store::query_scalar(
        "SELECT image_ids FROM product_variants WHERE org_id = ? AND product_id = ? AND deleted_at IS NULL ORDER BY seq",
    )
    .bind(org_id)
    .bind(product_id)
    .fetch_all(&db.read)
    .await?;
    let mut ids = Vec::new();
    for l in lists {
        for id in serde_json::from_str::<Vec<String>>(&l).unwrap_or_default() {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

/// The live images among `ids` or of `product_id`, then the live cut-outs of any of them,
/// oldest first within each.
///
/// # Errors
/// Database failures.
pub async fn ad_images(
    db: &Db,
    org_id: &str,
    product_id: &str,
    ids: &[String],
) -> Result<Vec<ImageRow>, sqlx::Error> {
    let sql = if ids.is_empty() {
        format!(
            "SELECT {COLUMNS} FROM images WHERE org_id = ? AND deleted_at IS NULL AND product_id = ? AND cutout_of IS NULL ORDER BY seq"
        )
    } else {
        format!(
            "SELECT {COLUMNS} FROM images WHERE org_id = ? AND deleted_at IS NULL AND cutout_of IS NULL AND (product_id = ? OR id IN ({})) ORDER BY seq",
            adforge_api::store::marks(ids.len())
        )
    };
    let mut q = adforge_api::store::query_as::<ImageRow>(&sql)
        .bind(org_id)
        .bind(product_id);
    for id in ids {
        q = q.bind(id);
    }
    let mut rows = q.fetch_all(&db.read).await?;
    if rows.is_empty() {
        return Ok(rows);
    }
    let sources: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let sql = format!(
        "SELECT {COLUMNS} FROM images WHERE org_id = ? AND deleted_at IS NULL AND cutout_of IN ({}) ORDER BY seq",
        adforge_api::store::marks(sources.len())
    );
    let mut q = adforge_api::store::query_as::<ImageRow>(&sql).bind(org_id);
    for id in &sources {
        q = q.bind(id);
    }
    rows.extend(q.fetch_all(&db.read).await?);
    Ok(rows)
}

/// The organisation's newest live product photos, logos and cut-outs (for templates).
///
/// # Errors
/// Database failures.
pub async fn template_images(db: &Db, org_id: &str) -> Result<Vec<ImageRow>, sqlx::Error> {
    adforge_api::store::query_as::<ImageRow>(&format!(
        "SELECT {COLUMNS} FROM images WHERE org_id = ? AND deleted_at IS NULL \
         AND (image_type IN ('product', 'logo') OR cutout_of IS NOT NULL) ORDER BY seq DESC LIMIT ?"
    ))
    .bind(org_id)
    .bind(TEMPLATE_IMAGES)
    .fetch_all(&db.read)
    .await
}
