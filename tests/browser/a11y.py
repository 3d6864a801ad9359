"""axe-core (tests/browser/vendor/axe-core, vendored from npm for this test only) over the
dashboard's pages: `check(page, name)` injects it into the page as it stands and fails on
any serious or critical violation, naming the rule, the elements and what to fix.

The script is evaluated through the DevTools protocol (Playwright's `evaluate`), which the
page's content policy (`script-src 'self'`) does not govern; the page itself still runs
under its policy, so a page that needed an inline script would still break here.
"""

import os

AXE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor", "axe-core", "axe.min.js")
with open(AXE, encoding="utf-8") as f:
    SOURCE = f.read()

BLOCKING = ("serious", "critical")
checked = []


def check(page, name):
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(SOURCE)
    found = page.evaluate(
        """async () => {
          const r = await axe.run(document, {resultTypes: ["violations"]});
          return r.violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 4).map(n => n.target.join(" ") + " → " + (n.failureSummary || "")),
          }));
        }"""
    )
    bad = [v for v in found if v["impact"] in BLOCKING]
    checked.append((name, page.viewport_size["width"], len(found), len(bad)))
    if bad:
        lines = [f"{v['impact']} {v['id']}: {v['help']}\n    " + "\n    ".join(v["nodes"]) for v in bad]
        raise AssertionError(f"axe-core on {name} ({page.url}, {page.viewport_size['width']} px):\n"
                             + "\n".join(lines))


def report():
    """A line per page checked, for the test's output."""
    pages = sorted({n.replace(" (desktop)", "").replace(" (phone)", "") for n, _, _, _ in checked})
    minor = sum(m for _, _, m, _ in checked)
    return (f"axe-core {len(checked)} checks on {len(pages)} pages: 0 serious or critical "
            f"violations ({minor} moderate or minor): " + ", ".join(pages))
