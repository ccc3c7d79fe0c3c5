"""The web inspector in a real headless Chromium (Debian's, driven by Playwright).

Screenshots go to ``$MEMSTRATA_TEST_ARTIFACTS`` (or the test's temporary directory), never
into the repository. Needs ``/usr/bin/chromium`` (`.ci/install-browser` installs it): in CI a
missing browser fails the test; on a developer machine it skips with that instruction.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import Served

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    out = Path(os.environ.get("MEMSTRATA_TEST_ARTIFACTS") or tmp_path) / "inspector"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _require_browser() -> None:
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: run .ci/install-browser (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _seed(s: Served) -> dict[str, str]:
    h = s.h(s.member)
    c = s.client
    turns = [
        ("user", "Hi, I'm Alice. I live in Lisbon and I work as a nurse."),
        ("assistant", "Nice to meet you, Alice!"),
        ("user", "I am allergic to peanuts, please remember that."),
        ("assistant", "Noted: no peanuts."),
        ("user", "My daughter Lena plays the cello every Saturday."),
        ("assistant", "Lovely."),
    ]
    for session in ("s1", "s2"):
        r = c.post(
            f"/v1/users/alice/sessions/{session}/messages/batch",
            headers=h,
            json={"messages": [{"role": ro, "content": f"{t} ({session})"} for ro, t in turns]},
        )
        assert r.status_code == 201
        assert c.post(f"/v1/users/alice/sessions/{session}/end", headers=h).status_code == 200
    c.post("/v1/users/alice/key-memory", headers=h, json={"text": "Never suggest peanuts"})
    c.post(
        "/v1/users/alice/sessions/s2/task",
        headers=h,
        json={"goal": "Plan Lena's cello recital", "steps": ["book hall", "send invites"]},
    )
    note = c.post(
        "/v1/users/alice/memories", headers=h, json={"content": "Prefers morning appointments"}
    ).json()
    for i in range(25):
        c.post(
            "/v1/users/alice/memories",
            headers=h,
            json={
                "content": f"Trip {i}: Alice visited town number {i} and liked its bakery",
                "dedup": False,
            },
        )
    return {"note": note["id"]}


def test_inspector_shows_layers_search_terms_context_and_edits(
    live_server: Served, artifacts: Path
) -> None:
    _require_browser()
    from playwright.sync_api import expect, sync_playwright

    ids = _seed(live_server)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{live_server.url}/ui/#key={live_server.member}&user=alice&session=s2")
        expect(page.locator("#tenant")).to_contain_text("tenant acme")
        layers = page.locator("#layers")
        expect(layers.locator("table[data-layer=short_term] tbody tr")).to_have_count(6)
        expect(layers.locator("#layer-short_term")).to_contain_text("Lena plays the cello")
        expect(layers.locator("table[data-layer=mid_term] tbody tr").first).to_be_visible()
        expect(layers.locator("table[data-layer=mid_term] th")).to_contain_text(
            ["topic", "members", "hits", "visits", "heat", ""]
        )
        expect(layers.locator("#layer-summaries tbody tr").first).to_be_visible()
        expect(layers.locator("#layer-facts")).to_contain_text("confidence")
        expect(layers.locator("#layer-facts tbody tr").first).to_be_visible()
        expect(layers.locator("#layer-episodes tbody tr").first).to_be_visible()
        expect(layers.locator("#layer-key")).to_contain_text("Never suggest peanuts")
        expect(layers.locator("#layer-tasks")).to_contain_text("Plan Lena's cello recital")
        page.screenshot(path=str(artifacts / "layers.png"), full_page=True)

        page.fill("#query", "peanut allergy")
        page.click("#search-form button")
        first = page.locator("table[data-layer=hits] tbody tr").first
        expect(first).to_be_visible()
        for term in ("lexical_bm25", "dense_cosine", "relevance", "recency", "importance", "final"):
            expect(first.locator(f"[data-term={term}]")).to_have_count(1)
        page.screenshot(path=str(artifacts / "search.png"), full_page=True)

        page.fill("#context-query", "Where did Alice like the bakery?")
        page.fill("#budget", "400")
        page.click("#context-form button")
        expect(page.locator("#context-summary")).to_contain_text("items in")
        expect(page.locator("#context [data-block=key]")).to_contain_text("Never suggest peanuts")
        expect(page.locator("#context [data-block=dropped] li").first).to_be_visible()
        page.screenshot(path=str(artifacts / "context.png"), full_page=True)

        page.locator(f"button[data-record='{ids['note']}']").first.click()
        expect(page.locator("#history li")).to_have_count(1)
        page.fill("#edit-content", "Prefers afternoon appointments")
        page.click("#save")
        expect(page.locator("#history li")).to_have_count(2)
        expect(page.locator("#history li").nth(1)).to_contain_text("afternoon")
        page.click("#delete")
        expect(page.locator("#record-id")).to_contain_text("deleted")
        page.click("#restore")
        expect(page.locator("#record-id")).to_contain_text("active")
        expect(page.locator("#history li")).to_have_count(4)
        page.screenshot(path=str(artifacts / "record.png"), full_page=True)
        assert not errors, errors

        # a key of another tenant sees none of it
        page.goto(f"{live_server.url}/ui/#key={live_server.other}&user=alice&session=s2")
        page.reload()
        expect(page.locator("#tenant")).to_contain_text("tenant globex")
        expect(page.locator("#layers")).not_to_contain_text("Lena")
        expect(page.locator("#counts")).to_contain_text("messages 0")
        browser.close()
    rec = live_server.client.get(
        f"/v1/users/alice/memories/{ids['note']}", headers=live_server.h(live_server.member)
    ).json()
    assert rec["content"]["raw"] == "Prefers afternoon appointments" and rec["status"] == "active"
    assert (artifacts / "layers.png").stat().st_size > 10_000
