//! The wire format's own tests: round trips, unknown fields, refused versions.

use super::*;

fn rerender() -> Job {
    Job::RenderImageAdVersion(RerenderJob {
        ad_id: "ia_1".into(),
        org_id: "org_1".into(),
        version: 2,
        version_id: None,
        json_tree: serde_json::json!({"nodes": {}}),
    })
}

#[test]
fn envelope_round_trips_and_ignores_unknown_fields() {
    let env = JobEnvelope::new(rerender());
    let mut value: Value = serde_json::from_str(&env.encode()).unwrap();
    assert_eq!(value["job"]["type"], "render_image_ad_version");
    value["added_later"] = Value::from(1);
    value["job"]["also_added_later"] = Value::from("x");
    let json = value.to_string();
    assert_eq!(decode_header(&json).unwrap().job_id, "ia_1@v2");
    assert_eq!(decode_envelope(&json).unwrap(), env);
}

#[test]
fn newer_versions_are_refused_and_unknown_variants_fail_to_decode() {
    let mut value: Value = serde_json::from_str(&JobEnvelope::new(rerender()).encode()).unwrap();
    value["job"]["type"] = Value::from("render_video_ad");
    let header = decode_header(&value.to_string()).unwrap();
    assert_eq!(header.ad_id, "ia_1");
    assert!(matches!(
        decode_envelope(&value.to_string()),
        Err(Error::Decode { .. })
    ));
    value["v"] = Value::from(PROTOCOL_VERSION + 1);
    assert!(matches!(
        decode_header(&value.to_string()),
        Err(Error::UnsupportedVersion { .. })
    ));
}

/// One result of each kind, as the pipelines write them.
pub(crate) fn one_of_each_result() -> Vec<JobResult> {
    let ad = ImageAdRendered {
        image_url: "https://cdn.example.com/ia_1.png".into(),
        width: 3072,
        height: 3840,
        json_tree: Some(serde_json::json!({"root": "r", "nodes": {}})),
        render: Some(RenderTimings {
            backend: "cpu".into(),
            stages_ms: [("raster".to_owned(), 12.5)].into_iter().collect(),
        }),
        copy: None,
    };
    let template = DesignTemplateAnalysed {
        preview_url: "https://cdn.example.com/dt_1.png".into(),
        width: 1080,
        height: 1350,
        preview_key: "design-templates/dt_1/v1.png".into(),
        json_tree: serde_json::json!({"root": "r", "nodes": {}}),
        cache_hit: true,
        composition: "reference_blueprint".into(),
        note: None,
        reference_colours: vec![[1, 2, 3]],
        industry: Some("beauty".into()),
        ad_format: None,
    };
    let synced = FigmaSynced {
        unchanged: false,
        frame: FigmaFrameVersion {
            file_version: "42".into(),
            frame_hash: "ab".into(),
        },
        file_name: "Ads".into(),
        last_modified: "2026-11-28T00:00:00Z".into(),
        figma_render_key: None,
        figma_render_url: None,
        report: ImportReport::default(),
    };
    vec![
        JobResult::ImageAd(ad.clone()),
        JobResult::SwipeFile(Box::new(SwipeFileIngested {
            width: 800,
            height: 1000,
            thumb_key: "swipe-files/sf_1/preview.webp".into(),
            blob_key: None,
            aspect_ratio: "4:5".into(),
            industry: None,
            ad_format: Some("product_shot".into()),
            caption: "a bottle".into(),
            labels: vec![("bottle".into(), 0.5)],
            ocr_text: None,
            image_model: "img".into(),
            image_vector: vec![0.6, 0.8],
            text_model: "txt".into(),
            text_vector: vec![1.0],
        })),
        JobResult::DesignTemplate(Box::new(template.clone())),
        JobResult::FigmaSync(Box::new(FigmaSyncResult::ImageAd {
            synced: synced.clone(),
            rendered: Some(ad),
        })),
        JobResult::FigmaSync(Box::new(FigmaSyncResult::ImageAd {
            synced: FigmaSynced {
                unchanged: true,
                ..synced.clone()
            },
            rendered: None,
        })),
        JobResult::FigmaSync(Box::new(FigmaSyncResult::DesignTemplate {
            synced,
            rendered: Some(Box::new(template)),
        })),
    ]
}

#[test]
fn every_kind_of_result_round_trips_tagged_by_its_kind() {
    let kinds: Vec<String> = one_of_each_result()
        .into_iter()
        .map(|result| {
            let event = Event::Completed(AdCompleted {
                ad_id: "ia_1".into(),
                version: 1,
                duration_ms: 5,
                result,
            });
            let json = event.encode();
            assert_eq!(Event::decode(&json).unwrap(), event, "{json}");
            let value: Value = serde_json::from_str(&json).unwrap();
            let result = &value["result"];
            format!(
                "{}{}",
                result["kind"].as_str().unwrap(),
                result["target"]
                    .as_str()
                    .map(|t| format!("/{t}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "image_ad",
            "swipe_file",
            "design_template",
            "figma_sync/image_ad",
            "figma_sync/image_ad",
            "figma_sync/design_template"
        ]
    );
}

#[test]
fn a_completed_event_of_protocol_1_is_not_read_as_a_result() {
    // Protocol 1's shape: the result's fields beside the subject, no `result`.
    let old = r#"{"type":"completed","v":1,"ad_id":"ia_1","version":1,"image_url":"u","width":1,"height":1,"duration_ms":1}"#;
    assert!(matches!(Event::decode(old), Err(Error::Decode { .. })));
}

#[test]
fn events_round_trip_with_version() {
    let event = Event::Failed(AdFailed {
        subject: SubjectKind::ImageAd,
        ad_id: "ia_1".into(),
        version: 1,
        code: "PIPELINE_ERROR".into(),
        message: "boom".into(),
    });
    let json = event.encode();
    let v = format!("\"v\":{PROTOCOL_VERSION}");
    assert!(json.contains(&v), "{json}");
    assert_eq!(Event::decode(&json).unwrap(), event);
    let newer = json.replace(&v, "\"v\":99");
    assert!(matches!(
        Event::decode(&newer),
        Err(Error::UnsupportedVersion { .. })
    ));
}

fn brief() -> AdBrief {
    AdBrief {
        prompt: Some("summer".into()),
        brand: Brand {
            id: "br_1".into(),
            name: "Acme".into(),
            color_palettes: Value::Null,
            fonts: Value::Null,
            logos: vec![Logo {
                url: "https://cdn.example.com/logo.png".into(),
                theme: None,
            }],
            details: Value::Null,
        },
        product: Product {
            id: "prod_1".into(),
            name: "Skates".into(),
            description: None,
            details: serde_json::json!({"benefits": ["fast"]}),
        },
        audience: Audience {
            id: "aud_1".into(),
            name: "Coyotes".into(),
            description: None,
            details: Value::Null,
        },
        variant_image_urls: vec!["https://cdn.example.com/v.png".into()],
        variant: None,
        created_at: Some("2026-11-28T00:00:00.000Z".into()),
    }
}

#[test]
fn an_ad_job_carries_its_brief_flat_on_the_wire_as_before_the_brief_was_a_type() {
    let job = Job::GenerateImageAd(GenerateAdJob {
        ad_id: "ia_1".into(),
        org_id: "org_1".into(),
        version: 1,
        editable: true,
        reference_ad_url: "https://cdn.example.com/ref.png".into(),
        brief: brief(),
        template: None,
        size: None,
    });
    let env = JobEnvelope::new(job);
    let value: Value = serde_json::from_str(&env.encode()).unwrap();
    let wire = &value["job"];
    assert!(wire.get("brief").is_none(), "{wire}");
    assert_eq!(wire["brand"]["id"], "br_1");
    assert_eq!(wire["prompt"], "summer");
    assert_eq!(wire["created_at"], "2026-11-28T00:00:00.000Z");
    assert_eq!(decode_envelope(&env.encode()).unwrap(), env);

    // A job written when the brief's fields were the job's own (no `variant`, fields in
    // their old order, one added by a newer writer) reads into the same brief.
    let old = r#"{"type":"generate_image_ad","ad_id":"ia_1","org_id":"org_1","version":1,
        "editable":true,"reference_ad_url":"https://cdn.example.com/ref.png","prompt":"summer",
        "brand":{"id":"br_1","name":"Acme","color_palettes":null,"fonts":null,
          "logos":[{"url":"https://cdn.example.com/logo.png","theme":null}]},
        "product":{"id":"prod_1","name":"Skates","description":null,"details":{"benefits":["fast"]}},
        "audience":{"id":"aud_1","name":"Coyotes","description":null,"details":null},
        "variant_image_urls":["https://cdn.example.com/v.png"],
        "created_at":"2026-11-28T00:00:00.000Z","added_later":1}"#;
    let Job::GenerateImageAd(read) = serde_json::from_str::<Job>(old).unwrap() else {
        panic!("not an ad job");
    };
    assert_eq!(read.brief, brief());
    assert_eq!(read.brand.name, "Acme", "the job reads its brief's fields");
}

#[test]
fn a_figma_sync_fills_slots_from_the_same_brief_an_ad_job_carries() {
    let sync = FigmaSyncJob {
        subject_id: "ia_2".into(),
        org_id: "org_1".into(),
        version: 3,
        target: FigmaTarget::ImageAd,
        api_url: "https://api.figma.com".into(),
        file_key: "k".into(),
        node_id: "1:2".into(),
        token_sealed: "sealed".into(),
        previous: None,
        fill_slots: true,
        brief: Some(Box::new(brief())),
    };
    let inputs = sync.ad_inputs().unwrap();
    assert_eq!(inputs.brief, brief());
    assert_eq!((inputs.ad_id.as_str(), inputs.version), ("ia_2", 3));
    let wire: Value = serde_json::to_value(Job::SyncFigma(sync)).unwrap();
    assert_eq!(
        serde_json::from_value::<AdBrief>(wire["brief"].clone()).unwrap(),
        brief()
    );
}
