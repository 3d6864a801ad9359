"""The visual editor (issue 23) in a real browser, called by dashboard_test.py against the
same server: an editable ad made through the API from a real reference design is opened in
the editor and changed by pointer and by keyboard; every change is checked in the tree the
editor holds, and the saved version is checked through the API and in its PNG.

- drag the headline 100 px right: the tree moves it by 100 px ÷ the picture's scale;
- undo restores the tree byte for byte, redo brings the move back;
- resize the product image by its corner with Shift: its ratio is kept;
- retype the call to action in place: the preview changes;
- keyboard only: Tab to the headline and nudge it with the arrow keys;
- the brand's palette is offered first; an image slot swaps to another product image;
- hide and lock from the layer list, add a text and delete it, all undone;
- leaving with unsaved changes asks first; Save makes version n+1 with a change summary,
  and its PNG is the picture the editor showed;
- in an auto-layout frame (stacked through the API), dragging reorders;
- axe-core finds no serious or critical violation, at 1280 and at 390 px;
- screenshots at both widths go to target/screenshots/ (copied into docs/dashboard/).

Prints the change → new picture on screen time (p50, p90; not asserted).
"""

import json
import math
import os
import statistics
import time
import urllib.request

import a11y

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(ROOT, "assets", "swipe-default", "37-centered_product-4x5.png")
SHOTS = os.path.join(ROOT, "target", "screenshots")


def api(base, key, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def upload(base, key, data, image_type, name="x.png"):
    boundary = "adforgeeditorboundary"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="image_type"\r\n\r\n{image_type}\r\n'.encode(),
             f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
             'Content-Type: image/png\r\n\r\n'.encode() + data + b"\r\n",
             f"--{boundary}--\r\n".encode()]
    req = urllib.request.Request(base + "/v1/images", data=b"".join(parts), method="POST",
                                 headers={"X-API-Key": key,
                                          "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())["data"]


def until(what, check, seconds=240, every=0.02):
    """A deadline only a hang reaches; not a timing assertion."""
    end = time.time() + seconds
    while True:
        v = check()
        if v:
            return v
        if time.time() > end:
            raise AssertionError("never happened: " + what)
        time.sleep(every)


def make_ad(base, key, png):
    """Brand (palette, fonts), product with two photos, audience; an editable ad of them."""
    brand = api(base, key, "POST", "/v1/brands", {
        "name": "Skyward", "color_palettes": {"primary": ["#0B3D2E", "#F2A541"], "accent": ["#E4572E"]},
        "fonts": [{"name": "Lato", "role": "heading"}]})["data"]["id"]
    product = api(base, key, "POST", "/v1/products", {"brand_id": brand, "name": "Dish Kit"})["data"]["id"]
    variant = api(base, key, "POST", "/v1/product-variants", {"product_id": product, "name": "Standard"})["data"]["id"]
    audience = api(base, key, "POST", "/v1/audiences", {"product_id": product, "name": "Remote teams"})["data"]["id"]
    first = upload(base, key, png(96, 64, (40, 90, 160)), "product")
    second = upload(base, key, png(64, 96, (230, 160, 40)), "product")
    api(base, key, "PATCH", f"/v1/product-variants/{variant}", {"image_ids": [first["id"], second["id"]]})
    with open(REFERENCE, "rb") as f:
        reference = upload(base, key, f.read(), "other", "reference.png")["src"]
    ad = api(base, key, "POST", "/v1/image-ads", {
        "reference_ad_url": reference, "brand_id": brand, "product_id": product,
        "audience_id": audience, "editable": True})["data"]["id"]
    until("the ad completes", lambda: api(base, key, "GET", f"/v1/image-ads/{ad}")["data"]["status"] == "completed",
          every=0.5)
    return ad, second


def tree(page):
    return page.input_value("#ed-json")


def doc(page):
    return json.loads(tree(page))


def node_named(d, slot):
    """The node of a slot: generated trees name nodes `Headline`, `Product Image`, `Cta`."""
    key = lambda s: s.strip().lower().replace(" ", "_").replace("-", "_")
    for nid, n in d["nodes"].items():
        if key(n.get("name", "")) == slot or nid == slot:
            return nid, n
    raise AssertionError(f"no {slot} node in {[n.get('name') for n in d['nodes'].values()]}")


def settled(page):
    """Waits until the picture on screen answers the editor's latest request (polled
    from here: Playwright's wait_for_function evaluates a string, which the page's policy
    forbids)."""
    until("the preview of the latest change", lambda: page.evaluate(
        "() => document.getElementById('ed-picture').dataset.seq === document.getElementById('ed-stage').dataset.asked"),
        seconds=60)


def change_ms(page):
    settled(page)
    v = page.get_attribute("#ed-picture", "data-change-ms")
    return int(v) if v is not None else None


def box(page, label):
    el = page.locator(f'#ed-overlay .node[aria-label^="{label},"]')
    assert el.count() == 1, f"{label}: {el.count()} boxes"
    return el, el.bounding_box()


def shoot(page, name, widths=(("desktop", 1280), ("phone", 390))):
    """Screenshots and axe-core at each width, each after the picture has settled."""
    for label, width in widths:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(400)
        settled(page)
        page.screenshot(path=os.path.join(SHOTS, f"{name}-{label}.png"), full_page=True)
        a11y.check(page, f"{name} ({label})")
        narrow = width <= 700
        assert page.is_visible(".ed-narrow-note") == narrow, "a phone is told the editor is read-mostly"
        assert page.is_visible("#ed-add-text") != narrow
        assert page.locator("#ed-selection .handle:visible").count() in ((0,) if narrow else (0, 8))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_timeout(400)
    settled(page)


def run_editor(base, key, browser, sign_in, png):
    ad, other_photo = make_ad(base, key, png)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    sign_in(page)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # The page keeps its policy: anything it blocks is logged to the console.
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(base + f"/dashboard/ads/{ad}")
    page.get_by_role("link", name="Open in the editor").click()
    page.wait_for_url(base + f"/dashboard/ads/{ad}/edit")
    settled(page)
    original = tree(page)
    assert original == json.loads(page.text_content("#ed-data"))["tree"], "the editor starts from the stored tree"
    versions = api(base, key, "GET", f"/v1/image-ads/{ad}/versions")["data"]
    n = versions[-1]["version_number"]
    assert json.loads(original) == versions[-1]["json_tree"]
    scale = float(page.get_attribute("#ed-stage", "data-scale"))
    box(page, "Headline")[0].click()
    assert tree(page) == original, "a click selects, it moves nothing"
    shoot(page, "visual-editor")

    # Drag the headline 100 px right: the tree moves it by 100 px / scale (whole pixels).
    hid, head0 = node_named(doc(page), "headline")
    el, b = box(page, "Headline")
    x, y = b["x"] + b["width"] / 2, b["y"] + b["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 50, y, steps=5)
    page.mouse.move(x + 100, y, steps=5)
    page.mouse.up()
    head1 = doc(page)["nodes"][hid]
    moved = round(100 / scale)
    assert head1["x"] == head0.get("x", 0) + moved, (head0.get("x"), head1["x"], moved, scale)
    assert head1.get("y", 0) == head0.get("y", 0), "a horizontal drag keeps y"
    assert page.inner_text("#ed-sel-name") == "Headline"
    settled(page)

    # Undo: the text the page was loaded with, byte for byte; redo brings the move back.
    page.keyboard.press("Control+z")
    assert tree(page) == original, "undo restores the tree byte for byte"
    assert page.inner_text("#ed-dirty") == "No unsaved changes"
    page.keyboard.press("Control+Shift+z")
    assert doc(page)["nodes"][hid]["x"] == head1["x"]
    settled(page)

    # Resize the product image by its bottom-right corner with Shift: the ratio is kept.
    pid, img0 = node_named(doc(page), "product_image")
    el, b = box(page, "Product image")
    page.mouse.click(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
    handle = page.locator("#ed-selection .h-se").bounding_box()
    hx, hy = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    page.keyboard.down("Shift")
    page.mouse.move(hx, hy)
    page.mouse.down()
    page.mouse.move(hx + 30, hy + 8, steps=4)
    page.mouse.move(hx + 60, hy + 12, steps=4)
    page.mouse.up()
    page.keyboard.up("Shift")
    img1 = doc(page)["nodes"][pid]
    r0, r1 = img0["width"] / img0["height"], img1["width"] / img1["height"]
    assert img1["width"] > img0["width"], (img0, img1)
    assert abs(r1 - r0) / r0 < 0.01, f"ratio {r0:.4f} became {r1:.4f}"
    settled(page)

    # Swap the product image to the variant's other photo (the chooser lists the product's).
    page.get_by_role("button", name=f"Use Product photo {other_photo['id'][-6:]} in Product image").click()
    fills = doc(page)["nodes"][pid]["fills"]
    assert any(p.get("imageFillUrl") == other_photo["src"] for p in fills), fills
    settled(page)

    # Retype the call to action in place (a double click on the button edits its label):
    # the preview changes.
    cid, _ = node_named(doc(page), "cta")
    lid, _ = node_named(doc(page), "cta_label")
    before = page.get_attribute("#ed-picture", "src")
    el, b = box(page, "Button label")
    el.dblclick()
    page.locator("textarea.inplace").wait_for()
    page.keyboard.press("Control+a")
    page.keyboard.type("Book a demo")
    page.keyboard.press("Escape")
    assert doc(page)["nodes"][lid]["characters"] == "Book a demo"
    settled(page)
    assert page.get_attribute("#ed-picture", "src") != before, "the preview follows the new words"

    # The brand's palette first; a swatch colours the selected shape.
    page.keyboard.press("Escape")
    root_layer = page.locator('#ed-layer-list button.layer-name[data-act="select"]').first
    root_layer.click()
    groups = page.locator("#ed-props .swatches").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    assert groups and groups[0].startswith("Brand: primary"), groups
    page.get_by_role("button", name="Brand: primary 2: #F2A541").first.click()
    rid = json.loads(tree(page))["root"]
    assert any(p.get("type") == "SOLID" and abs(p["color"]["r"] - 0xF2 / 255) < 0.002
               for p in doc(page)["nodes"][rid]["fills"]), doc(page)["nodes"][rid]["fills"]
    settled(page)

    # Hide, lock, add a text and delete it: each shows in the tree, each undone.
    kept = tree(page)
    page.locator('#ed-layer-list button.layer-name', has_text="Call to action").click()
    page.get_by_role("button", name="Hide Call to action").click()
    assert doc(page)["nodes"][cid]["visible"] is False
    page.get_by_role("button", name="Lock Call to action").click()
    assert doc(page)["nodes"][cid]["locked"] is True
    page.get_by_role("button", name="Add text").click()
    added = [k for k in doc(page)["nodes"] if k not in json.loads(kept)["nodes"]]
    assert len(added) == 1 and doc(page)["nodes"][added[0]]["characters"] == "New text", added
    assert doc(page)["nodes"][added[0]]["fontFamily"] == "Lato", "the brand's heading font"
    page.locator("#p-delete").click()
    assert added[0] not in doc(page)["nodes"]
    page.locator('#ed-layer-list button.layer-name', has_text="Headline").click()
    page.get_by_role("button", name="Duplicate").click()
    copies = [k for k in doc(page)["nodes"] if k not in json.loads(kept)["nodes"]]
    assert len(copies) == 1 and doc(page)["nodes"][copies[0]]["x"] == doc(page)["nodes"][hid]["x"] + 20, copies
    for _ in range(5):
        page.get_by_role("button", name="Undo").click()
    assert tree(page) == kept, "five undos take back duplicate, delete, add, lock and hide"
    settled(page)

    # Keyboard only: Tab from the toolbar to the headline, nudge it (3 × → and Shift+↓),
    # timing each change until its picture is on screen.
    page.locator("#ed-undo").focus()
    for _ in range(200):
        page.keyboard.press("Tab")
        label = page.evaluate("document.activeElement.getAttribute('aria-label') || ''")
        if label.startswith("Headline,"):
            break
    else:
        raise AssertionError("Tab never reached the headline")
    assert page.inner_text("#ed-sel-name") == "Headline", "focus selects"
    x0 = doc(page)["nodes"][hid]["x"]
    y0 = doc(page)["nodes"][hid].get("y", 0)
    times = []
    for k in ["ArrowRight"] * 3 + ["Shift+ArrowDown"]:
        page.keyboard.press(k)
        times.append(change_ms(page))
    head2 = doc(page)["nodes"][hid]
    assert (head2["x"], head2.get("y", 0)) == (x0 + 3, y0 + 10), head2
    w0 = head2["width"]
    page.keyboard.press("Alt+ArrowRight")
    # The editor keeps sizes in whole pixels (model.js setBox); a template's box may be in
    # tenths, so one step lands on the whole pixel nearest w0 + 1 (JavaScript's rounding).
    assert doc(page)["nodes"][hid]["width"] == math.floor(w0 + 1 + 0.5), "Alt+arrow resizes"
    page.keyboard.press("Control+z")
    assert doc(page)["nodes"][hid]["width"] == w0
    settled(page)
    for k in ["ArrowLeft", "ArrowRight"] * 6:
        page.keyboard.press(k)
        times.append(change_ms(page))
    assert doc(page)["nodes"][hid]["x"] == x0 + 3
    times = [t for t in times if t is not None]

    # Leaving with unsaved changes asks first (the dialog is dismissed: the page stays).
    seen = []
    page.once("dialog", lambda d: (seen.append(d.type), d.dismiss()))
    page.get_by_role("link", name="← Back to the ad").click()
    page.wait_for_timeout(500)
    assert seen == ["beforeunload"], seen
    assert page.url.endswith(f"/dashboard/ads/{ad}/edit")

    # Save: version n+1, with the summary written from the changes.
    summary = page.input_value("#ed-summary")
    assert "Moved Headline" in summary and "Changed the text of Button label" in summary, summary
    expected = json.loads(tree(page))
    last_preview = page.get_attribute("#ed-picture", "src")
    page.get_by_role("button", name=f"Save as version {n + 1}").click()
    page.wait_for_url(base + f"/dashboard/ads/{ad}#version-{n + 1}")
    assert page.locator(f"#version-{n + 1}").count() == 1
    until("version n+1 completes", lambda: api(base, key, "GET", f"/v1/image-ads/{ad}")["data"]["status"] == "completed",
          every=0.5)
    versions = api(base, key, "GET", f"/v1/image-ads/{ad}/versions")["data"]
    saved = versions[-1]
    assert saved["version_number"] == n + 1 and saved["status"] == "completed", saved["status"]
    assert saved["json_tree"] == expected, "the saved tree is the editor's"
    assert saved["change_summary"] == summary, saved["change_summary"]
    assert saved["json_tree"]["nodes"][hid]["x"] == head0.get("x", 0) + moved + 3

    # Its PNG shows the change: around the headline and the button it matches the editor's
    # last preview and differs from version n's PNG.
    head_box = [min(head0.get("x", 0), saved["json_tree"]["nodes"][hid]["x"]), head0.get("y", 0)]
    diff = page.evaluate(COMPARE, {
        "a": saved["image_url"], "b": last_preview, "c": versions[-2]["image_url"],
        "design": [expected["nodes"][expected["root"]]["width"], expected["nodes"][expected["root"]]["height"]],
        "region": [head_box[0], head_box[1], head0.get("width", 400) + moved + 3, head0.get("height", 120) + 10],
    })
    assert diff["same"] < 8 and diff["other"] > 2 * diff["same"] + 2, diff
    page.locator(f"#version-{n + 1} .status", has_text="Completed").wait_for(timeout=60_000)
    assert summary in page.inner_text(f"#version-{n + 1}")
    print(f"editor: saved PNG vs the editor's last preview {diff['same']:.1f}, "
          f"version {n}'s PNG vs it {diff['other']:.1f} (mean level difference around the headline)")

    # In an auto-layout frame dragging reorders. The editor has no command that makes such a
    # frame, so the API stacks the headline and the supporting text in one (version n+2);
    # dragging the supporting text above the headline swaps them, and undo swaps them back.
    t = saved["json_tree"]
    sid, _ = node_named(t, "supporting")
    h = t["nodes"][hid]
    kids = t["nodes"][t["root"]]["children"]
    at = kids.index(hid)
    kids.remove(hid)
    kids.remove(sid)
    kids.insert(min(at, len(kids)), "copy-stack")
    t["nodes"]["copy-stack"] = {
        "id": "copy-stack", "type": "FRAME", "name": "Copy", "x": h.get("x", 0), "y": h.get("y", 0),
        "width": h.get("width", 600), "layoutMode": "VERTICAL", "itemSpacing": 16, "fills": [],
        "clipsContent": False, "children": [hid, sid]}
    api(base, key, "PATCH", f"/v1/image-ads/{ad}", {"current_json_tree": t, "change_summary": "Stacked the copy"})
    until("version n+2 completes", lambda: api(base, key, "GET", f"/v1/image-ads/{ad}")["data"]["status"] == "completed",
          every=0.5)
    page.goto(base + f"/dashboard/ads/{ad}/edit")
    settled(page)
    _, sb = box(page, "Supporting text")
    _, hb = box(page, "Headline")
    page.mouse.move(sb["x"] + sb["width"] / 2, sb["y"] + sb["height"] / 2)
    page.mouse.down()
    page.mouse.move(sb["x"] + sb["width"] / 2, hb["y"] + hb["height"] / 2, steps=6)
    assert page.is_visible("#ed-marker"), "a marker shows where it lands"
    page.mouse.move(sb["x"] + sb["width"] / 2, hb["y"] + 2, steps=3)
    page.mouse.up()
    assert doc(page)["nodes"]["copy-stack"]["children"] == [sid, hid], doc(page)["nodes"]["copy-stack"]
    assert (doc(page)["nodes"][sid].get("x"), doc(page)["nodes"][sid].get("y")) == \
        (t["nodes"][sid].get("x"), t["nodes"][sid].get("y")), "reordered, not placed"
    settled(page)
    page.keyboard.press("Control+z")
    assert doc(page)["nodes"]["copy-stack"]["children"] == [hid, sid]
    assert not errors, errors
    ctx.close()
    return times


# Draws three pictures at one size and measures how far apart they are (mean absolute
# difference per channel, 0–255) inside a region of the design, given in design pixels.
COMPARE = """async ({a, b, c, design, region}) => {
  const load = (src) => new Promise((ok, no) => { const i = new Image(); i.onload = () => ok(i); i.onerror = no; i.src = src; });
  const [A, B, C] = await Promise.all([load(a), load(b), load(c)]);
  const W = 360, H = Math.round(W * design[1] / design[0]), k = W / design[0];
  const pixels = (img) => { const cv = document.createElement("canvas"); cv.width = W; cv.height = H;
    const g = cv.getContext("2d"); g.drawImage(img, 0, 0, W, H);
    const x = Math.max(0, Math.floor(region[0] * k)), y = Math.max(0, Math.floor(region[1] * k));
    const w = Math.max(1, Math.min(W - x, Math.ceil(region[2] * k))), h = Math.max(1, Math.min(H - y, Math.ceil(region[3] * k)));
    return g.getImageData(x, y, w, h).data; };
  const [pa, pb, pc] = [pixels(A), pixels(B), pixels(C)];
  const mad = (p, q) => { let s = 0, n = 0; for (let i = 0; i < p.length; i += 4) { for (let j = 0; j < 3; j++) { s += Math.abs(p[i + j] - q[i + j]); n++; } } return s / n; };
  return { same: mad(pa, pb), other: mad(pc, pb) };
}"""


def run_template_editor(page, base, shots=True):
    """A template's page opens the editor; a headline typed in the panel saves version 2."""
    tid = page.url.rsplit("/", 1)[1].split("#")[0]
    page.get_by_role("link", name="Open in the editor").click()
    page.wait_for_url(base + f"/dashboard/templates/{tid}/edit")
    settled(page)
    d = doc(page)
    texts = [k for k, v in d["nodes"].items() if v.get("type") == "TEXT"]
    assert texts, "the template has a text"
    label = page.evaluate(
        "(id) => document.querySelector(`#ed-overlay .node[data-id='${id}']`).getAttribute('aria-label')",
        texts[0])
    page.locator(f'#ed-overlay .node[data-id="{texts[0]}"]').click()
    assert page.inner_text("#ed-sel-name") == label.split(",")[0]
    if shots:
        shoot(page, "template-editor")
    page.get_by_label("Words").fill("Fresh roast, every morning")
    assert doc(page)["nodes"][texts[0]]["characters"] == "Fresh roast, every morning"
    settled(page)
    version = json.loads(page.text_content("#ed-data"))["version"]
    page.get_by_role("button", name=f"Save as version {version + 1}").click()
    page.wait_for_url(base + f"/dashboard/templates/{tid}#version-{version + 1}")
    page.locator(f"#version-{version + 1}").wait_for()
    assert "Changed the text of" in page.inner_text(f"#version-{version + 1}")


def timing_line(times):
    if not times:
        return "editor: no change → picture timings"
    q = statistics.quantiles(times, n=10) if len(times) >= 10 else [max(times)] * 9
    return (f"editor: change → new picture on screen, {len(times)} changes: p50 "
            f"{statistics.median(times):.0f} ms, p90 {q[8]:.0f} ms, max {max(times)} ms "
            f"(load {os.getloadavg()[0]:.2f}; not asserted)")
