"""Image-ads gallery speed (issue 13 benchmark), run by scripts/bench-dashboard.

A brand, product and audience are made through the API, then 1,000 image ads are INSERTED
DIRECTLY IN SQL (one transaction; 950 completed, 50 failed, a fifth of them editable, all
completed ones showing one shared real 4K PNG, rendered from
renderer/examples/ads/typical.json, as their image; no generation ran) into the data dir of `adforge serve` (the binary in ADFORGE_BIN, a release
build from the script), which serves /dashboard/ads to Debian's headless Chromium.

Per view, over RUNS loads: Chromium's own paint timings (first-paint and
first-contentful-paint), the navigation's server time (`responseStart - requestStart`),
and the page's time from a plain HTTP client with the session cookie (loopback included).
Prints Markdown rows.
"""

import os
import random
import shutil
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard_test as d  # noqa: E402
from bench_library import pct  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

ADS = int(os.environ.get("ADS", "1000"))
RUNS = int(os.environ.get("RUNS", "15"))


def seed(data_dir, base, key, org):
    brand = d.api_call(base, key, "GET", "/v1/brands")["data"][0]["id"]
    product = d.api_call(base, key, "GET", "/v1/products")["data"][0]["id"]
    audience = d.api_call(base, key, "GET", "/v1/audiences")["data"][0]["id"]
    # A real 4K ad PNG (3072x3840): the renderer's typical example tree.
    folder = os.path.join(data_dir, "blobs", "image-ads", "bench")
    os.makedirs(folder, exist_ok=True)
    src = os.path.join(folder, "ad.png")
    subprocess.run([d.ADFORGE, "render", os.path.join(d.ROOT, "renderer", "examples", "ads",
                                                      "typical.json"), "-o", src],
                   check=True, capture_output=True)
    with open(src, "rb") as f:
        w, h = struct.unpack(">II", f.read(24)[16:24])
    url = base + "/files/image-ads/bench/ad.png"
    rng = random.Random(13)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    rows = []
    for i in range(ADS):
        failed = i % 20 == 7
        editable = rng.random() < 0.2
        rows.append((f"ia_bench{i:016d}", org, brand, product, audience, url, int(editable),
                     "editable_image_ad" if editable else "flat_image_ad", 400 if editable else 100,
                     "failed" if failed else "completed",
                     None if failed else url, None if failed else w, None if failed else h,
                     "PIPELINE_ERROR" if failed else None, "bench row" if failed else None,
                     "{}", "trail shoe", now, None if failed else now, now))
    db = sqlite3.connect(os.path.join(data_dir, "adforge.sqlite3"), timeout=30)
    db.executemany(
        "INSERT INTO image_ads (id, org_id, brand_id, product_id, audience_id, reference_ad_url, "
        "editable, sku_code, price_cents, status, image_url, width, height, error_code, "
        "error_message, job, search_name, created_at, completed_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()


def main():
    data_dir = tempfile.mkdtemp(prefix="adforge-bench-")
    empty = tempfile.mkdtemp(prefix="adforge-empty-")
    port = d.free_port()
    base = f"http://127.0.0.1:{port}"
    org = d.admin(data_dir, "org", "create", "--name", "Bench")["id"]
    who = d.admin(data_dir, "member", "add", "--org", org, "--email", "bench@example.test",
                  "--role", "owner", "--public-url", base)
    server = subprocess.Popen(
        [d.ADFORGE, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir,
         "--workers", "0", "--default-collection", empty, "--log", "warn"],
        stdout=subprocess.DEVNULL)
    try:
        d.wait_for("server up", lambda: d._up(base))
        key = d.ads_catalog(base, data_dir, org)
        seed(data_dir, base, key, org)
        middle = f"ia_bench{ADS // 2:016d}"
        views = [
            ("gallery, first page of 24 with status facets", "/dashboard/ads"),
            ("gallery, editable + completed filters", "/dashboard/ads?status=completed&editable=true"),
            ("gallery, search", "/dashboard/ads?search=trail"),
            ("gallery, page in the middle (starting_after)", f"/dashboard/ads?starting_after={middle}"),
            ("ad detail", f"/dashboard/ads/{middle}"),
        ]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=d.CHROMIUM, headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            page = ctx.new_page()
            page.goto(who["sign_in_link"])
            page.get_by_label("New password").fill(d.PASSWORD)
            page.get_by_label("Repeat the password").fill(d.PASSWORD)
            page.get_by_role("button", name="Set password and sign in").click()
            page.wait_for_url(base + "/dashboard/keys")
            cookie = next(c for c in ctx.cookies() if c["name"] == "adforge_session")
            print("| view | ads | first paint p50 / p99 (ms) | first contentful paint p50 / p99 (ms) "
                  "| server time in the browser p50 / p99 (ms) | server time, plain client p50 / p99 (ms) |")
            print("|---|---:|---:|---:|---:|---:|")
            for label, path in views:
                fp, fcp, nav, plain = [], [], [], []
                for i in range(RUNS + 1):
                    page.goto(base + path, wait_until="load")
                    assert "Something went wrong" not in page.content(), path
                    t = page.evaluate("""() => new Promise(resolve => {
                        const done = () => {
                            const n = performance.getEntriesByType('navigation')[0];
                            const paints = Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]));
                            resolve({fp: paints['first-paint'], fcp: paints['first-contentful-paint'],
                                     server: n.responseStart - n.requestStart});
                        };
                        new PerformanceObserver(l => { if (l.getEntries().some(e => e.name === 'first-contentful-paint')) done(); })
                            .observe({type: 'paint', buffered: true});
                        setTimeout(done, 3000);
                    })""")
                    req = urllib.request.Request(base + path, headers={
                        "Cookie": f"adforge_session={cookie['value']}"})
                    t0 = time.perf_counter()
                    with urllib.request.urlopen(req, timeout=30) as r:
                        r.read()
                    dt = (time.perf_counter() - t0) * 1000
                    if i == 0:
                        continue  # warm-up: connection, caches
                    fp.append(t["fp"] or 0)
                    fcp.append(t["fcp"] or 0)
                    nav.append(t["server"])
                    plain.append(dt)
                print(f"| {label} | {ADS:,} | {statistics.median(fp):.0f} / {pct(fp, 99):.0f} "
                      f"| {statistics.median(fcp):.0f} / {pct(fcp, 99):.0f} "
                      f"| {statistics.median(nav):.0f} / {pct(nav, 99):.0f} "
                      f"| {statistics.median(plain):.0f} / {pct(plain, 99):.0f} |")
            browser.close()
            # A thumbnail's first view: the 4K PNG decoded and scaled to a 600 px WebP (each
            # run a fresh copy of the PNG under its own key, so nothing is cached).
            db = sqlite3.connect(os.path.join(data_dir, "adforge.sqlite3"), timeout=30)
            cold = []
            for i in range(RUNS):
                key = f"image-ads/bench/cold-{i}.png"
                shutil.copy(os.path.join(data_dir, "blobs", "image-ads", "bench", "ad.png"),
                            os.path.join(data_dir, "blobs", key))
                db.execute("UPDATE image_ads SET image_url = ? WHERE id = ?",
                           (f"{base}/files/{key}", f"ia_bench{i:016d}"))
                db.commit()
                req = urllib.request.Request(f"{base}/dashboard/ads/ia_bench{i:016d}/thumb", headers={
                    "Cookie": f"adforge_session={cookie['value']}"})
                t0 = time.perf_counter()
                with urllib.request.urlopen(req, timeout=60) as r:
                    assert r.headers["Content-Type"] == "image/webp"
                    r.read()
                cold.append((time.perf_counter() - t0) * 1000)
            db.close()
            print(f"| thumbnail, first view (4K PNG → 600 px WebP) | {ADS:,} | – | – | – "
                  f"| {statistics.median(cold):.0f} / {pct(cold, 99):.0f} |")
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)


if __name__ == "__main__":
    main()
