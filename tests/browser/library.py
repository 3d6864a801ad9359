"""The swipe file and design packs in a real browser (issue 13), called by dashboard_test.py
after its other parts, against the same server (which ingests with the real models from
~/.cache/adforge/models; run scripts/fetch-models first).

A member uploads two references at once through the page's script (per-file requests with a
progress bar), finds one by text and the other by "more like this", adds both to a new pack
from the grid's checkboxes (the pack says who made it), and screenshots of the swipe file,
packs, templates and brands pages are saved at desktop and phone width; the template is
opened in the visual editor and saved as version 2 (editor.run_template_editor).
"""

import json
import os
import struct
import urllib.request

import editor  # the template editor part (tests/browser/editor.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "assets", "samples")


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24])


def card_ids(page):
    return page.eval_on_selector_all("li.design", "els => els.map(e => e.id)")


def wait_all_ready(page, url, n):
    """Reloads until n designs show and none is processing (the page also refreshes itself)."""
    for _ in range(300):
        page.goto(url)
        ids = card_ids(page)
        if len(ids) == n and "Processing" not in page.inner_text("ul.designs"):
            return ids
        page.wait_for_timeout(500)
    raise AssertionError("designs never became ready: " + page.inner_text("main"))


def run_library(base, data_dir, org, admin, shoot, browser, password):
    lee = admin(data_dir, "member", "add", "--org", org, "--email", "lee@acme.test",
                "--name", "Lee Library", "--role", "member", "--public-url", base)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    sign_in(page, lee["sign_in_link"], password)
    coffee = os.path.join(SAMPLES, "coffee.png")
    cat = os.path.join(SAMPLES, "chelsea.png")
    coffee_size = "%d×%d" % png_size(coffee)
    cat_size = "%d×%d" % png_size(cat)

    # Upload both at once: the script sends one request per file and reloads the grid.
    page.goto(base + "/dashboard/swipe")
    assert page.locator("script[src='/dashboard/assets/dashboard.js']").count() == 1
    page.get_by_label("Images (PNG, JPEG or WebP; choose or drop several)").set_input_files([coffee, cat])
    page.get_by_role("button", name="Upload", exact=True).click()
    page.wait_for_url(base + "/dashboard/swipe?uploaded=2")
    assert "2 designs uploaded" in page.inner_text("main")
    ids = wait_all_ready(page, base + "/dashboard/swipe", 2)
    shoot(page, "swipe")

    # Each design's checkbox has its own screen-reader name (two designs may share a label).
    names = page.eval_on_selector_all("label.pick .sr-only", "els => els.map(e => e.textContent)")
    assert len(set(names)) == len(names) == 2, names
    assert all(any(i in n for n in names) for i in ids), (names, ids)

    # The facets sit in a <details>: shown on a desktop, folded on a phone until opened.
    facet = page.locator("fieldset.facet").first
    assert facet.is_visible()
    page.set_viewport_size({"width": 390, "height": 900})
    assert not facet.is_visible()
    page.locator("details.facets-toggle > summary").click()
    assert facet.is_visible()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(base + "/dashboard/swipe")

    # One by text: "coffee" ranks the coffee picture first.
    page.get_by_label("Search by words").fill("coffee")
    page.get_by_role("button", name="Search", exact=True).click()
    page.wait_for_url(lambda u: "q=coffee" in u)
    first = page.locator("li.design").first
    assert coffee_size in first.inner_text(), first.inner_text()
    coffee_id = first.get_attribute("id")
    shoot(page, "swipe-search")

    # The other by "more like this" on the coffee design: the cat, and not itself.
    first.get_by_role("link", name="More like this").click()
    page.wait_for_url(lambda u: "like=" + coffee_id in u)
    like = card_ids(page)
    assert coffee_id not in like and len(like) == 1, like
    assert cat_size in page.locator("li.design").first.inner_text()
    cat_id = like[0]
    assert sorted([coffee_id, cat_id]) == sorted(ids)

    # Both into a new pack from the grid's checkboxes.
    page.goto(base + "/dashboard/swipe")
    for i in (coffee_id, cat_id):
        page.locator(f"li#{i}").get_by_label("Select", exact=False).check()
    page.get_by_label("or a new pack named").fill("Cafe launch")
    page.get_by_role("button", name="Add to pack").click()
    page.wait_for_url(base + "/dashboard/packs/dp_*")
    assert sorted(card_ids(page)) == sorted(ids), card_ids(page)
    assert "Created by Lee Library" in page.inner_text("main")
    shoot(page, "pack")
    page.goto(base + "/dashboard/packs")
    assert "Cafe launch" in page.inner_text("ul.packs")
    assert "2 designs" in page.inner_text("ul.packs")
    shoot(page, "packs")

    # A template from the coffee design, followed until its analysis completes.
    page.goto(base + "/dashboard/swipe")
    page.locator(f"li#{coffee_id}").get_by_role("link", name="Make a template").click()
    assert page.input_value("#t-sf") == coffee_id
    page.get_by_role("button", name="Create template").click()
    page.wait_for_url(base + "/dashboard/templates/dt_*")
    page.locator("#t-status", has_text="completed").wait_for(timeout=180_000)
    assert coffee_id in page.inner_text("main")
    shoot(page, "template")
    editor.run_template_editor(page, base)
    page.goto(base + "/dashboard/templates")
    shoot(page, "templates")

    # The catalogue: a brand made with the API, edited here.
    key = admin(data_dir, "key", "create", "--org", org, "--scopes", "all")["key"]
    brand = api(base, key, "POST", "/v1/brands", {
        "name": "Northwind Coffee",
        "color_palettes": {"primary": ["#3B2314", "#C8A27A"], "accent": ["#F2E8DC"]},
        "fonts": [{"name": "Inter", "role": "heading"}]})["data"]["id"]
    api(base, key, "POST", "/v1/products", {"brand_id": brand, "name": "House Espresso"})
    page.goto(base + "/dashboard/brands")
    page.get_by_role("link", name="Edit Northwind Coffee").click()
    page.get_by_label("Fonts").fill("Inter (heading)\nSource Serif 4 (body)")
    page.get_by_role("button", name="Save brand").click()
    page.wait_for_url(base + f"/dashboard/brands/{brand}")
    fonts = api(base, key, "GET", f"/v1/brands/{brand}")["data"]["fonts"]
    assert fonts == [{"name": "Inter", "role": "heading"},
                     {"name": "Source Serif 4", "role": "body"}], fonts
    page.get_by_label("Add a logo (PNG, JPEG or WebP)").set_input_files(coffee)
    page.get_by_role("button", name="Upload logo").click()
    page.wait_for_url(base + f"/dashboard/brands/{brand}")
    assert page.locator("ul.logos img").count() == 1
    shoot(page, "brand")
    page.goto(base + "/dashboard/brands")
    shoot(page, "brands")
    ctx.close()


def api(base, key, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def sign_in(page, link, password):
    page.goto(link)
    page.get_by_label("New password").fill(password)
    page.get_by_label("Repeat the password").fill(password)
    page.get_by_role("button", name="Set password and sign in").click()
    page.wait_for_url(lambda u: "/dashboard/" in u and "sign-in" not in u)
