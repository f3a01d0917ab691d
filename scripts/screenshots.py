"""Take the README's screenshots: the live view of the real demo in Debian's Chromium (Playwright).

    .venv/bin/python scripts/screenshots.py [--out docs/images]

Runs ``fairwatch demo`` on a free port, waits until the bias against ``muslim`` has fired (about 25 s),
and saves ``live-view.png`` (the top of the toxicity model's page, 1280 px wide) and
``live-view-phone.png``.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="docs/images")
    parser.add_argument("--wait", type=float, default=25.0, help="seconds of demo before the pictures")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        demo = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "monitor.cli",
                "demo",
                "--dir",
                tmp,
                "--port",
                str(port),
                "--duration",
                "120",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(args.wait)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                page.goto(f"http://127.0.0.1:{port}/?model=toxicity&window=1h")
                page.wait_for_timeout(500)
                page.screenshot(path=out / "live-view.png")
                phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2)
                phone.goto(f"http://127.0.0.1:{port}/?model=toxicity&window=1h")
                page.wait_for_timeout(500)
                phone.locator("#m-toxicity-1h-bpsn_auc").scroll_into_view_if_needed()
                phone.screenshot(path=out / "live-view-phone.png")
                browser.close()
        finally:
            demo.terminate()
            demo.wait(timeout=30)
    print(f"wrote {out / 'live-view.png'} and {out / 'live-view-phone.png'}")


if __name__ == "__main__":
    main()
