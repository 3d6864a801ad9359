"""The swipe file page while a design is being analysed (issue 39), called by
dashboard_test.py against a server of its own started with `--workers 0`, so the design
stays processing for as long as the check needs (the main server's worker would analyse it
within a second or two, and a check that races it proves nothing).

The page must not reload itself (`<meta http-equiv=refresh>` is axe-core's serious
`meta-refresh` violation, WCAG 2.2.1): axe-core finds no serious or critical violation on
it at either width, its status region says a design is being analysed with a "Refresh"
link, and when the design is done (marked failed in the store: no worker runs) the page's
script swaps its card in place, keeps the box the member checked, and announces it, all
without a reload.
"""

import os
import shutil
import sqlite3
import subprocess
import tempfile

import a11y  # axe-core (tests/browser/a11y.py)
import library  # sign_in (tests/browser/library.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COFFEE = os.path.join(ROOT, "assets", "samples", "coffee.png")


def run_swipe_live(adforge, admin, free_port, wait_for, up, shoot, browser, password):
    data_dir = tempfile.mkdtemp(prefix="adforge-swipe-live-")
    empty = tempfile.mkdtemp(prefix="adforge-empty-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    org = admin(data_dir, "org", "create", "--name", "Live Roasters")["id"]
    sam = admin(data_dir, "member", "add", "--org", org, "--email", "sam@live.test",
                "--name", "Sam Swipe", "--role", "member", "--public-url", base)
    server = subprocess.Popen(
        [adforge, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir,
         "--workers", "0", "--default-collection", empty, "--log", "warn"],
        stdout=subprocess.DEVNULL,
    )
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        wait_for("swipe-live server up", lambda: up(base))
        page = ctx.new_page()
        library.sign_in(page, sam["sign_in_link"], password)
        page.goto(base + "/dashboard/swipe")
        page.get_by_label("Images (PNG, JPEG or WebP; choose or drop several)").set_input_files([COFFEE])
        page.get_by_role("button", name="Upload", exact=True).click()
        page.wait_for_url(base + "/dashboard/swipe?uploaded=1")

        assert page.locator("meta[http-equiv]").count() == 0, page.content()
        card = page.locator('li.design[data-status="processing"]')
        assert card.count() == 1, page.inner_text("main")
        design = card.get_attribute("id")
        note = page.locator("#swipe-processing")
        assert note.get_attribute("role") == "status"
        assert "1 design is being analysed" in note.inner_text(), note.inner_text()
        assert note.get_by_role("link", name="Refresh").is_visible()
        shoot(page, "swipe-processing")  # axe-core at desktop and phone width

        # The member checks the design; then it is done. The script swaps the card in
        # place (the marker set on this document survives: no reload).
        page.locator(f"li#{design}").get_by_label("Select", exact=False).check()
        page.evaluate("window.__noReload = 'still here'")
        db = sqlite3.connect(os.path.join(data_dir, "adforge.sqlite3"))
        db.execute("UPDATE swipe_files SET status = 'failed' WHERE id = ?", (design,))
        db.commit()
        db.close()
        page.locator(f'li#{design}[data-status="failed"]').wait_for(timeout=30_000)
        assert page.evaluate("window.__noReload") == "still here", "the page reloaded"
        assert page.url == base + "/dashboard/swipe?uploaded=1", page.url
        assert page.locator(f"li#{design}").get_by_label("Select", exact=False).is_checked()
        assert "Failed" in page.locator(f"li#{design}").inner_text()
        assert note.inner_text() == "Every design is analysed.", note.inner_text()
        a11y.check(page, "swipe after an update in place")
        ctx.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)
