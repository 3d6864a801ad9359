"""The dashboard's batch pages in a real browser (issue 42, item 4), called by
dashboard_test.py against a server of its own on a fresh data directory.

First with `--workers 0`, so a batch stays processing for as long as the check needs: a
member fills the batch form (two products, one reference, three sizes), reviews the price
(6 ads × $1.00 beside the wallet's available amount), creates the batch and lands on its
page, which is processing without reloading itself (no `<meta http-equiv=refresh>`,
axe-core's critical `meta-refresh`), then cancels it (nothing charged). Then the same data
directory is served with a worker: a second batch (2 products × 2 sizes) completes on its
page through the page's script, without a reload; its ads are filtered by size, the ZIP is
downloaded and opened. Screenshots of the form, the review, both batch pages and the list
go to target/screenshots at 1280 and 390 px, each checked by axe-core (no serious or
critical violation).
"""

import os
import shutil
import subprocess
import tempfile
import zipfile

import library  # sign_in (tests/browser/library.py)


def run_batches(adforge, admin, free_port, wait_for, up, shoot, browser, password,
                api_call, api_upload, png, images_loaded):
    data_dir = tempfile.mkdtemp(prefix="adforge-batches-")
    empty = tempfile.mkdtemp(prefix="adforge-empty-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    org = admin(data_dir, "org", "create", "--name", "Batch Outdoor")["id"]
    admin(data_dir, "wallet", "top-up", "--org", org, "--amount", "20.00", "--reference", "INV-B-1")
    kim = admin(data_dir, "member", "add", "--org", org, "--email", "kim@batch.test",
                "--name", "Kim Campaigns", "--role", "member", "--public-url", base)
    key = admin(data_dir, "key", "create", "--org", org, "--scopes", "all")["key"]

    def serve(workers):
        return subprocess.Popen(
            [adforge, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir,
             "--workers", str(workers), "--default-collection", empty, "--log", "warn"],
            stdout=subprocess.DEVNULL,
        )

    def stop(server):
        server.terminate()
        server.wait(timeout=30)

    server = serve(0)
    try:
        wait_for("batch server up", lambda: up(base))
        brand = api_call(base, key, "POST", "/v1/brands", {"name": "Batch Outdoor"})["data"]["id"]
        for name, rgb in (("Trail Shoe", (200, 40, 40)), ("Rain Jacket", (40, 90, 200))):
            product = api_call(base, key, "POST", "/v1/products",
                               {"brand_id": brand, "name": name})["data"]["id"]
            variant = api_call(base, key, "POST", "/v1/product-variants",
                               {"product_id": product, "name": "Default"})["data"]["id"]
            api_call(base, key, "POST", "/v1/audiences", {"product_id": product, "name": "Hikers"})
            shot = api_upload(base, key, png(64, 64, rgb), "product")["data"]["id"]
            api_call(base, key, "PATCH", f"/v1/product-variants/{variant}", {"image_ids": [shot]})
        reference = api_upload(base, key, png(120, 150, (30, 60, 90)))["data"]["src"]

        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        library.sign_in(page, kim["sign_in_link"], password)

        # The form, from the navigation; review shows the price before anything is made.
        page.goto(base + "/dashboard/ads")
        page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Batches").click()
        page.wait_for_url(base + "/dashboard/batches")
        page.get_by_role("link", name="New batch").click()
        page.wait_for_url(base + "/dashboard/batches/new")
        page.get_by_label("Trail Shoe").check()
        page.get_by_label("Rain Jacket").check()
        page.get_by_label("Reference ad URLs, one a line").fill(reference)
        for size in ("1:1", "4:5", "9:16"):
            page.locator(f'input[name=size][value="{size}"]').check()
        shoot(page, "batch-form")
        page.get_by_role("button", name="Review").click()
        page.locator("#review").wait_for()
        assert page.inner_text("#review-ads") == "6", page.inner_text("#review")
        assert page.inner_text("#review-total") == "$6.00", page.inner_text("#review")
        assert page.inner_text("#review-available") == "$20.00", page.inner_text("#review")
        assert page.locator('input[name=size][value="9:16"]').is_checked(), "the form keeps its choices"
        shoot(page, "batch-review")
        page.get_by_role("button", name="Create batch").click()
        page.wait_for_url(base + "/dashboard/batches/iab_*")
        first = page.url.rsplit("/", 1)[1]

        # No worker: processing, a status note and no timed reload.
        assert page.inner_text("#batch-status") == "Processing", page.inner_text("main")
        assert page.locator("meta[http-equiv]").count() == 0
        assert page.locator("#live-note").get_attribute("role") == "status"
        assert page.locator("li.ad-card").count() == 6
        shoot(page, "batch-processing")
        page.get_by_role("button", name="Cancel the ads not started").click()
        page.wait_for_url(base + f"/dashboard/batches/{first}?cancelled=1")
        assert page.inner_text("#batch-status") == "Cancelled", page.inner_text("main")
        assert page.inner_text("#count-cancelled") == "6"
        assert page.inner_text("#batch-charged").startswith("$0.00")
        ctx.close()
    finally:
        stop(server)

    server = serve(1)
    try:
        wait_for("batch server up again", lambda: up(base))
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        _sign_in_again(page, base, password)
        page.goto(base + "/dashboard/batches/new")
        page.get_by_label("Trail Shoe").check()
        page.get_by_label("Rain Jacket").check()
        page.get_by_label("Reference ad URLs, one a line").fill(reference)
        page.locator('input[name=size][value="1:1"]').check()
        page.locator('input[name=size][value="9:16"]').check()
        page.get_by_role("button", name="Review").click()
        page.locator("#review").wait_for()
        assert page.inner_text("#review-total") == "$4.00", page.inner_text("#review")
        page.get_by_role("button", name="Create batch").click()
        page.wait_for_url(base + "/dashboard/batches/iab_*")
        second = page.url.rsplit("/", 1)[1]
        # The page's script brings each ad in as it completes, without reloading.
        page.evaluate("window.__noReload = 'still here'")
        try:
            page.locator("#batch-status", has_text="Completed").wait_for(timeout=240_000)
        except Exception:
            raise AssertionError("the batch never completed on its page: " + page.inner_text("main")) from None
        assert page.evaluate("window.__noReload") == "still here", "the page reloaded"
        assert page.inner_text("#count-completed") == "4", page.inner_text("main")
        assert page.locator("li.ad-card img").count() == 4
        assert page.inner_text("#batch-charged").startswith("$4.00")
        images_loaded(page)
        shoot(page, "batch-page")

        # Filter by size: the two 9:16 ads.
        page.get_by_label("Size").select_option("9:16")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url(lambda u: "size=9%3A16" in u or "size=9:16" in u)
        assert page.locator("li.ad-card").count() == 2, page.inner_text("main")

        # The ZIP: every ad's PNG and JPEG and the manifest.
        with page.expect_download() as dl:
            page.get_by_role("link", name="Download ZIP").click()
        with zipfile.ZipFile(dl.value.path()) as z:
            names = z.namelist()
            assert "manifest.csv" in names, names
            assert len(names) == 4 * 2 + 1, names
            assert len(z.read("manifest.csv").decode().strip().splitlines()) == 5

        page.goto(base + "/dashboard/batches")
        assert page.locator(f"tr#{first}").count() == 1 and page.locator(f"tr#{second}").count() == 1
        shoot(page, "batches")
        ctx.close()
    finally:
        stop(server)
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)


def _sign_in_again(page, base, password):
    """The member's password from the first run (sessions live in the data directory)."""
    page.goto(base + "/dashboard/sign-in")
    page.get_by_label("Email").fill("kim@batch.test")
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda u: "/dashboard/" in u and "sign-in" not in u)


if __name__ == "__main__":
    # This part alone, e.g. after a change to the batch pages:
    #   ADFORGE_BIN=target/debug/adforge .venv/bin/python tests/browser/batches.py
    import a11y
    import dashboard_test

    os.makedirs(dashboard_test.SHOTS, exist_ok=True)
    dashboard_test.run_batches()
    print(a11y.report())
    print("batch pages passed; screenshots in", dashboard_test.SHOTS)
