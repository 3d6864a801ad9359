//! The "create an ad" form: catalogue choices, a reference by upload, URL or swipe-file
//! design, through the same code as POST /v1/image-ads.

use super::*;

/// What the create form was sent with (kept to show the form again after an error).
#[derive(Default)]
struct CreateInput {
    brand_id: String,
    product_id: String,
    audience_id: String,
    variant_id: String,
    reference_url: String,
    swipe_file_id: String,
    upload: Option<Bytes>,
    editable: bool,
    prompt: String,
}

async fn create_page(
    state: &AppState,
    m: &SessionMember,
    input: &CreateInput,
    status: StatusCode,
    problem: Option<String>,
) -> DashResult {
    let cat = catalog(&state.db, &m.org_id).await?;
    let body = format!(
        r#"{problem}<p><a href="/dashboard/ads">← All ads</a></p>
<form method="post" action="/dashboard/ads/new" enctype="multipart/form-data" class="create-ad">{csrf}
<div class="grid-form">
<div><label for="c-brand">Brand</label><select id="c-brand" name="brand_id" required><option value="">Choose a brand</option>{brands}</select></div>
<div><label for="c-product">Product</label><select id="c-product" name="product_id" required><option value="">Choose a product</option>{products}</select></div>
<div><label for="c-audience">Audience</label><select id="c-audience" name="audience_id" required><option value="">Choose an audience</option>{audiences}</select></div>
<div><label for="c-variant">Variant</label><select id="c-variant" name="product_variant_id"><option value="">The product's first variant with images</option>{variants}</select></div>
</div>
<fieldset><legend>Reference ad (one of the three)</legend>
<p class="hint">The composition to follow: a public PNG, JPEG or WebP URL, an image uploaded from this device, or a design of the swipe file by its id.</p>
<label for="c-url">Image URL</label><input id="c-url" name="reference_url" type="url" maxlength="2048" value="{url}" placeholder="https://…">
<label for="c-file">Upload an image</label><input id="c-file" name="reference_file" type="file" accept="image/png,image/jpeg,image/webp">
<label for="c-swipe">Swipe-file design id</label><input id="c-swipe" name="swipe_file_id" value="{swipe}" placeholder="sf_…" maxlength="100">
</fieldset>
<label for="c-prompt">Creative direction (optional)</label><textarea id="c-prompt" name="prompt" rows="3" maxlength="2000">{prompt}</textarea>
<label class="check" for="c-editable"><input type="checkbox" id="c-editable" name="editable" value="true"{ed}> <span>Editable: PNG and JSON tree, editable here afterwards ({editable_price}; flat {flat_price})</span></label>
<p class="hint">The price is held from the wallet when the ad starts and charged when it completes; a failed ad is not charged.</p>
<button type="submit">Create ad</button></form>"#,
        problem = problem
            .map(|p| notice("error", &format!("<p>{p}</p>")))
            .unwrap_or_default(),
        csrf = csrf_field(&m.csrf_token),
        brands = options(&cat.brands, None, &input.brand_id),
        products = options(&cat.products, Some(&cat.brands), &input.product_id),
        audiences = options(&cat.audiences, Some(&cat.products), &input.audience_id),
        variants = options(&cat.variants, Some(&cat.products), &input.variant_id),
        url = esc(&input.reference_url),
        swipe = esc(&input.swipe_file_id),
        prompt = esc(&input.prompt),
        ed = if input.editable { " checked" } else { "" },
        editable_price = adforge_api::wallet::dollars(adforge_api::wallet::EDITABLE_IMAGE_AD_CENTS),
        flat_price = adforge_api::wallet::dollars(adforge_api::wallet::FLAT_IMAGE_AD_CENTS),
    );
    Ok(crate::html(
        status,
        page_with_head("Create an ad", Some(m), "/dashboard/ads", &body, ""),
    ))
}

/// GET /dashboard/ads/new
pub async fn create_form(State(state): State<AppState>, me: SignedIn) -> DashResult {
    create_page(&state, &me.0, &CreateInput::default(), StatusCode::OK, None).await
}

/// Reads the multipart create form, checking its CSRF token first.
async fn read_create(
    me: &SignedIn,
    req: Request,
) -> Result<Result<CreateInput, String>, DashError> {
    let Ok(mut mp) = Multipart::from_request(req, &()).await else {
        return Err(DashError::Csrf);
    };
    let mut input = CreateInput::default();
    let mut csrf_ok = false;
    while let Ok(Some(field)) = mp.next_field().await {
        let name = field.name().unwrap_or("").to_string();
        if name == "reference_file" {
            let has_name = field.file_name().is_some_and(|n| !n.is_empty());
            match field.bytes().await {
                Ok(b) if has_name && !b.is_empty() => input.upload = Some(b),
                Ok(_) => {}
                Err(e) => return Ok(Err(format!("The upload could not be read: {e}"))),
            }
            continue;
        }
        let Ok(text) = field.text().await else {
            return Ok(Err("The form could not be read.".to_string()));
        };
        match name.as_str() {
            "csrf" => csrf_ok = same_secret(&text, &me.0.csrf_token),
            "brand_id" => input.brand_id = text.trim().to_string(),
            "product_id" => input.product_id = text.trim().to_string(),
            "audience_id" => input.audience_id = text.trim().to_string(),
            "product_variant_id" => input.variant_id = text.trim().to_string(),
            "reference_url" => input.reference_url = text.trim().to_string(),
            "swipe_file_id" => input.swipe_file_id = text.trim().to_string(),
            "editable" => input.editable = text == "true",
            "prompt" => input.prompt = text,
            _ => {}
        }
    }
    if !csrf_ok {
        return Err(DashError::Csrf);
    }
    Ok(Ok(input))
}

/// POST /dashboard/ads/new: the reference (URL, upload through the images code, or a
/// swipe-file design's image), then POST /v1/image-ads's domain call.
pub async fn create(State(state): State<AppState>, me: SignedIn, req: Request) -> DashResult {
    let input = match read_create(&me, req).await? {
        Ok(i) => i,
        Err(why) => {
            return create_page(
                &state,
                &me.0,
                &CreateInput::default(),
                StatusCode::BAD_REQUEST,
                Some(esc(&why)),
            )
            .await;
        }
    };
    let m = &me.0;
    let given = [
        !input.reference_url.is_empty(),
        input.upload.is_some(),
        !input.swipe_file_id.is_empty(),
    ]
    .iter()
    .filter(|g| **g)
    .count();
    if given != 1 {
        return create_page(
            &state,
            m,
            &input,
            StatusCode::BAD_REQUEST,
            Some(
                "Give exactly one reference: an image URL, an upload or a swipe-file design id."
                    .into(),
            ),
        )
        .await;
    }
    let reference = if let Some(bytes) = input.upload.clone() {
        images::upload_bytes(&state.db, &state.blobs, &m.org_id, bytes)
            .await
            .map(|img| img.src)
    } else if !input.swipe_file_id.is_empty() {
        swipe_files::load(&state.db, &m.org_id, &input.swipe_file_id)
            .await
            .map(|row| row.into_api(state.blobs.as_ref()).image_url)
    } else {
        Ok(input.reference_url.clone())
    };
    let result = match reference {
        Ok(reference_ad_url) => {
            let body = ImageAdCreate {
                reference_ad_url,
                brand_id: input.brand_id.clone(),
                product_id: input.product_id.clone(),
                audience_id: input.audience_id.clone(),
                editable: input.editable,
                product_variant_id: Some(input.variant_id.clone()).filter(|v| !v.is_empty()),
                prompt: Some(input.prompt.clone()).filter(|p| !p.trim().is_empty()),
            };
            image_ads::create_from(&state, &m.org_id, &body, None).await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(ad) => {
            tracing::info!(ad_id = %ad.id, profile_id = %m.profile_id, "image ad created in the dashboard");
            Ok(redirect(&format!("/dashboard/ads/{}", ad.id)))
        }
        Err(e) => {
            let (status, text) = api_message(e)?;
            create_page(&state, m, &input, status, Some(text)).await
        }
    }
}
