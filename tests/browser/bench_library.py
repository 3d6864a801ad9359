"""Swipe-file page speed (issue 13 benchmark), run by scripts/bench-dashboard.

10,000 designs are INSERTED DIRECTLY IN SQL into a fresh data dir (ready rows with facet
values spread over industries, formats and ratios, all sharing one real 200 px thumbnail
file; no ingest, no vectors), then `adforge serve` (the binary in ADFORGE_BIN, a release
build from the script) serves /dashboard/swipe to Debian's headless Chromium.

Per view, over RUNS loads: Chromium's own paint timings (first-paint and
first-contentful-paint from `performance.getEntriesByType("paint")`), the navigation's
server time (`responseStart - requestStart`), and the page's server time measured from a
plain HTTP client with the session cookie (loopback included). Prints Markdown rows.
"""

import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard_test as d  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

DESIGNS = int(os.environ.get("DESIGNS", "10000"))
RUNS = int(os.environ.get("RUNS", "15"))
INDUSTRIES = ["food_beverages_tobacco", "apparel_accessories", "animals_pet_supplies",
              "health_beauty", "home_garden", "electronics", "sporting_goods"]
FORMATS = ["product_shot", "lifestyle", "offer_sale", "testimonial", "text_only"]
RATIOS = [("1:1", 1080, 1080), ("4:5", 1080, 1350), ("9:16", 1080, 1920), ("16:9", 1920, 1080)]


def seed(data_dir, org):
    thumb = "swipe-files/bench/thumb.webp"
    src = os.path.join(d.ROOT, "assets", "samples", "coffee.png")
    os.makedirs(os.path.join(data_dir, "blobs", "swipe-files", "bench"), exist_ok=True)
    shutil.copy(src, os.path.join(data_dir, "blobs", thumb))
    db = sqlite3.connect(os.path.join(data_dir, "adforge.sqlite3"))
    rng = random.Random(7)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    rows = []
    for i in range(DESIGNS):
        ratio, w, h = rng.choice(RATIOS)
        rows.append((f"sf_bench{i:016d}", org, "upload", thumb, thumb, w, h, ratio,
                     rng.choice(INDUSTRIES), rng.choice(FORMATS), "ready", now, now))
    db.executemany(
        "INSERT INTO swipe_files (id, org_id, source, blob_key, thumb_key, width, height, "
        "aspect_ratio, industry, ad_format, status, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main():
    data_dir = tempfile.mkdtemp(prefix="adforge-bench-")
    empty = tempfile.mkdtemp(prefix="adforge-empty-")
    port = d.free_port()
    base = f"http://127.0.0.1:{port}"
    org = d.admin(data_dir, "org", "create", "--name", "Bench")["id"]
    who = d.admin(data_dir, "member", "add", "--org", org, "--email", "bench@example.test",
                  "--role", "owner", "--public-url", base)
    if not os.path.exists(os.path.join(data_dir, "adforge.sqlite3")):
        raise SystemExit("expected the database at " + data_dir + "/adforge.sqlite3")
    seed(data_dir, org)
    server = subprocess.Popen(
        [d.ADFORGE, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir,
         "--workers", "0", "--default-collection", empty, "--log", "warn"],
        stdout=subprocess.DEVNULL)
    views = [
        ("swipe file, first page of 48 with facets", "/dashboard/swipe"),
        ("swipe file, two facet filters", "/dashboard/swipe?industry=food_beverages_tobacco&aspect_ratio=1:1"),
        ("design packs list", "/dashboard/packs"),
    ]
    try:
        d.wait_for("server up", lambda: d._up(base))
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
            print(f"| view | designs | first paint p50 / p99 (ms) | first contentful paint p50 / p99 (ms) "
                  f"| server time in the browser p50 / p99 (ms) | server time, plain client p50 / p99 (ms) |")
            print("|---|---:|---:|---:|---:|---:|")
            for label, path in views:
                fp, fcp, nav, plain = [], [], [], []
                for i in range(RUNS + 1):
                    page.goto(base + path, wait_until="load")
                    # Paint entries arrive after the frame is presented: wait for them.
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
                print(f"| {label} | {DESIGNS:,} | {statistics.median(fp):.0f} / {pct(fp, 99):.0f} "
                      f"| {statistics.median(fcp):.0f} / {pct(fcp, 99):.0f} "
                      f"| {statistics.median(nav):.0f} / {pct(nav, 99):.0f} "
                      f"| {statistics.median(plain):.0f} / {pct(plain, 99):.0f} |")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)


if __name__ == "__main__":
    main()
