//! How a design is classified, from measured evidence only.
//!
//! **Aspect ratio**: the nearest (in log ratio) of 1:1, 4:5, 9:16, 1.91:1, 16:9, 2:3, 3:4.
//!
//! **Industry**: the top level of the Google product taxonomy, as snake_case values
//! ([`INDUSTRIES`] lists each with the taxonomy's own name). Evidence: the five most
//! probable ImageNet labels, each voting its probability for the category its label belongs
//! to (ImageNet classes 0-396 are animals → `animals_pet_supplies`; 923-969 are dishes, fruit
//! and drinks → `food_beverages_tobacco`; other classes by the table in [`label_industry`]),
//! plus 0.3 per OCR word from a category's keyword list. The best category wins when its score
//! is at least 0.2; otherwise industry stays null.
//!
//! **Ad format**: [`AD_FORMATS`]. Words decide first (OCR: "% off", "sale" → offer_sale;
//! "before" and "after" → before_after; "vs" → comparison; "review", "stars", "customers" →
//! testimonial; "new", "introducing", "launch" → announcement; three or more numbered lines
//! → listicle; a figure with %, x or "million" → statistic). Without deciding words, the
//! picture decides: a confident object label (≥ 0.25) on a plain background → product_shot;
//! a scene, place or person label → lifestyle; a page-like label (website, menu, comic book,
//! crossword) with words read → text_only. Anything else leaves ad_format null.

/// The common ad ratios and their width/height.
pub const ASPECT_RATIOS: [(&str, f64); 7] = [
    ("1:1", 1.0),
    ("4:5", 0.8),
    ("9:16", 9.0 / 16.0),
    ("1.91:1", 1.91),
    ("16:9", 16.0 / 9.0),
    ("2:3", 2.0 / 3.0),
    ("3:4", 0.75),
];

/// Industry values and the Google product taxonomy's top-level names.
pub const INDUSTRIES: [(&str, &str); 16] = [
    ("animals_pet_supplies", "Animals & Pet Supplies"),
    ("apparel_accessories", "Apparel & Accessories"),
    ("arts_entertainment", "Arts & Entertainment"),
    ("baby_toddler", "Baby & Toddler"),
    ("cameras_optics", "Cameras & Optics"),
    ("electronics", "Electronics"),
    ("food_beverages_tobacco", "Food, Beverages & Tobacco"),
    ("furniture", "Furniture"),
    ("hardware", "Hardware"),
    ("health_beauty", "Health & Beauty"),
    ("home_garden", "Home & Garden"),
    ("luggage_bags", "Luggage & Bags"),
    ("office_supplies", "Office Supplies"),
    ("sporting_goods", "Sporting Goods"),
    ("toys_games", "Toys & Games"),
    ("vehicles_parts", "Vehicles & Parts"),
];

/// Ad format values and their display names.
pub const AD_FORMATS: [(&str, &str); 10] = [
    ("product_shot", "Product shot"),
    ("lifestyle", "Lifestyle"),
    ("offer_sale", "Offer / sale"),
    ("testimonial", "Testimonial / review"),
    ("before_after", "Before and after"),
    ("comparison", "Comparison"),
    ("listicle", "Listicle"),
    ("statistic", "Statistic"),
    ("text_only", "Text only"),
    ("announcement", "Announcement"),
];

/// The display name of an industry value (the value itself when unknown).
pub fn industry_name(v: &str) -> &str {
    INDUSTRIES
        .iter()
        .find(|(k, _)| *k == v)
        .map_or(v, |(_, n)| n)
}

/// The display name of an ad format value (the value itself when unknown).
pub fn ad_format_name(v: &str) -> &str {
    AD_FORMATS
        .iter()
        .find(|(k, _)| *k == v)
        .map_or(v, |(_, n)| n)
}

/// The nearest common ad ratio.
pub fn aspect_ratio(width: u32, height: u32) -> &'static str {
    let r = (f64::from(width.max(1)) / f64::from(height.max(1))).ln();
    ASPECT_RATIOS
        .iter()
        .min_by(|a, b| {
            (a.1.ln() - r)
                .abs()
                .partial_cmp(&(b.1.ln() - r).abs())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map_or("1:1", |(n, _)| n)
}

/// ImageNet class names (as in the models' labels.txt) by category, beyond the index ranges.
const LABEL_TABLE: &[(&str, &[&str])] = &[
    (
        "food_beverages_tobacco",
        &[
            "beer bottle",
            "beer glass",
            "coffee mug",
            "coffeepot",
            "espresso machine",
            "wine bottle",
            "whiskey jug",
            "soda bottle",
            "water bottle",
            "cocktail shaker",
            "goblet",
            "tea cup",
            "teapot",
            "bakery",
            "butcher shop",
            "candy store",
            "grocery store",
            "restaurant",
            "tobacco shop",
            "drink pitcher",
            "menu",
            "frying pan",
            "wok",
            "Dutch oven",
            "mixing bowl",
            "soup bowl",
            "plate",
        ],
    ),
    (
        "apparel_accessories",
        &[
            "abaya",
            "academic gown",
            "apron",
            "bikini",
            "bow tie",
            "bra",
            "cardigan",
            "cowboy boot",
            "cowboy hat",
            "fur coat",
            "gown",
            "jeans",
            "T-shirt",
            "kimono",
            "miniskirt",
            "one-piece bathing suit",
            "pajamas",
            "poncho",
            "sandal",
            "sarong",
            "sneaker",
            "sock",
            "sombrero",
            "stole scarf",
            "suit",
            "sunglasses",
            "sweatshirt",
            "swim trunks / shorts",
            "trench coat",
            "Windsor tie",
            "clogs",
            "slip-on shoe",
            "necklace",
            "digital watch",
            "wallet",
            "purse",
            "hair clip",
            "mitten",
            "shoe store",
            "hoop skirt",
            "overskirt",
            "cloak",
            "velvet fabric",
            "wool",
            "bolo tie",
            "feather boa",
            "balaclava ski mask",
        ],
    ),
    (
        "health_beauty",
        &[
            "lipstick",
            "lotion",
            "perfume",
            "face powder",
            "hair spray",
            "sunscreen",
            "soap dispenser",
            "pill bottle",
            "Band-Aid",
            "hair dryer",
            "syringe",
            "stethoscope",
            "hair wig",
            "medicine cabinet",
            "shower cap",
            "bath towel",
        ],
    ),
    (
        "electronics",
        &[
            "laptop computer",
            "notebook computer",
            "desktop computer",
            "computer keyboard",
            "computer mouse",
            "mobile phone",
            "iPod",
            "monitor",
            "television",
            "music speaker",
            "microphone",
            "modem",
            "hard disk drive",
            "hand-held computer",
            "joystick",
            "remote control",
            "radio",
            "CD player",
            "cassette player",
            "tape player",
            "home theater",
            "projector",
            "printer",
            "CRT monitor",
            "website",
            "electric fan",
            "space heater",
            "microwave oven",
            "refrigerator",
            "washing machine",
            "dishwasher",
            "toaster",
            "vacuum cleaner",
            "digital clock",
        ],
    ),
    (
        "cameras_optics",
        &[
            "reflex camera",
            "Polaroid camera",
            "binoculars",
            "lens cap",
            "tripod",
            "loupe magnifying glass",
        ],
    ),
    (
        "home_garden",
        &[
            "candle",
            "lampshade",
            "table lamp",
            "pillow",
            "quilt",
            "vase",
            "plant pot",
            "doormat",
            "shower curtain",
            "window shade",
            "bathtub",
            "sink",
            "toilet seat",
            "lawn mower",
            "patio",
            "greenhouse",
            "wall clock",
            "analog clock",
            "paper towel",
            "toilet paper",
            "broom",
            "mop",
            "bucket",
            "dishcloth",
            "waffle iron",
            "Crock Pot",
            "strainer",
            "wooden spoon",
            "spatula",
            "ladle",
            "tray",
            "hamper",
            "plate rack",
        ],
    ),
    (
        "furniture",
        &[
            "couch",
            "rocking chair",
            "folding chair",
            "dining table",
            "desk",
            "bookcase",
            "wardrobe",
            "chiffonier",
            "china cabinet",
            "four-poster bed",
            "infant bed",
            "cradle",
            "park bench",
            "storage chest",
            "filing cabinet",
            "entertainment center (furniture)",
            "barber chair",
            "throne",
        ],
    ),
    (
        "sporting_goods",
        &[
            "barbell",
            "dumbbell",
            "basketball",
            "baseball",
            "golf ball",
            "soccer ball",
            "tennis ball",
            "volleyball ball",
            "rugby ball",
            "ping-pong ball",
            "racket",
            "ski",
            "snorkel",
            "mountain bike",
            "tandem bicycle",
            "punching bag",
            "sleeping bag",
            "tent",
            "paddle",
            "kayak",
            "football helmet",
            "crash helmet",
            "knee pad",
            "balance beam",
            "parallel bars",
            "gymnastic horizontal bar",
            "hockey puck",
            "croquet ball",
            "swimming cap",
            "fishing casting reel",
            "hunting bow",
            "tights for gymnastics, a one-piece leotard, or a sport jersey",
        ],
    ),
    (
        "toys_games",
        &[
            "teddy bear",
            "jigsaw puzzle",
            "toy store",
            "pinwheel",
            "piggy bank",
            "crossword",
            "slot machine",
            "carousel",
            "balloon",
        ],
    ),
    (
        "vehicles_parts",
        &[
            "sports car",
            "convertible",
            "race car",
            "jeep",
            "limousine",
            "minivan",
            "pickup truck",
            "station wagon",
            "taxicab",
            "car wheel",
            "car mirror",
            "disc brake",
            "radiator grille",
            "oil filter",
            "gas pump",
            "motor scooter",
            "moped",
            "go-kart",
            "golf cart",
            "recreational vehicle",
            "tow truck",
            "tractor",
            "ford model t",
            "seat belt",
            "odometer",
            "speedboat",
            "motorboat",
        ],
    ),
    (
        "luggage_bags",
        &[
            "backpack",
            "messenger bag",
            "plastic bag",
            "shopping basket",
        ],
    ),
    (
        "baby_toddler",
        &[
            "baby bib",
            "baby pacifier",
            "bassinet",
            "diaper",
            "crib",
            "stroller",
        ],
    ),
    (
        "office_supplies",
        &[
            "ballpoint pen",
            "fountain pen",
            "ring binder",
            "envelope",
            "pencil case",
            "pencil sharpener",
            "eraser",
            "ruler measuring stick",
            "notebook",
            "quill",
            "paper knife",
            "letter opener",
            "photocopier",
        ],
    ),
    (
        "hardware",
        &[
            "hammer",
            "screwdriver",
            "power drill",
            "chainsaw",
            "hatchet",
            "tool kit",
            "screw",
            "metal nail",
            "padlock",
            "combination lock",
            "shovel",
            "plunger",
            "block plane",
            "chain",
        ],
    ),
    (
        "arts_entertainment",
        &[
            "acoustic guitar",
            "electric guitar",
            "grand piano",
            "upright piano",
            "violin",
            "cello",
            "banjo",
            "drum",
            "harmonica",
            "saxophone",
            "trombone",
            "accordion",
            "flute",
            "harp",
            "comic book",
            "dust jacket",
            "movie theater",
            "stage",
            "paintbrush",
        ],
    ),
];

/// OCR keywords per category (lower case, whole words).
const WORD_TABLE: &[(&str, &[&str])] = &[
    (
        "food_beverages_tobacco",
        &[
            "coffee",
            "espresso",
            "latte",
            "tea",
            "pizza",
            "burger",
            "snack",
            "recipe",
            "organic",
            "drink",
            "beer",
            "wine",
            "juice",
            "protein",
            "chocolate",
            "delicious",
            "taste",
            "menu",
            "bakery",
        ],
    ),
    (
        "apparel_accessories",
        &[
            "dress",
            "shirt",
            "jeans",
            "sneakers",
            "shoes",
            "fashion",
            "wear",
            "jacket",
            "collection",
            "outfit",
            "watch",
            "jewelry",
        ],
    ),
    (
        "health_beauty",
        &[
            "skin",
            "skincare",
            "serum",
            "beauty",
            "hair",
            "vitamin",
            "vitamins",
            "supplement",
            "glow",
            "makeup",
            "lipstick",
            "wellness",
            "health",
        ],
    ),
    (
        "electronics",
        &[
            "app",
            "phone",
            "laptop",
            "headphones",
            "wireless",
            "battery",
            "smart",
            "download",
            "software",
        ],
    ),
    (
        "home_garden",
        &[
            "home", "kitchen", "garden", "sofa", "bedding", "candle", "decor",
        ],
    ),
    (
        "sporting_goods",
        &[
            "fitness", "workout", "gym", "run", "running", "training", "yoga", "bike",
        ],
    ),
    (
        "toys_games",
        &["toy", "toys", "game", "games", "kids", "play"],
    ),
    (
        "vehicles_parts",
        &["car", "cars", "drive", "ev", "tires", "auto"],
    ),
    (
        "animals_pet_supplies",
        &[
            "pet", "pets", "dog", "dogs", "cat", "cats", "puppy", "kitten",
        ],
    ),
];

/// Labels that show a scene, a place or people: lifestyle evidence.
const SCENE_LABELS: &[&str] = &[
    "restaurant",
    "patio",
    "beach",
    "lakeshore",
    "seashore",
    "valley",
    "mountain",
    "cliff",
    "promontory",
    "sandbar",
    "coral reef",
    "volcano",
    "geyser",
    "bakery",
    "grocery store",
    "shoe store",
    "toy store",
    "library",
    "bookstore",
    "barbershop",
    "movie theater",
    "stage",
    "dock",
    "boathouse",
    "park bench",
    "swing",
    "baseball player",
    "bridegroom",
    "scuba diver",
    "dining table",
    "home theater",
    "church",
    "palace",
    "castle",
];

/// Labels of pages and printed matter: text-only evidence when words were read.
const PAGE_LABELS: &[&str] = &[
    "website",
    "menu",
    "comic book",
    "crossword",
    "envelope",
    "dust jacket",
    "traffic or street sign",
    "scoreboard",
    "brass memorial plaque",
];

/// The category of an ImageNet label (by its index in labels.txt and its name).
pub fn label_industry(index: Option<usize>, name: &str) -> Option<&'static str> {
    if let Some(i) = index {
        if i <= 396 {
            return Some("animals_pet_supplies");
        }
        if (923..=969).contains(&i) {
            return Some("food_beverages_tobacco");
        }
    }
    LABEL_TABLE
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map(|(cat, _)| *cat)
}

/// Lower-case words of OCR text.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '%')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The industry from labels (with probabilities and label indices) and OCR words.
pub fn industry(labels: &[(String, f32, Option<usize>)], words: &[String]) -> Option<&'static str> {
    let mut scores: Vec<(&'static str, f32)> = Vec::new();
    let mut add = |cat: &'static str, s: f32| match scores.iter_mut().find(|(c, _)| *c == cat) {
        Some((_, v)) => *v += s,
        None => scores.push((cat, s)),
    };
    for (name, p, index) in labels.iter().take(5) {
        if let Some(cat) = label_industry(*index, name) {
            add(cat, *p);
        }
    }
    for w in words {
        for (cat, keys) in WORD_TABLE {
            if keys.contains(&w.as_str()) {
                add(cat, 0.3);
            }
        }
    }
    scores.sort_by(|a, b| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.cmp(b.0))
    });
    scores.first().filter(|(_, s)| *s >= 0.2).map(|(c, _)| *c)
}

/// The ad format from OCR text, labels and whether the background is plain.
pub fn ad_format(
    ocr: Option<&str>,
    labels: &[(String, f32, Option<usize>)],
    plain_background: bool,
) -> Option<&'static str> {
    let text = ocr.unwrap_or("").to_lowercase();
    let ws = words(&text);
    let has = |w: &str| ws.iter().any(|x| x == w);
    if text.contains('%') && (has("off") || has("sale") || has("save"))
        || has("sale")
        || has("discount")
        || has("coupon")
        || has("deal")
        || has("deals")
        || text.contains("free shipping")
    {
        return Some("offer_sale");
    }
    if has("before") && has("after") {
        return Some("before_after");
    }
    if has("vs") || has("versus") || text.contains("compared to") {
        return Some("comparison");
    }
    if has("review")
        || has("reviews")
        || has("stars")
        || has("customers")
        || text.contains('★')
        || text.contains('“')
    {
        return Some("testimonial");
    }
    if has("introducing")
        || has("new")
        || has("launch")
        || has("launching")
        || text.contains("now available")
        || text.contains("coming soon")
    {
        return Some("announcement");
    }
    let numbered = text
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            let digits = l.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && l[digits..].starts_with(['.', ')'])
        })
        .count();
    if numbered >= 3 {
        return Some("listicle");
    }
    if ws.iter().any(|w| {
        w.ends_with('%') && w.len() > 1
            || (w.ends_with('x')
                && w[..w.len() - 1].chars().all(|c| c.is_ascii_digit())
                && w.len() > 1)
    }) || has("million")
        || has("billion")
    {
        return Some("statistic");
    }
    let top = labels.first()?;
    if PAGE_LABELS.contains(&top.0.as_str()) && ws.len() >= 4 {
        return Some("text_only");
    }
    if labels.iter().take(3).any(|(n, p, i)| {
        *p >= 0.15
            && (SCENE_LABELS.contains(&n.as_str()) || i.is_some_and(|i| (970..=979).contains(&i)))
    }) {
        return Some("lifestyle");
    }
    if top.1 >= 0.25 && plain_background && !PAGE_LABELS.contains(&top.0.as_str()) {
        return Some("product_shot");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aspect_ratios_snap_to_the_nearest() {
        assert_eq!(aspect_ratio(1080, 1080), "1:1");
        assert_eq!(aspect_ratio(1080, 1350), "4:5");
        assert_eq!(aspect_ratio(1080, 1920), "9:16");
        assert_eq!(aspect_ratio(1200, 628), "1.91:1");
        assert_eq!(aspect_ratio(1920, 1080), "16:9");
        assert_eq!(aspect_ratio(1000, 1500), "2:3");
        assert_eq!(aspect_ratio(900, 1200), "3:4");
    }

    #[test]
    fn formats_follow_the_words_first() {
        let labels = vec![("espresso".to_string(), 0.6, Some(967))];
        assert_eq!(
            ad_format(Some("SUMMER SALE 30% OFF"), &labels, true),
            Some("offer_sale")
        );
        assert_eq!(
            ad_format(Some("Before and after 4 weeks"), &labels, true),
            Some("before_after")
        );
        assert_eq!(ad_format(None, &labels, true), Some("product_shot"));
        assert_eq!(ad_format(None, &labels, false), None);
        assert_eq!(industry(&labels, &[]), Some("food_beverages_tobacco"));
        assert_eq!(industry(&[("missile".into(), 0.5, Some(657))], &[]), None);
    }
}
