"""The web dashboard in a real browser: Debian's headless Chromium driven by Playwright
(Python, pinned in scripts/test) against a real `adforge serve` on a free loopback port.

Signs in through a one-time link made by `adforge admin member add`, creates a key by
keyboard and uses it against the API, revokes it and sees the API refuse it, tops up the
wallet as an operator, and saves screenshots of every page at desktop (1280 px) and phone
(390 px) width into target/screenshots/.

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
    """Full-page screenshots of the current page at each width."""
    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=os.path.join(SHOTS, f"{name}-{label}.png"), full_page=True)
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
         "--workers", "0", "--default-collection", empty, "--log", "warn"],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for("server up", lambda: _up(base))
        run(base, org, owner["sign_in_link"])
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)
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


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("browser test FAILED:", e, file=sys.stderr)
        sys.exit(1)
