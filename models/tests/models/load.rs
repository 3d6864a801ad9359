//! `Models::load` with the real weights: the default wiring the swipe file starts with.

use adforge_models::{Models, default_models_dir};

use crate::support::sample;

#[test]
fn default_models_are_efficientnet_for_images_and_minilm_for_texts() {
    let models = Models::load(&default_models_dir())
        .unwrap_or_else(|e| panic!("{e}\n(the models folder is filled by `scripts/fetch-models`)"));
    assert_eq!(models.image.model_id(), "efficientnet-lite0-imagenet1k");
    assert_eq!(models.image.dim(), 1280);
    assert_eq!(models.text.model_id(), "all-minilm-l6-v2");
    assert_eq!(models.text.dim(), 384);
    assert_eq!(models.efficientnet.labels().len(), 1000);
    let labels = models
        .classifier
        .classify(&sample("coffee.png"), 5)
        .unwrap();
    assert_eq!(labels.len(), 5);
    assert_eq!(labels[0].0, "espresso", "{labels:?}");
    assert_eq!(
        models.text.embed_texts(&["espresso"]).unwrap()[0].len(),
        384
    );
}
