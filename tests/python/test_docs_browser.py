"""The built site, loaded in headless Chromium: the home page, an API page and a results page
render with no SEVERE console entry and no broken image.

The site is built strictly into a temporary directory (`mkdocs build --strict -d TMP`) and
served on 127.0.0.1 on a free port. Chromium and its driver are Debian's (chromium,
chromium-driver; `make test` installs them); selenium is given their paths, so Selenium
Manager never looks for or downloads a browser. Screenshots go to build/screenshots/.
Without mkdocs the test is skipped; without chromium or selenium too, except under CI
(CI=true), where a missing browser is a failure: CI is where the site must be seen.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from markdown_blocks import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS = ROOT / "build" / "screenshots"
# (screenshot name, page source under docs/): home, one API reference page, one results page.
PAGES = [("home", "index.md"), ("api-goenv", "api/goenv.md"), ("agents", "agents.md")]


def skip_or_fail_in_ci(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must load the site in a browser (make test installs chromium and chromium-driver)")
    pytest.skip(reason)


def page_url(site: Path, source: str) -> str:
    """The site path of docs/<source> as built: agents.html, or agents/ with directory URLs."""
    stem = source.removesuffix(".md")
    for url, built in ((stem + ".html", stem + ".html"), (stem + "/", stem + "/index.html")):
        if (site / built).is_file():
            return url
    raise AssertionError(f"the site has no page for docs/{source}")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (the docs extra: pip install -e '.[docs]')")
    directory = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(directory)], cwd=ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    return directory


@contextlib.contextmanager
def serving(directory: Path):
    """An HTTP server for `directory` on 127.0.0.1, on a free port; yields its base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        thread.join()


@pytest.fixture(scope="module")
def server(site):
    with serving(site) as url:
        yield url


@pytest.fixture(scope="module")
def browser(monkeypatch_module):
    for program, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not program.is_file():
            skip_or_fail_in_ci(f"{program} is missing (Debian package {package})")
    if importlib.util.find_spec("selenium") is None:
        skip_or_fail_in_ci("selenium is not installed (the test extra)")
    from selenium import webdriver
    from selenium.webdriver.common import selenium_manager

    # Selenium Manager would download a browser or driver; with both paths given it must not run.
    monkeypatch_module.setenv("SE_OFFLINE", "true")

    def no_manager(*args, **kwargs):
        raise AssertionError("Selenium Manager was asked for a browser or driver; the paths are given")

    monkeypatch_module.setattr(selenium_manager.SeleniumManager, "binary_paths", no_manager)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1600"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def problems_on(browser, url: str, screenshot: Path) -> list[str]:
    """Load `url`, save a screenshot once its images have loaded, and list what is wrong: no
    heading in the article, an image with no pixels (naturalWidth 0), a SEVERE console entry."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get_log("browser")  # drop what an earlier page left
    browser.get(url)
    WebDriverWait(browser, 60).until(lambda driver: driver.execute_script("return document.readyState") == "complete")
    # Lazy images below the fold load only when asked to; every image must have loaded or failed.
    browser.execute_script("for (const image of document.images) image.loading = 'eager'")
    WebDriverWait(browser, 60).until(
        lambda driver: driver.execute_script("return Array.from(document.images).every(i => i.complete)"))
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(screenshot))
    problems = []
    if not browser.execute_script("const h = document.querySelector('article h1'); return h && h.textContent"):
        problems.append("no heading in the page's article")
    problems += [f"image did not load: {src}" for src in browser.execute_script(
        "return Array.from(document.images).filter(i => i.naturalWidth === 0).map(i => i.src)")]
    problems += [f"SEVERE console entry: {entry['message']}" for entry in browser.get_log("browser")
                 if entry["level"] == "SEVERE"]
    return problems


@pytest.mark.parametrize("name, source", PAGES, ids=[name for name, _ in PAGES])
def test_site_page_loads_in_chromium(name, source, site, server, browser):
    path = page_url(site, source)
    problems = problems_on(browser, server + path, SCREENSHOTS / f"{name}.png")
    assert not problems, f"{path}:\n" + "\n".join(problems)


def test_a_broken_image_and_a_console_error_are_caught(browser, tmp_path):
    (tmp_path / "page.html").write_text(
        "<html><body><article><h1>A page</h1><img src='missing.png'></article>"
        "<script>console.error('an error the test must see')</script></body></html>")
    with serving(tmp_path) as url:
        problems = problems_on(browser, url + "page.html", tmp_path / "page.png")
    assert any(problem.startswith("image did not load: ") and problem.endswith("/missing.png") for problem in problems)
    assert any("an error the test must see" in problem for problem in problems)
    assert (tmp_path / "page.png").stat().st_size > 0


def test_page_url(tmp_path):
    for built in ("index.html", "agents.html", "api/goenv/index.html"):
        (tmp_path / built).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / built).write_text("<html></html>")
    assert [page_url(tmp_path, source) for source in ("index.md", "agents.md", "api/goenv.md")] == [
        "index.html", "agents.html", "api/goenv/"]
    with pytest.raises(AssertionError, match="no page for docs/limits.md"):
        page_url(tmp_path, "limits.md")


def test_the_browser_is_debians_chromium_through_its_driver(browser):
    assert browser.service.path == str(CHROMEDRIVER)
    version = subprocess.run([str(CHROMIUM), "--version"], capture_output=True, text=True, timeout=60).stdout
    assert browser.capabilities["browserVersion"] in version


def test_a_missing_browser_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is missing"):
        skip_or_fail_in_ci("chromium is missing")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="chromium is missing; CI must load the site"):
        skip_or_fail_in_ci("chromium is missing")
