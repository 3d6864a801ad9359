"""The web dashboard in a real browser: Debian's headless Chromium driven by Playwright
(Python, pinned in scripts/test) against a real `adforge serve` on a free loopback port.

Signs in through a one-time link made by `adforge admin member add`, creates a key by
keyboard and uses it against the API, revokes it and sees the API refuse it, tops up the
wallet as an operator, edits an ad in the visual editor (tests/browser/editor.py), and saves
screenshots of every page at desktop (1280 px) and phone (390 px) width into
target/screenshots/. Every page screenshotted is also checked with axe-core
(tests/browser/a11y.py): no serious or critical violation at either width.

Run: .venv/bin/python tests/browser/dashboard_test.py  (ADFORGE_BIN overrides the binary,
CHROMIUM_BIN the browser). Exits non-zero on the first failed check.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from playwright.sync_api import sync_playwright

import a11y  # axe-core over every page (tests/browser/a11y.py)
import batches  # the batch form and pages (tests/browser/batches.py)
import editor  # the visual editor (tests/browser/editor.py)
import library  # the swipe file and packs part (tests/browser/library.py)
import swipe_live  # the swipe file while a design is analysed (tests/browser/swipe_live.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADFORGE = os.environ.get("ADFORGE_BIN", os.path.join(ROOT, "target", "debug", "adforge"))
CHROMIUM = os.environ.get("CHROMIUM_BIN", shutil.which("chromium") or "/usr/bin/chromium")
SHOTS = os.path.join(ROOT, "target", "screenshots")
PASSWORD = "correct horse battery staple"
WIDTHS = {"desktop": 1280, "phone": 390}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def admin(data_dir, *args):
    out = subprocess.run(
        [ADFORGE, "admin", "--data-dir", data_dir, *args],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def api_status(base, key, path="/v1/brands"):
    req = urllib.request.Request(base + path, headers={"X-API-Key": key})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def wait_for(what, check, seconds=20):
    """A deadline only a hang reaches; not a timing assertion."""
    end = time.time() + seconds
    while not check():
        if time.time() > end:
            raise AssertionError("never happened: " + what)
        time.sleep(0.2)


def shoot(page, name):
    """Full-page screenshots of the current page at each width, each checked by axe-core."""
    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=os.path.join(SHOTS, f"{name}-{label}.png"), full_page=True)
        a11y.check(page, f"{name} ({label})")
    page.set_viewport_size({"width": WIDTHS["desktop"], "height": 900})


def main():
    os.makedirs(SHOTS, exist_ok=True)
    data_dir = tempfile.mkdtemp(prefix="adforge-browser-")
    empty = tempfile.mkdtemp(prefix="adforge-empty-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    org = admin(data_dir, "org", "create", "--name", "Acme Outdoor")["id"]
    admin(data_dir, "wallet", "top-up", "--org", org, "--amount", "12.00", "--reference", "INV-2026-0042")
    owner = admin(data_dir, "member", "add", "--org", org, "--email", "dana@acme.test",
                  "--name", "Dana Ops", "--role", "owner", "--operator", "--public-url", base)
    server = subprocess.Popen(
        [ADFORGE, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir,
         "--workers", "1", "--default-collection", empty, "--log", "warn"],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for("server up", lambda: _up(base))
        run(base, org, owner["sign_in_link"])
        run_ads(base, org, data_dir)
        run_visual_editor(base, org, data_dir)
        run_library(base, org, data_dir)
        run_swipe_live()
        run_batches()
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)
    print(a11y.report())
    print("browser test passed; screenshots in", SHOTS)


def _up(base):
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def run(base, org, link):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()

        # Signed out: any page sends the browser to sign-in.
        page.goto(base + "/dashboard/wallet")
        assert page.url.startswith(base + "/dashboard/sign-in?next="), page.url
        shoot(page, "sign-in")

        # The one-time link: set a password, land on the keys page.
        page.goto(link)
        shoot(page, "set-password")
        page.get_by_label("New password").fill(PASSWORD)
        page.get_by_label("Repeat the password").fill(PASSWORD)
        page.get_by_role("button", name="Set password and sign in").click()
        page.wait_for_url(base + "/dashboard/keys")
        cookie = next(c for c in ctx.cookies() if c["name"] == "adforge_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Lax", cookie
        shoot(page, "keys")

        # Keyboard: the first Tab reaches the skip link.
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"

        # Create a key by keyboard with two scopes.
        page.get_by_label("brands:read").focus()
        page.keyboard.press("Space")
        page.get_by_label("products:read").focus()
        page.keyboard.press("Space")
        page.get_by_role("button", name="Create key").focus()
        page.keyboard.press("Enter")
        page.wait_for_selector("#new-secret")
        secret = page.input_value("#new-secret")
        assert secret.startswith("svc_live_"), secret
        shoot(page, "key-created")
        assert api_status(base, secret) == 200, "the new key works against the API"
        assert api_status(base, secret, "/v1/image-ads") == 403, "only the chosen scopes"

        # Revoke it: the API refuses it.
        last4 = secret[-4:]
        page.goto(base + "/dashboard/keys")
        page.get_by_role("button", name=f"Revoke key ending {last4}").click()
        page.wait_for_url(base + "/dashboard/keys")
        wait_for("revoked key refused", lambda: api_status(base, secret) == 401)
        assert "Revoked" in page.content()
        shoot(page, "keys-revoked")

        # Wallet: an operator tops up with a reference; the ledger shows it.
        page.goto(base + "/dashboard/wallet")
        assert page.inner_text("#balance") == "$12.00"
        page.get_by_label("Amount in dollars").fill("25.50")
        page.get_by_label("Reference").fill("INV-2026-0043")
        page.get_by_role("button", name="Top up").click()
        page.wait_for_url(base + "/dashboard/wallet")
        assert page.inner_text("#balance") == "$37.50", page.inner_text("#balance")
        assert "INV-2026-0043" in page.content()
        org_option = page.locator("#org option:checked")
        assert org_option.inner_text() == "Acme Outdoor", org_option.inner_text()
        assert org_option.get_attribute("title").startswith("org_")
        shoot(page, "wallet")
        page.goto(base + "/dashboard/wallet?kind=top_up")
        with page.expect_download() as dl:
            page.get_by_role("link", name="Export CSV").click()
        csv = open(dl.value.path(), encoding="utf-8").read()
        assert "INV-2026-0043" in csv and "INV-2026-0042" in csv, csv

        page.goto(base + "/dashboard/members")
        page.get_by_label("Email").fill("sam@acme.test")
        page.get_by_label("Name").fill("Sam Writer")
        page.get_by_role("button", name="Create sign-in link").click()
        page.wait_for_selector("#invite-link")
        assert "/dashboard/sign-in/link?token=" in page.input_value("#invite-link")
        shoot(page, "members")

        page.goto(base + "/dashboard/sessions")
        assert "This browser" in page.content()
        # A short "Chrome on Linux" summary; the whole user-agent string is its title.
        ua_cell = page.locator("td[data-label=Browser] span").first
        assert ua_cell.inner_text().startswith("Chrome on "), ua_cell.inner_text()
        assert ua_cell.get_attribute("title") == page.evaluate("navigator.userAgent")[:200]
        shoot(page, "sessions")

        # Sign out: back to sign-in, and the dashboard is closed again.
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(base + "/dashboard/sign-in")
        page.goto(base + "/dashboard/keys")
        assert page.url.startswith(base + "/dashboard/sign-in"), page.url

        # Sign in with the password, with a wrong one first.
        page.get_by_label("Email").fill("dana@acme.test")
        page.get_by_label("Password").fill("not the password at all")
        page.get_by_role("button", name="Sign in").click()
        assert "do not match" in page.content()
        shoot(page, "sign-in-error")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(base + "/dashboard/keys")
        browser.close()


# --- Image ads (issue 13): a member creates an ad that completes in the gallery and edits
# an editable ad's headline into version 2. Runs after `run`, whose operator top-up pays.

def api_call(base, key, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def api_upload(base, key, data, image_type=None):
    boundary = "adforgeboundary7MA4YWxk"
    parts = []
    if image_type:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="image_type"\r\n\r\n{image_type}\r\n'.encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.png"\r\n'
                 'Content-Type: image/png\r\n\r\n'.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    req = urllib.request.Request(base + "/v1/images", data=b"".join(parts), method="POST",
                                 headers={"X-API-Key": key,
                                          "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def png(width, height, rgb):
    """A solid-colour PNG, written by hand (no imaging package in the test venv)."""
    import struct
    import zlib

    def chunk(kind, payload):
        c = struct.pack(">I", len(payload)) + kind + payload
        return c + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)
    row = b"\x00" + bytes(rgb) * width
    raw = zlib.compress(row * height)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", raw) + chunk(b"IEND", b""))


def ads_catalog(base, data_dir, org):
    """brand → product → variant with an image → audience, through the API."""
    key = admin(data_dir, "key", "create", "--org", org, "--scopes", "all")["key"]
    brand = api_call(base, key, "POST", "/v1/brands", {"name": "Acme Outdoor"})["data"]["id"]
    product = api_call(base, key, "POST", "/v1/products",
                       {"brand_id": brand, "name": "Trail Shoe"})["data"]["id"]
    variant = api_call(base, key, "POST", "/v1/product-variants",
                       {"product_id": product, "name": "Red 42"})["data"]["id"]
    api_call(base, key, "POST", "/v1/audiences", {"product_id": product, "name": "Weekend hikers"})
    shot = api_upload(base, key, png(64, 64, (200, 40, 40)), "product")["data"]["id"]
    api_call(base, key, "PATCH", f"/v1/product-variants/{variant}", {"image_ids": [shot]})
    return key


def images_loaded(page):
    """Waits until every <img> of the page has loaded (4K PNGs take a moment to decode)."""
    wait_for("images loaded", lambda: page.evaluate(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"), seconds=60)
    # Loaded is not yet decoded for painting (decoding="async"): wait for that too.
    page.evaluate("Promise.all(Array.from(document.images).map(i => i.decode()))")


def run_ads(base, org, data_dir):
    key = ads_catalog(base, data_dir, org)
    mo = admin(data_dir, "member", "add", "--org", org, "--email", "mo@acme.test",
               "--name", "Mo Maker", "--role", "member", "--public-url", base)
    reference = os.path.join(tempfile.mkdtemp(prefix="adforge-ref-"), "reference.png")
    with open(reference, "wb") as f:
        f.write(png(120, 150, (30, 60, 90)))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.goto(mo["sign_in_link"])
        page.get_by_label("New password").fill(PASSWORD)
        page.get_by_label("Repeat the password").fill(PASSWORD)
        page.get_by_role("button", name="Set password and sign in").click()
        page.wait_for_url(base + "/dashboard/keys")

        # A member creates an editable ad from an uploaded reference.
        page.goto(base + "/dashboard/ads")
        page.get_by_role("link", name="Create an ad").click()
        page.get_by_label("Brand").select_option(label="Acme Outdoor")
        page.get_by_label("Product").select_option(label="Trail Shoe")
        page.get_by_label("Audience").select_option(label="Weekend hikers")
        page.get_by_label("Upload an image").set_input_files(reference)
        page.get_by_label("Editable").check()
        shoot(page, "ad-create")
        page.get_by_role("button", name="Create ad").click()
        page.wait_for_url(base + "/dashboard/ads/ia_*")
        ad_id = page.url.rsplit("/", 1)[1]
        # The page refreshes itself while the ad processes; it completes.
        page.locator("#ad-status", has_text="Completed").wait_for(timeout=180_000)
        assert page.locator("#version-1 img").count() == 1, "version 1 is shown"

        # The gallery shows it completed, with its image; the editable filter keeps it.
        page.goto(base + "/dashboard/ads")
        card = page.locator(f"li#{ad_id}")
        assert card.locator("img").count() == 1
        assert "Completed" in card.inner_text()
        page.get_by_label("Kind").select_option(label="Editable")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url(lambda u: "editable=true" in u)
        assert page.locator(f"li#{ad_id}").count() == 1
        assert page.inner_text("#facet-completed .count") == "1"
        images_loaded(page)
        shoot(page, "ads-gallery")

        # Edit the headline: version 2 renders and completes beside version 1.
        page.goto(base + f"/dashboard/ads/{ad_id}")
        page.get_by_role("link", name="Edit texts, colours and images").click()
        page.get_by_label("Headline", exact=True).fill("Grip that holds on wet rock")
        shoot(page, "ad-editor")
        page.get_by_role("button", name="Save as version 2").click()
        page.wait_for_url(base + f"/dashboard/ads/{ad_id}*")
        assert page.locator("#version-2").count() == 1, "version 2 appears at once"
        try:
            page.locator("#version-2 .status", has_text="Completed").wait_for(timeout=180_000)
        except Exception:
            raise AssertionError("version 2 never completed: " + page.inner_text("main")) from None
        page.locator("#ad-status", has_text="Completed").wait_for(timeout=30_000)
        assert page.locator("#version-1 img").count() == 1
        assert page.locator("#version-2 img").count() == 1
        versions = api_call(base, key, "GET", f"/v1/image-ads/{ad_id}/versions")["data"]
        texts = [n.get("characters") for n in versions[1]["json_tree"]["nodes"].values()]
        assert "Grip that holds on wet rock" in texts, texts
        images_loaded(page)
        shoot(page, "ad-detail")

        # An unknown id (as another organisation's) is the not-found page.
        page.goto(base + "/dashboard/ads/ia_000000000000000000000000")
        assert "There is nothing here in your organisation." in page.content()
        a11y.check(page, "not found")
        page.goto(base + "/dashboard/cutouts")
        a11y.check(page, "cutouts")
        # The design-tool sync page (not connected) and the operator's imports page.
        page.goto(base + "/dashboard/figma")
        assert "Personal access token" in page.content()
        a11y.check(page, "figma")
        shoot(page, "figma")
        page.goto(base + "/dashboard/imports")
        assert "Only the service's operators can see imports." in page.content()  # a member
        a11y.check(page, "imports")
        shoot(page, "imports")
        browser.close()



def run_visual_editor(base, org, data_dir):
    """The visual editor (tests/browser/editor.py), by a member of its own."""
    key = admin(data_dir, "key", "create", "--org", org, "--scopes", "all")["key"]
    eve = admin(data_dir, "member", "add", "--org", org, "--email", "eve@acme.test",
                "--name", "Eve Editor", "--role", "member", "--public-url", base)

    def sign_in(page):
        page.goto(eve["sign_in_link"])
        page.get_by_label("New password").fill(PASSWORD)
        page.get_by_label("Repeat the password").fill(PASSWORD)
        page.get_by_role("button", name="Set password and sign in").click()
        page.wait_for_url(base + "/dashboard/keys")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        times = editor.run_editor(base, key, browser, sign_in, png)
        browser.close()
    print(editor.timing_line(times))


def run_library(base, org, data_dir):
    """Swipe file and design packs (tests/browser/library.py)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        library.run_library(base, data_dir, org, admin, shoot, browser, PASSWORD)
        browser.close()


def run_swipe_live():
    """The swipe file while a design is analysed, on a server without workers
    (tests/browser/swipe_live.py)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        swipe_live.run_swipe_live(ADFORGE, admin, free_port, wait_for, _up, shoot, browser, PASSWORD)
        browser.close()


def run_batches():
    """The batch form and pages, on a server of their own (tests/browser/batches.py)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        batches.run_batches(ADFORGE, admin, free_port, wait_for, _up, shoot, browser, PASSWORD,
                            api_call, api_upload, png, images_loaded)
        browser.close()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("browser test FAILED:", e, file=sys.stderr)
        sys.exit(1)
