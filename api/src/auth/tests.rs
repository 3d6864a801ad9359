//! Unit tests of the parent module.

use super::*;

#[test]
fn grants_parse_and_store() {
    assert_eq!(Grants::parse_list("all"), Ok(Grants::All));
    let g = Grants::parse_list("brands:read, products:write").unwrap();
    assert!(g.allows(Scope::BrandsRead) && !g.allows(Scope::BrandsWrite));
    assert_eq!(Grants::from_stored(&g.to_stored()), g);
    assert_eq!(Grants::from_stored(&Grants::All.to_stored()), Grants::All);
    assert!(Grants::parse_list("brands:nope").is_err());
    assert!(Grants::parse_list("").is_err());
    for s in Scope::ALL {
        assert_eq!(Scope::parse(s.name()), Some(s));
        assert_eq!(serde_json::to_value(s).unwrap(), s.name());
    }
}

/// The README's scope list is `Scope::markdown_list()`; `UPDATE_DOCS=1` rewrites it.
/// The OpenAPI description names every scope too.
#[test]
fn readme_lists_every_scope() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (open, close) = ("<!-- scopes -->", "<!-- /scopes -->");
    let start = readme.find(open).expect("README has <!-- scopes -->") + open.len();
    let end = readme.find(close).expect("README has <!-- /scopes -->");
    let want = Scope::markdown_list();
    if readme[start..end] != want {
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{want}{}", &readme[..start], &readme[end..]);
            std::fs::write(&path, updated).unwrap();
        } else {
            panic!(
                "README's scope list differs from the Scope enum; run with UPDATE_DOCS=1.\nREADME: {}\nenum:   {want}",
                &readme[start..end]
            );
        }
    }
    let description = crate::openapi::description();
    for s in Scope::ALL {
        assert!(
            description.contains(&format!("`{}`", s.name())),
            "the OpenAPI description does not name `{}`",
            s.name()
        );
    }
}

#[test]
fn key_hash_is_lowercase_hex_sha256() {
    assert_eq!(
        hash_key("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(hex(&key_digest("abc")), hash_key("abc"));
}
