//! The names the ad form offers: the organisation's live brands and active products,
//! audiences and variants (one read each, by name).

use adforge_api::store::Db;

/// (id, name, parent id) option rows of the forms.
pub type Named = Vec<(String, String, String)>;

pub struct Catalog {
    pub brands: Named,
    pub products: Named,
    pub audiences: Named,
    pub variants: Named,
}

/// The organisation's live brands and active products, audiences and variants, by name.
///
/// # Errors
/// Database failures.
pub async fn catalog(db: &Db, org_id: &str) -> Result<Catalog, sqlx::Error> {
    let db = &db.read;
    let brands: Named = adforge_api::store::query_as(
        "SELECT id, name, '' FROM brands WHERE org_id = ? AND deleted_at IS NULL ORDER BY name, id",
    )
    .bind(org_id)
    .fetch_all(db)
    .await?;
    let products: Named = adforge_api::store::query_as(
        "SELECT id, name, brand_id FROM products WHERE org_id = ? AND deleted_at IS NULL AND archived_at IS NULL ORDER BY name, id",
    )
    .bind(org_id)
    .fetch_all(db)
    .await?;
    let audiences: Named = adforge_api::store::query_as(
        "SELECT id, name, product_id FROM audiences WHERE org_id = ? AND deleted_at IS NULL AND archived_at IS NULL ORDER BY name, id",
    )
    .bind(org_id)
    .fetch_all(db)
    .await?;
    let variants: Named = adforge_api::store::query_as(
        "SELECT id, name, product_id FROM product_variants WHERE org_id = ? AND deleted_at IS NULL AND archived_at IS NULL ORDER BY name, id",
    )
    .bind(org_id)
    .fetch_all(db)
    .await?;
    Ok(Catalog {
        brands,
        products,
        audiences,
        variants,
    })
}
