"""The console in a real headless Chromium against a real `corebox serve`.

One browser for the module, one tab reused by every test; each test opens the console
afresh (so it starts signed out: the key lives in the page's memory only) and ends by
checking that every request the tab made went to corebox's own origin and that the key
is in no URL, cookie or browser storage. Screenshots of every page, at 1280x800 and at a
phone width, are written to build/work/screenshots/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from allinone.core.gateway.workspace_rules import wire_uuid
from allinone.datadir.collection import WORKSPACES_DIR
from tests.api.support import core_key, http, until
from tests.api.test_overlays import running
from tests.api.test_run_control import command, sdk, start
from tests.api.test_run_control import settled as settled_command
from tests.conftest import API_KEY, ROOT, Server, start_server
from tests.support.chromium import Page, chromium, install
from tests.support.wheels import HOLD, hosted

pytestmark = pytest.mark.browser

SHOTS = ROOT / "build" / "work" / "screenshots"
DESKTOP = (1280, 800)
PHONE = (390, 844)
SETTLED = (
    "agent.session.turn.completed",
    "agent.session.turn.failed",
    "agent.session.turn.cancelled",
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    binary = install()
    if binary is None:
        pytest.skip("chromium is not installed and cannot be installed here (needs root + apt-get)")
    with chromium(binary, tmp_path_factory.mktemp("chromium")) as tab:
        yield tab


@pytest.fixture
def page(browser: Page, server: Server) -> Iterator[Page]:
    tab = browser
    tab.resize(*DESKTOP)
    tab.navigate(server.base_url + "/")
    yield tab
    assert_contained(tab, server, [API_KEY, core_key(server.data_dir)])


@pytest.fixture
def client(server: Server) -> Iterator[OpenAI]:
    with OpenAI(
        base_url=server.base_url + "/v1", api_key=API_KEY, max_retries=0, timeout=30
    ) as sdk:
        yield sdk


def assert_contained(tab: Page, server: Server, keys: list[str]) -> None:
    """Every request went to corebox's origin; no key in a URL, cookie or storage."""
    origin = server.base_url + "/"
    foreign = [u for u in tab.requests if not u.startswith((origin, "data:", "blob:"))]
    assert tab.requests and not foreign, foreign
    kept = json.dumps(tab.storage())
    for key in keys:
        assert not any(key in url for url in tab.requests)
        assert key not in kept
    assert tab.exceptions == []


def sign_in(tab: Page, key: str) -> None:
    tab.wait_for("document.querySelector('#key')")
    tab.type_into("#key", key)
    tab.click(".signin-form button[type=submit]")
    tab.wait_for(
        "document.getElementById('app').dataset.state === 'ready' && location.hash !== '#/signin'"
    )


# The tallest a one-line field (an input or a select) may be drawn, in CSS pixels.
FIELD_HEIGHT = 48
TALLEST_FIELD = """Math.max(0, ...[...document.querySelectorAll('input.input, select.input')]
  .filter((field) => field.offsetParent !== null)
  .map((field) => field.getBoundingClientRect().height))"""


# What in the page is wider than the screen, or than the box that holds it (a table's
# wrapper scrolling sideways, a clipped line): each as its tag, class and first text.
SIDEWAYS = """[...document.querySelectorAll('#main *')].filter((el) => {
  const box = el.getBoundingClientRect();
  if (!box.width || el.closest('[hidden]')) return false;
  const clips = getComputedStyle(el).overflowX !== 'visible';
  return box.right > innerWidth + 1 || (clips && el.scrollWidth > el.clientWidth + 1);
}).map((el) => `${el.tagName.toLowerCase()}.${el.className}: ${el.textContent.slice(0, 40)}`)"""


def shoot(tab: Page, name: str) -> None:
    """Screenshots at both widths; at the phone width nothing may overflow sideways (the
    page, or any part of it inside its box), and at either no one-line field is stretched
    taller than a line."""
    tab.screenshot(SHOTS / f"{name}-desktop.png")
    tallest = {"desktop": tab.evaluate(TALLEST_FIELD)}
    tab.resize(*PHONE, mobile=True)
    tab.wait_for(f"innerWidth === {PHONE[0]}")
    overflow = tab.evaluate("document.documentElement.scrollWidth - innerWidth")
    sideways = tab.evaluate(SIDEWAYS)
    tallest["phone"] = tab.evaluate(TALLEST_FIELD)
    tab.screenshot(SHOTS / f"{name}-phone.png")
    tab.resize(*DESKTOP)
    tab.wait_for(f"innerWidth === {DESKTOP[0]}")
    assert overflow <= 0, f"{name} scrolls sideways at {PHONE[0]} px"
    assert sideways == [], f"{name} is wider than its box at {PHONE[0]} px: {sideways}"
    assert max(tallest.values()) <= FIELD_HEIGHT, f"{name} stretches a field: {tallest}"


def idle_session(client: OpenAI, text: str = "ready", **agent: Any) -> str:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted", **agent},
            environment={"type": "none"},
            input=text,
            stream=True,
        )
    )
    assert events[-1].type == "agent.session.idle"  # type: ignore[attr-defined]
    return str(events[0].session.id)  # type: ignore[attr-defined]


def send(client: OpenAI, session_id: str, text: str) -> None:
    message = {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }
    client.beta.agents.sessions.events.create(session_id, events=[message])  # type: ignore[list-item]


# No part of the page is still loading.
LOADED = (
    "![...document.querySelectorAll('#main p.muted')]"
    ".some(p => p.textContent.startsWith('Loading'))"
)


def settled(live: Any) -> Any:
    """The event that settled the turn, read from an SDK event stream."""
    for event in live:
        if event.type in SETTLED:
            return event
    raise AssertionError("the stream ended before the turn settled")


def says(text: str) -> str:
    """A JS test: an assistant message in the transcript reads exactly `text`."""
    return (
        "[...document.querySelectorAll('.msg.assistant .msg-text')]"
        f".some(n => n.textContent === {json.dumps(text)})"
    )


def open_session(tab: Page, session_id: str) -> None:
    tab.evaluate(f"location.hash = '#/sessions/{session_id}'")
    tab.wait_for("document.querySelector('.stream-state .live')")


def test_core_serves_the_console_without_a_key(server: Server) -> None:
    status, _, headers = http(server.base_url, "GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    policy = headers["content-security-policy"]
    assert "connect-src 'self'" in policy and "default-src 'none'" in policy
    status, _, headers = http(server.base_url, "GET", "/console/app.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    status, body, _ = http(server.base_url, "GET", "/console/missing.js")
    assert status == 404 and body["error"]["type"] == "not_found_error"
    status, _, _ = http(server.base_url, "GET", "/console/../allinone/app.py")
    assert status == 404


def test_a_wrong_key_is_refused_and_a_project_key_signs_in(page: Page) -> None:
    page.wait_for("document.querySelector('.signin-card')")
    shoot(page, "signin")
    page.type_into("#key", "not-a-key")
    page.click(".signin-form button[type=submit]")
    page.wait_for("document.querySelector('.signin-form [role=alert]:not([hidden])')")
    sign_in(page, API_KEY)
    assert page.evaluate("location.hash") == "#/sessions"
    assert page.evaluate("document.querySelector('#key')") is None


def test_the_session_list_names_each_session_by_its_title_or_first_message(
    page: Page, client: OpenAI
) -> None:
    trip = idle_session(client, "/say Booked.\nPlan a trip to Lisbon\nin May")
    titled = client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment={"type": "none"},
        input="Draft the report",
        metadata={"title": "Q3 report"},
    ).id
    later = client.beta.agents.sessions.create(  # a workspace session may start empty
        agent={"model": "scripted"}, environment={"type": "openai_hosted"}
    ).id
    named = (
        "Object.fromEntries([...document.querySelectorAll('.table .link-row')].map((row) =>"
        " [row.querySelector('code').textContent,"
        " (row.querySelector('.cell-main strong') || {}).textContent || '']))"
    )
    sign_in(page, API_KEY)
    page.wait_for(f"document.body.textContent.includes({json.dumps(later)})")
    page.wait_for("document.querySelector('.cell-main strong')")
    shown = page.evaluate(named)
    # The first line that is not a directive; a title wins; no message yet, no name.
    assert (shown[trip], shown[titled], shown[later]) == ("Plan a trip to Lisbon", "Q3 report", "")
    # A first message sent later names it at a later refresh.
    send(client, later, "Summarise the incident")
    page.wait_for(f"({named})[{json.dumps(later)}] === 'Summarise the incident'")


def test_a_new_session_starts_from_its_first_message(page: Page) -> None:
    sign_in(page, API_KEY)
    page.evaluate(
        "[...document.querySelectorAll('button')].find(b => b.textContent === 'New session')"
        ".click()"
    )
    field = "document.querySelector('[aria-label=\"First message\"]')"
    # Without a workspace the API needs a first message: the form asks for one.
    assert page.evaluate(f"{field}.required") is True
    page.type_into('[aria-label="First message"]', "Hello there")
    page.click("form.inline-form button[type=submit]")
    page.wait_for("location.hash.startsWith('#/sessions/sess_')")
    page.wait_for(says("Hello there"))
    assert page.evaluate("document.querySelector('h1').textContent") == "Hello there"


def test_streamed_text_appears_and_clicking_approve_completes_the_turn(
    page: Page, client: OpenAI
) -> None:
    sign_in(page, API_KEY)
    session_id = idle_session(client)
    open_session(page, session_id)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(
            client,
            session_id,
            "/say Streaming to the console\n/permission shell run the tests\n/say {decision}",
        )
        for event in live:
            if event.type == "agent.session.turn.output_text.delta":
                # The page shows the streamed text (how soon is a figure for a benchmark,
                # not a bound a loaded test machine could break).
                page.wait_for("document.body.innerText.includes('Streaming')")
            if event.type == "agent.session.requires_action":
                break
        page.wait_for("document.querySelector('[data-action=permission] .approve')")
        page.click("[data-action=permission] .approve")
        # Bounded by the page's deadline; then the SDK's stream already holds the end.
        page.wait_for(says("approved"))
        event = settled(live)
    assert event.type == "agent.session.turn.completed"
    page.wait_for("!document.querySelector('[data-action=permission]')")
    items = client.beta.agents.sessions.items.list(session_id, order="desc", limit=1).data
    assert items[0].content[0].text == "approved"  # type: ignore[union-attr]


def test_a_choice_is_answered_by_clicking_an_option(page: Page, client: OpenAI) -> None:
    sign_in(page, API_KEY)
    session_id = idle_session(client)
    open_session(page, session_id)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, "/choose Which colour? | red | blue\n/say {choice}")
        page.wait_for("document.querySelector('[data-action=choice] [data-label=blue]')")
        # The running turn can be cancelled or paused, and the finished turn before it
        # forked; rewind and resume are not offered while a turn runs.
        page.wait_for("document.querySelector('[data-control=cancel]')")
        page.wait_for("document.querySelector('[data-control=pause]')")
        shown = page.evaluate(
            "[...document.querySelectorAll('[data-control]')].map((b) => b.dataset.control)"
        )
        assert sorted(shown) == ["cancel", "fork", "pause"]
        shoot(page, "session-choice")
        page.click("[data-action=choice] [data-label=blue]")
        page.click("[data-action=choice] .button.primary")
        page.wait_for(says("blue"))
        event = settled(live)
    assert event.type == "agent.session.turn.completed"


def test_a_function_result_and_a_message_are_sent_from_the_page(page: Page, client: OpenAI) -> None:
    tool = {
        "type": "function",
        "name": "lookup",
        "description": "Look something up.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    }
    sign_in(page, API_KEY)
    session_id = idle_session(client, tools=[tool])
    open_session(page, session_id)
    page.type_into(".composer textarea", "/call lookup {}\n/say result: {result}")
    page.click(".composer button[type=submit]")
    page.wait_for("document.querySelector('[data-action=function] textarea')")
    page.type_into("[data-action=function] textarea", "forty-two")
    page.click("[data-action=function] .button.primary")
    shown = page.wait_for(
        "document.querySelector('.turn:last-child .badge[data-status=completed]')"
        " && document.querySelector("
        "'.turn:last-child .msg.assistant[data-status=completed] .msg-text').textContent"
    )
    shoot(page, "session-function")
    turns = client.beta.agents.sessions.turns.list(session_id).data
    assert turns[0].status == "completed"
    items = client.beta.agents.sessions.items.list(session_id, order="desc", limit=3).data
    assert [i.type for i in items] == ["message", "function_call_output", "function_call"]
    assert shown == items[0].content[0].text  # type: ignore[union-attr]
    assert "forty-two" in shown


def test_every_page_renders_at_both_widths(page: Page, client: OpenAI, server: Server) -> None:
    session_id = idle_session(
        client,
        "/think Planning the answer\n/command pytest -q\n/say Here is what I found.\n/usage 120 48",
    )
    agent = client.beta.agents.create(model="scripted", name="Greeter", instructions="Say hello.")
    client.beta.agents.automations.create(
        type="periodic",
        name="Morning digest",
        expression="30 7 * * 1-5",
        timezone="Europe/Paris",
        target={"type": "existing_session", "session_id": session_id, "instructions": "digest"},
    )
    owner = {"Authorization": f"Bearer {API_KEY}"}
    status, role, _ = http(
        server.base_url, "POST", "/core/v1/comms/roles", {"name": "reviewer"}, owner
    )
    assert status == 200, role
    path = f"/core/v1/comms/roles/{role['id']}/instances"
    assert http(server.base_url, "POST", path, {"name": "reviewer-1"}, owner)[0] == 200
    sign_in(page, API_KEY)
    page.wait_for("document.querySelector('.table .link-row')")
    shoot(page, "sessions")
    open_session(page, session_id)
    page.wait_for("document.querySelector('.command') && document.querySelector('.reasoning')")
    send(
        client,
        session_id,
        "/say Before I run it:\n/permission shell Run the test suite\n/say {decision}",
    )
    page.wait_for("document.querySelector('[data-action=permission] .approve')")
    page.wait_for("document.querySelector('.timeline') && document.querySelector('.usage')")
    shoot(page, "session")
    page.click("[data-action=permission] .approve")
    page.wait_for(says("approved"))
    for name, ready in [
        ("agents", ".table .link-row"),
        ("automations", ".invocations"),
        ("contacts", ".card h3"),
        ("overview", ".check-grid"),
    ]:
        page.evaluate(f"location.hash = '#/{name}'")
        page.wait_for(f"document.getElementById('main').dataset.page === '{name}'")
        page.wait_for(f"document.querySelector('{ready}') && {LOADED}")
        shoot(page, name)
        if name == "automations":
            # Run now: the invocation appears under the automation.
            page.click(".card .button.secondary")
            page.wait_for("document.querySelector('.invocation a[href^=\"#/sessions/\"]')")
    page.evaluate(f"location.hash = '#/agents/{agent.id}'")
    page.wait_for("document.querySelector('.facts') && document.querySelector('.prose')")
    shoot(page, "agent")
    page.evaluate("location.hash = '#/signin'")
    sign_in(page, core_key(server.data_dir))
    page.evaluate("location.hash = '#/owner'")
    page.wait_for(
        "document.querySelector('.table') && document.querySelectorAll('.card').length >= 2"
    )
    shoot(page, "owner")
    page.evaluate("location.hash = '#/overview'")
    page.wait_for("document.querySelector('.matrix') && document.querySelector('.runtime')")
    shoot(page, "overview-owner")


def test_long_unbroken_text_is_broken_or_shortened_at_phone_width(
    page: Page, client: OpenAI, server: Server, tmp_path: Path
) -> None:
    long = "LONGWORD" * 400  # one word, wider than any screen
    name = "AGENTNAME" * 7
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    first = f"{long}\n{'lorem ipsum ' * 2000}"
    idle_session(client, first)  # named after its first line, cut to 72 characters
    client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment={"type": "none"},
        input="titled",
        metadata={"title": "TITLE" * 100},  # a title is shown whole
    )
    script = (
        f"/think {long[:600]}\n/command echo {long[:600]}\n"
        f"/write outputs/{'x' * 200}.txt done\n/say {long[:600]}"
    )
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "self_hosted", "workspace_directory": str(workspace)},
            input=script,
            stream=True,
        )
    )
    session_id = events[0].session.id  # type: ignore[attr-defined]
    client.beta.agents.create(model="scripted", name=name)
    own_project(server, "PROJECTNAME" * 10)
    sign_in(page, API_KEY)
    page.wait_for("document.querySelectorAll('.table .link-row').length >= 3")
    shoot(page, "sessions-long")
    open_session(page, session_id)
    page.wait_for("document.querySelector('.command') && document.querySelector('.file-list')")
    shoot(page, "session-long")
    page.evaluate("location.hash = '#/agents'")
    page.wait_for(f"document.querySelector('.table .link-row') && {LOADED}")
    shoot(page, "agents-long")
    page.evaluate("location.hash = '#/signin'")
    sign_in(page, core_key(server.data_dir))
    page.evaluate("location.hash = '#/owner'")
    named = "[...document.querySelectorAll('.card h2')].some(h => h.textContent.length > 100)"
    page.wait_for(f"{named} && {LOADED}")
    shoot(page, "owner-long")


@pytest.mark.parametrize(
    ("route", "said", "back"),
    [
        (
            "#/sessions/sess_doesnotexist",
            "No session sess_doesnotexist in this project.",
            "#/sessions",
        ),
        ("#/agents/agent_nope", "No agent agent_nope in this project.", "#/agents"),
        ("#/environments/env_nope", "No environment env_nope in this project.", "#/environments"),
        (
            "#/automations/auto_nope",
            "The console has no page #/automations/auto_nope.",
            "#/automations",
        ),
        ("#/nonsense/page", "The console has no page #/nonsense/page.", "#/sessions"),
    ],
)
def test_what_does_not_exist_shows_a_not_found_page_with_a_link_back(
    page: Page, route: str, said: str, back: str
) -> None:
    sign_in(page, API_KEY)
    page.evaluate(f"location.hash = {json.dumps(route)}")
    page.wait_for("document.querySelector('.not-found')")
    assert page.evaluate("document.querySelector('.not-found h1').textContent") == "Not found"
    assert page.evaluate("document.querySelector('.not-found p').textContent") == said
    link = "document.querySelector('.not-found a').getAttribute('href')"
    assert page.evaluate(link) == back
    # Nothing that would act on what is not there: no composer, no transcript, no list.
    shown = "document.querySelector('.composer, .transcript, .table, .session-page, .card')"
    assert page.evaluate(f"!{shown}")
    if route.startswith("#/sessions/"):
        shoot(page, "session-not-found")
    page.click(".not-found a")
    page.wait_for(f"document.getElementById('main').dataset.page === {json.dumps(back[2:])}")


def test_a_rewound_turn_is_marked_hidden_from_the_model(page: Page, client: OpenAI) -> None:
    sign_in(page, API_KEY)
    session_id = idle_session(client, "first")
    open_session(page, session_id)
    send(client, session_id, "second")
    page.wait_for(says("second"))
    page.wait_for("document.querySelector('[data-control=rewind]')")
    assert page.evaluate("document.querySelectorAll('.turn-hidden').length") == 0
    page.click("[data-control=rewind]")
    page.wait_for("document.querySelector('.turn-hidden')")
    session = client.beta.agents.sessions.retrieve(session_id)
    hidden = session.model_extra["x_corebox"]["hidden_turn_ids"]  # type: ignore[index]
    marked = "[...document.querySelectorAll('.turn.hidden-turn')].map((s) => s.dataset.turnId)"
    assert len(hidden) == 1
    # The second turn is marked, not the first: the model no longer sees it, the history
    # still shows it.
    assert page.evaluate(marked) == hidden
    assert page.evaluate("document.querySelectorAll('section.turn').length") == 2
    shoot(page, "session-rewound")
    # Opened afresh, the page marks it from the stored session.
    page.evaluate("location.hash = '#/sessions'")
    page.wait_for("!document.querySelector('section.turn')")
    open_session(page, session_id)
    page.wait_for("document.querySelector('.turn-hidden')")
    assert page.evaluate(marked) == hidden


def test_clicking_cancel_cancels_the_running_turn(page: Page, client: OpenAI) -> None:
    sign_in(page, API_KEY)
    session_id = idle_session(client)
    open_session(page, session_id)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, "/say Waiting for you\n/hang")
        page.wait_for(says("Waiting for you"))
        page.click("[data-control=cancel]")
        page.wait_for("document.querySelector('.turn:last-child .badge[data-status=cancelled]')")
        event = settled(live)
    assert event.type == "agent.session.turn.cancelled"
    page.wait_for("!document.querySelector('[data-control=cancel]')")


def test_clicking_pause_shows_the_turn_paused_until_resume_is_clicked(
    page: Page, client: OpenAI, server: Server
) -> None:
    badges = (
        "[...document.querySelectorAll('.session-title .badge, .turn .badge')]"
        ".map(b => b.dataset.status)"
    )
    run_status = (
        "[...document.querySelectorAll('.session-side .facts dt')]"
        ".find(dt => dt.textContent === 'Status').nextElementSibling.textContent"
    )
    line = "document.querySelector('.stream-state').textContent"
    session_id = start(client, "/say Waiting for you\n/hang")
    ended = False
    try:
        sign_in(page, API_KEY)
        open_session(page, session_id)
        page.wait_for("document.querySelector('[data-control=pause]')")
        page.click("[data-control=pause]")
        # The status line says what became of the command once it settled, beside Live.
        page.wait_for(f"{line} === 'Live · pause applied'")
        # The pause arrives as the turn's phase; the page follows it without a reload:
        # the session and the turn read paused, Resume replaces Pause, the composer says
        # what a message does now.
        page.wait_for("document.querySelector('[data-control=resume]')")
        page.wait_for(f"({badges}).join() === 'paused,paused'")
        assert page.evaluate("document.querySelector('[data-control=pause]')") is None
        hint = page.evaluate("document.querySelector('.composer-hint').textContent")
        assert hint.startswith("The turn is paused: your message steers it once it resumes")
        # The run state panel says both: the API's status and the pause that holds it.
        page.wait_for(f"{run_status} === 'in progress · paused'")
        shoot(page, "session-paused")
        # The session list says so too (the session itself is still in progress).
        page.evaluate("location.hash = '#/sessions'")
        row = (
            "[...document.querySelectorAll('.link-row')]"
            f".find(r => r.textContent.includes('{session_id}'))"
        )
        page.wait_for(f"{row} && {row}.querySelector('.badge').dataset.status === 'paused'")
        open_session(page, session_id)
        page.wait_for("document.querySelector('[data-control=resume]')")
        page.click("[data-control=resume]")
        page.wait_for("document.querySelector('[data-control=pause]')")
        page.wait_for(f"({badges}).join() === 'in_progress,in_progress'")
        page.wait_for(f"{run_status} === 'in progress'")
        page.wait_for(f"{line} === 'Live · resume applied'")
        # A cancel through the API ends the turn: the line is back to the live state.
        ended = True
        cancelled = command(server, session_id, "cancel")
        page.wait_for("document.querySelector('.turn .badge[data-status=cancelled]')")
        page.wait_for(f"{line} === 'Live'")
    finally:
        if not ended:
            cancelled = command(server, session_id, "cancel")
        assert settled_command(server, cancelled.json()["id"])["status"] == "applied"


def check_shown(name: str, text: str) -> str:
    """A JS test: the overview's readiness row `name` reads exactly `text`."""
    return (
        "[...document.querySelectorAll('.check')].some(c =>"
        f" c.querySelector('.check-name').textContent === {json.dumps(name)} &&"
        f" c.querySelector('.check-detail').textContent === {json.dumps(text)})"
    )


def test_the_overview_counts_the_turns_in_hand_and_those_paused(
    page: Page, client: OpenAI, server: Server
) -> None:
    owner = {"Authorization": f"Bearer {core_key(server.data_dir)}"}

    def in_hand() -> dict[str, int]:
        status, ready, _ = http(server.base_url, "GET", "/readyz", headers=owner)
        assert status == 200, ready
        figures: dict[str, int] = ready["checks"]["turns"]
        return figures

    session_id = start(client, "/say Waiting for you\n/hang")
    try:
        sign_in(page, core_key(server.data_dir))
        page.evaluate("location.hash = '#/overview'")
        now = in_hand()
        assert now["active"] >= 1 and now["paused"] == 0
        page.wait_for(check_shown("turns", f"{now['active']} active · {now['queued']} queued"))
        paused = command(server, session_id, "pause")
        assert settled_command(server, paused.json()["id"])["status"] == "applied"
        now = in_hand()
        assert now["paused"] == 1
        shown = f"{now['active']} active · {now['queued']} queued · 1 of them paused"
        page.wait_for(check_shown("turns", shown))  # the page refreshes on its own
        shoot(page, "overview-paused")
        resumed = command(server, session_id, "resume")
        assert settled_command(server, resumed.json()["id"])["status"] == "applied"
        now = in_hand()
        page.wait_for(check_shown("turns", f"{now['active']} active · {now['queued']} queued"))
    finally:
        cancelled = command(server, session_id, "cancel")
        assert settled_command(server, cancelled.json()["id"])["status"] == "applied"


def test_draining_from_the_overview_asks_first_and_shows_on_its_readiness_row(
    browser: Page, tmp_path: Path
) -> None:
    own = start_server(tmp_path / "data")  # a drained server claims nothing until restarted
    browser.requests.clear()  # the shared server's page checked its own on teardown
    suspended = "1 active · 0 queued · 1 of them suspended at a checkpoint"
    try:
        with sdk(own) as own_client:
            stopped = start(own_client, "/say Waiting for you\n/hang")  # a drain suspends it
        browser.navigate(own.base_url + "/")
        sign_in(browser, core_key(own.data_dir))
        browser.evaluate("location.hash = '#/overview'")
        browser.wait_for(check_shown("drain", "ok") + " && " + check_shown("overlays", "none"))
        browser.click("[data-drain=ask]")  # asks first: a drain lasts until a restart
        browser.wait_for("!document.querySelector('[data-drain=confirm]').hidden")
        browser.click("[data-drain=keep]")
        browser.wait_for("!document.querySelector('[data-drain=ask]').hidden")
        assert http(own.base_url, "GET", "/readyz")[0] == 200  # nothing was drained
        browser.click("[data-drain=ask]")
        browser.wait_for("!document.querySelector('[data-drain=confirm]').hidden")
        shoot(browser, "overview-drain-asks")
        browser.click("[data-drain=confirm]")
        browser.wait_for(check_shown("drain", "draining"))
        notice = "document.querySelector('.check-grid ~ .notice.error').textContent"
        assert browser.evaluate(notice) == "Not ready: drain"
        status, ready, _ = http(own.base_url, "GET", "/readyz")
        assert status == 503 and ready["status"] == "draining"
        browser.wait_for(check_shown("turns", suspended))  # the page refreshes on its own
        shoot(browser, "overview-draining")
        browser.navigate(own.base_url + "/")  # reloaded, it does not offer Drain again
        sign_in(browser, core_key(own.data_dir))
        browser.evaluate("location.hash = '#/overview'")
        browser.wait_for(check_shown("drain", "draining"))
        browser.wait_for("document.querySelector('[data-drain=draining]')")
        browser.wait_for(check_shown("turns", suspended))
        assert browser.evaluate("document.querySelector('[data-drain=ask]')") is None
        shoot(browser, "overview-draining-reloaded")
        # The session pages say what the drain does to their turns: the one it stopped
        # and one started since wait for a restart, and a message waits with them.
        with sdk(own) as own_client:
            queued = own_client.beta.agents.sessions.create(
                agent={"model": "scripted"}, environment={"type": "none"}, input="hello"
            ).id
        browser.evaluate("location.hash = '#/signin'")
        sign_in(browser, API_KEY)
        open_session(browser, stopped)
        browser.wait_for(f"({HELD_BY}).startsWith('corebox is draining')")
        assert "continues from its checkpoint when corebox restarts" in browser.evaluate(HELD_BY)
        assert browser.evaluate(HINT).startswith("The turn is held until corebox restarts")
        shoot(browser, "session-draining")
        open_session(browser, queued)
        browser.wait_for(f"({HELD_BY}).startsWith('corebox is draining')")
        assert "queued: it starts when corebox restarts" in browser.evaluate(HELD_BY)
        assert browser.evaluate(HINT).startswith("The turn is queued: your message joins")
        assert (
            browser.evaluate("document.querySelector('.composer [type=submit]').textContent")
            == "Send"
        )
        shoot(browser, "session-queued-draining")
        assert_contained(browser, own, [API_KEY, core_key(own.data_dir)])
    finally:
        browser.navigate("about:blank")  # nothing of this server's pages asks on
        browser.requests.clear()
        own.stop()


def key_row(name: str) -> str:
    """A JS expression: the owner page's table row of the key named `name`."""
    return (
        "[...document.querySelectorAll('tr')].find(r =>"
        f" r.querySelector('strong')?.textContent === {json.dumps(name)})"
    )


def pick_kind(page: Page, kind: str) -> None:
    """Choose `kind` in the owner page's overlay form, as a person's choice does."""
    page.evaluate(
        f"(s => {{ s.value = {json.dumps(kind)}; s.dispatchEvent(new Event('change')); }})"
        "(document.querySelector('select[aria-label=Kind]'))"
    )


def own_project(server: Server, name: str) -> tuple[dict[str, str], dict[str, Any]]:
    """The Core key's headers, and a project of the test's own, whatever the shared
    server's other projects are."""
    owner = {"Authorization": f"Bearer {core_key(server.data_dir)}"}
    status, project, _ = http(server.base_url, "POST", "/core/v1/projects", {"name": name}, owner)
    assert status == 200, project
    return owner, project


def overlay_row(project_id: str) -> str:
    """The owner page's row of the overlay set on `project_id` (a script expression)."""
    return (
        "[...document.querySelectorAll('table[aria-label=Overlays] tbody tr')].find(r =>"
        f" r.querySelector('[title={project_id}]'))"
    )


def project_client(server: Server, owner: dict[str, str], project: dict[str, Any]) -> OpenAI:
    """The SDK with a new key of `project`."""
    keys = f"/core/v1/projects/{project['id']}/api_keys"
    status, key, _ = http(server.base_url, "POST", keys, {"name": "test"}, owner)
    assert status == 200, key
    return OpenAI(base_url=server.base_url + "/v1", api_key=key["key"], max_retries=0)


def test_revoking_a_key_on_the_owner_page_asks_first_and_the_key_stops_working(
    page: Page, server: Server
) -> None:
    owner, project = own_project(server, "Workshop")
    keys = f"/core/v1/projects/{project['id']}/api_keys"
    status, made, _ = http(server.base_url, "POST", keys, {"name": "workshop-laptop"}, owner)
    assert status == 200, made
    assert http(server.base_url, "POST", keys, {"name": "demo-projector"}, owner)[0] == 200
    used = OpenAI(base_url=server.base_url + "/v1", api_key=made["key"], max_retries=0)
    used.beta.agents.list()
    row = key_row("workshop-laptop")
    wrap = f"{row}.closest('.table-wrap')"
    sideways = f"{wrap}.scrollWidth - {wrap}.clientWidth"

    def button(tr: str, step: str) -> str:
        return f"{tr}.querySelector('[data-revoke={step}]')"

    def ask(tr: str) -> None:  # Revoke, then the question with its two buttons side by side
        page.evaluate(f"{button(tr, 'ask')}.click()")
        page.wait_for(f"!{button(tr, 'confirm')}.hidden")
        assert page.evaluate(
            f"{button(tr, 'confirm')}.offsetTop === {button(tr, 'keep')}.offsetTop"
        )

    sign_in(page, core_key(server.data_dir))
    page.evaluate("location.hash = '#/owner'")
    page.wait_for(f"{row}?.querySelector('[data-revoke=ask]')")
    ask(row)  # asks first
    question = page.evaluate(f"{row}.querySelector('.ask-status').textContent")
    assert "workshop-laptop" in question and "cannot be restored" in question
    page.evaluate(f"{button(row, 'keep')}.click()")
    page.wait_for(f"!{button(row, 'ask')}.hidden")
    used.beta.agents.list()  # kept
    ask(row)
    assert page.evaluate(sideways) <= 0, "the keys' table scrolls sideways while it asks"
    shoot(page, "owner-revoke-asks")
    page.evaluate(f"{button(row, 'confirm')}.click()")
    page.wait_for(f"{row}?.querySelector('.badge[data-status=revoked]')")
    assert page.evaluate(f"{row}.querySelector('[data-revoke]')") is None
    assert page.evaluate(sideways) <= 0, "the keys' table scrolls sideways with a revoked key"
    shoot(page, "owner-revoked")
    other = key_row("demo-projector")  # asking beside a revoked key fits as well
    ask(other)
    assert page.evaluate(sideways) <= 0, "the keys' table scrolls sideways while it asks"
    page.evaluate(f"{button(other, 'keep')}.click()")
    with used, pytest.raises(openai.AuthenticationError):
        used.beta.agents.list()
    assert_contained(page, server, [made["key"]])


@pytest.mark.parametrize("where", ["sessions", "session"])
def test_a_key_revoked_while_the_console_uses_it_signs_the_tab_out_and_says_why(
    page: Page, server: Server, where: str
) -> None:
    owner, project = own_project(server, "Revoked")
    keys = f"/core/v1/projects/{project['id']}/api_keys"
    status, made, _ = http(server.base_url, "POST", keys, {"name": "tab"}, owner)
    assert status == 200, made
    client = OpenAI(base_url=server.base_url + "/v1", api_key=made["key"], max_retries=0)
    session_id = idle_session(client)
    sign_in(page, made["key"])
    if where == "session":
        open_session(page, session_id)  # its live stream is what learns of it first
    else:
        page.wait_for(f"document.body.textContent.includes({json.dumps(session_id)})")
    revoke = f"{keys}/{made['id']}/revoke"
    assert http(server.base_url, "POST", revoke, {}, owner)[0] == 200
    # The next request with the key (the list's refresh, the stream's reconnection) is
    # refused: the tab forgets the key and says why, instead of retrying it for good.
    page.wait_for("location.hash === '#/signin' && document.querySelector('.key-dropped')")
    said = page.evaluate("document.querySelector('.key-dropped').textContent")
    assert said.startswith("corebox no longer accepts the project key this tab signed in with")
    assert page.evaluate("document.getElementById('app').dataset.state") == "signin"
    shoot(page, "signin-key-dropped")
    assert_contained(page, server, [made["key"]])


def test_an_overlay_added_on_the_owner_page_shows_its_value_and_asks_before_it_is_removed(
    page: Page, server: Server
) -> None:
    owner, project = own_project(server, "Overlays")

    def active() -> list[dict[str, Any]]:
        status, listed, _ = http(server.base_url, "GET", "/core/v1/overlays", headers=owner)
        assert status == 200, listed
        found: list[dict[str, Any]] = listed["data"]
        return [o for o in found if o["project_id"] == project["id"]]

    row = overlay_row(project["id"])

    def button(step: str) -> str:
        return f"{row}.querySelector('[data-remove={step}]')"

    sign_in(page, core_key(server.data_dir))
    page.evaluate("location.hash = '#/owner'")
    page.wait_for("document.querySelector('select[aria-label=Kind]')")
    form = "document.querySelector('form[aria-label=\\'Add an overlay\\']')"
    # A kind whose values are fixed offers exactly those the server's request body takes,
    # as its document states them (the document sorts them); a tool's name is typed.
    status, spec, _ = http(server.base_url, "GET", "/openapi.json")
    assert status == 200
    schemas = spec["components"]["schemas"]
    offered = "[...document.querySelectorAll('select[aria-label=Value] option')].map(o => o.value)"
    for kind, body in (("kill_switch", "KillSwitchBody"), ("egress", "EgressBody")):
        pick_kind(page, kind)
        expected = schemas[body]["properties"]["value"]["enum"]
        assert sorted(page.evaluate(offered)) == sorted(expected), kind
    pick_kind(page, "tool_disabled")
    assert page.evaluate("document.querySelector('input[aria-label=Value]') !== null")
    page.type_into("input[aria-label=Project]", project["id"])
    page.type_into("input[aria-label=Reason]", "workshop: no shell")
    assert page.evaluate(f"{form}.checkValidity()") is False  # no value: not sent at all
    # A blank tool name (sent trimmed, so empty) is refused beside the form and adds nothing.
    page.type_into("input[aria-label=Value]", "   ")
    page.click("form[aria-label='Add an overlay'] button[type=submit]")
    page.wait_for(f"{form}.querySelector('.action-status').textContent")
    refused = page.evaluate(f"{form}.querySelector('.action-status').textContent")
    assert refused == "Invalid request: Expected `str` of length >= 1. Field: value.", refused
    assert active() == []
    page.evaluate("document.querySelector('input[aria-label=Value]').value = ''")
    page.type_into("input[aria-label=Value]", " run_command")  # sent trimmed
    page.click("form[aria-label='Add an overlay'] button[type=submit]")
    page.wait_for(f"{row}?.querySelector('[data-remove=ask]')")
    assert page.evaluate(f"{form}.querySelector('.action-status').textContent") == ""
    assert page.evaluate(f"{form}.querySelector('[aria-label=Reason]').value") == ""  # added
    # The reset form is back on its first kind, and offers that kind's values again.
    assert page.evaluate("document.querySelector('select[aria-label=Kind]').value") == "kill_switch"
    assert page.evaluate(offered) == ["pause", "cancel"]  # the gentler first
    [added] = active()
    assert (added["kind"], added["value"], added["reason"]) == (
        "tool_disabled",
        "run_command",
        "workshop: no shell",
    )
    kind = page.evaluate(f"{row}.querySelector('td').textContent")
    assert "tool disabled" in kind.replace("_", " ") and "run_command" in kind
    page.evaluate(f"{button('ask')}.click()")  # asks first
    page.wait_for(f"!{button('confirm')}.hidden")
    question = page.evaluate(f"{row}.querySelector('.ask-status').textContent")
    assert question == "Remove the block on run_command? Turns that start from now on may call it."
    page.evaluate(f"{button('keep')}.click()")
    page.wait_for(f"!{button('ask')}.hidden")
    assert [o["id"] for o in active()] == [added["id"]]  # kept
    page.evaluate(f"{button('ask')}.click()")
    page.wait_for(f"!{button('confirm')}.hidden")
    assert page.evaluate(f"{button('confirm')}.offsetTop === {button('keep')}.offsetTop")
    wrap = f"{row}.closest('.table-wrap')"
    assert page.evaluate(f"{wrap}.scrollWidth - {wrap}.clientWidth") <= 0, "it scrolls sideways"
    shoot(page, "owner-overlay-remove-asks")
    page.evaluate(f"{button('confirm')}.click()")
    page.wait_for(f"!{row}")
    assert active() == []
    status, every, _ = http(server.base_url, "GET", "/core/v1/overlays?all=1", headers=owner)
    assert status == 200, every
    [cleared] = [o for o in every["data"] if o["id"] == added["id"]]  # kept, marked cleared
    assert cleared["cleared_at"] is not None
    assert_contained(page, server, [])


@dataclass
class Held:
    """A project's running session that a pause kill switch (`kill`) has paused."""

    owner: dict[str, str]
    project: dict[str, Any]
    client: OpenAI
    session: Any
    kill: dict[str, Any]


def paused_by_a_switch(server: Server, name: str, script: str) -> Held:
    owner, project = own_project(server, name)
    client = project_client(server, owner, project)
    session = running(client, script)
    body = {"kind": "kill_switch", "value": "pause", "project_id": project["id"], "reason": "r"}
    status, kill, _ = http(server.base_url, "POST", "/core/v1/overlays", body, owner)
    assert status == 200, kill

    def phase() -> Any:
        turn = client.beta.agents.sessions.turns.list(session.id, limit=1).data[0]
        return turn.x_corebox["phase"]  # type: ignore[attr-defined]

    until(lambda: phase() == "paused", 60)
    return Held(owner, project, client, session, kill)


def test_a_pause_kill_switch_can_be_removed_with_the_turns_it_paused_resumed(
    page: Page, server: Server
) -> None:
    held = paused_by_a_switch(server, "Paused by a switch", "/say a\n/sleep 1500\n/say b")
    project, client, session = held.project, held.client, held.session

    def turn() -> Any:
        return client.beta.agents.sessions.turns.list(session.id, limit=1).data[0]

    row = overlay_row(project["id"])

    def button(step: str) -> str:
        return f"{row}.querySelector('[data-remove={step}]')"

    sign_in(page, core_key(server.data_dir))
    page.evaluate("location.hash = '#/owner'")
    page.wait_for(f"{row}?.querySelector('[data-remove=ask]')")
    page.evaluate(f"{button('ask')}.click()")
    page.wait_for(f"!{button('also')}.hidden")
    assert page.evaluate(f"{button('also')}.textContent") == "Remove and resume"
    question = page.evaluate(f"{row}.querySelector('.ask-status').textContent")
    assert question == (
        "Remove this kill switch (pause)? New input is accepted and queued turns run again."
        " Turns it paused stay paused, unless you also resume them."
    )
    wrap = f"{row}.closest('.table-wrap')"
    assert page.evaluate(f"{wrap}.scrollWidth - {wrap}.clientWidth") <= 0, "it scrolls sideways"
    shoot(page, "owner-kill-switch-remove-and-resume")
    page.evaluate(f"{button('also')}.click()")
    page.wait_for(f"!{row}")
    # The row is gone; what the removal did is said under the list.
    told = "document.querySelector('.overlay-told').textContent"
    assert page.evaluate(told) == "Kill switch (pause): Removed; 1 turn resumed."
    shoot(page, "owner-kill-switch-removed-and-resumed")
    until(lambda: turn().status == "completed", 60)
    root = server.base_url
    listed = client.get(f"{root}/x/v1/sessions/{session.id}/commands", cast_to=object)
    actions = [(c["action"], c["actor"]) for c in listed["data"]]  # type: ignore[index]
    assert actions == [("pause", "kill_switch"), ("resume", "kill_switch")]
    client.close()


# The session page's line that says what holds its turn (a kill switch, a drain).
HELD_BY = "document.querySelector('.hold-note:not([hidden])')?.textContent || ''"
HINT = "document.querySelector('.composer-hint').textContent"


def test_a_session_under_a_kill_switch_says_the_switch_holds_it_and_offers_no_resume(
    page: Page, server: Server
) -> None:
    held = paused_by_a_switch(server, "Held by a switch", "/say a\n/hang")
    owner, client, session, kill = held.owner, held.client, held.session, held.kill
    try:
        sign_in(page, client.api_key)
        open_session(page, session.id)
        page.wait_for(f"({HELD_BY}).startsWith('A kill switch (pause) holds this session')")
        # A resume would wait for the switch: it is not offered, and a message (refused
        # while the switch holds) cannot be sent; a cancel still can.
        page.wait_for("document.querySelector('[data-control=cancel]')")
        assert page.evaluate("document.querySelector('[data-control=resume]')") is None
        assert page.evaluate("document.querySelector('[data-control=pause]')") is None
        assert page.evaluate("document.querySelector('.composer [type=submit]').disabled")
        assert page.evaluate(HINT).startswith("New messages are refused while the kill switch")
        shoot(page, "session-kill-switch")
        # Removed with its turns resumed: the page says nothing holds the turn any more.
        path = f"/core/v1/overlays/{kill['id']}?resume=true"
        assert http(server.base_url, "DELETE", path, headers=owner)[0] == 200
        page.wait_for(f"({HELD_BY}) === '' && document.querySelector('[data-control=pause]')")
        assert not page.evaluate("document.querySelector('.composer [type=submit]').disabled")
    finally:
        http(server.base_url, "DELETE", f"/core/v1/overlays/{kill['id']}", headers=owner)
        cancel = {"type": "agent.session.input.cancel"}
        client.beta.agents.sessions.events.create(session.id, events=[cancel])  # type: ignore[list-item]
        client.close()
    assert_contained(page, server, [client.api_key])


def test_an_overlays_scope_names_its_project_and_the_agent_it_is_narrowed_to(
    page: Page, server: Server
) -> None:
    owner, project = own_project(server, "Scoped by name")
    with project_client(server, owner, project) as client:
        agent = client.beta.agents.create(model="scripted").id
    made: list[str] = []
    try:
        for agent_id in (None, agent):
            body = {
                "kind": "tool_disabled",
                "value": "run_command",
                "project_id": project["id"],
                "agent_id": agent_id,
                "reason": "scope test",
            }
            status, overlay, _ = http(server.base_url, "POST", "/core/v1/overlays", body, owner)
            assert status == 200, overlay
            made.append(overlay["id"])
        sign_in(page, core_key(server.data_dir))
        page.evaluate("location.hash = '#/owner'")
        scope = (
            "[...document.querySelectorAll('table[aria-label=Overlays] tbody tr')]"
            ".map(r => r.querySelector('td'))"
            ".find(c => c.querySelector('[title={}]'))?.innerText.split('\\n').at(-1)"
        )
        by_project, by_agent = scope.format(project["id"]), scope.format(agent)
        page.wait_for(f"{by_project} && {by_agent}")
        # Under its kind and value: the project by its name (its id on hover)...
        assert page.evaluate(by_project) == "Scoped by name"
        # ...and, for an overlay narrowed to an agent, which one.
        assert page.evaluate(by_agent) == f"Scoped by name · agent agent_…{agent[-6:]}"
        shoot(page, "owner-overlay-scopes")
    finally:
        for overlay_id in made:
            http(server.base_url, "DELETE", f"/core/v1/overlays/{overlay_id}", headers=owner)


def test_the_menu_opens_and_navigates_at_phone_width(page: Page) -> None:
    sign_in(page, API_KEY)
    page.resize(*PHONE, mobile=True)
    page.wait_for(f"innerWidth === {PHONE[0]}")
    try:
        expanded = "document.getElementById('menu-toggle').getAttribute('aria-expanded')"
        assert page.evaluate(expanded) == "false"
        page.click("#menu-toggle")
        page.wait_for("document.getElementById('app').classList.contains('nav-open')")
        assert page.evaluate(expanded) == "true"
        page.screenshot(SHOTS / "menu-phone.png")
        page.click(".nav-link[href='#/overview']")
        page.wait_for("document.getElementById('main').dataset.page === 'overview'")
        assert (
            page.evaluate("document.getElementById('app').classList.contains('nav-open')") is False
        )
        assert page.evaluate(expanded) == "false"  # the button says the menu closed
    finally:
        page.resize(*DESKTOP)


def test_an_artifact_downloads_from_the_session_page(
    page: Page, client: OpenAI, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "self_hosted", "workspace_directory": str(workspace)},
            input="/write outputs/report.txt All systems nominal.\n/say Report written.",
            stream=True,
        )
    )
    session_id = events[0].session.id  # type: ignore[attr-defined]
    downloads = tmp_path / "downloads"
    page.send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
    sign_in(page, API_KEY)
    open_session(page, session_id)
    page.click(".file-list button.link")
    page.wait_event("Page.downloadProgress", state="completed")
    assert (downloads / "report.txt").read_text() == "All systems nominal."
    assert any("/artifacts/" in url and url.endswith("/content") for url in page.requests)


def test_environment_set_up_shows_a_progress_line_on_the_session_and_environment_pages(
    page: Page, client: OpenAI, server: Server
) -> None:
    session = client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment=hosted(["alpha_pkg"], [HOLD]),  # type: ignore[arg-type]
        input="/say Set up.",
    )
    environment_id = session.environment.id  # type: ignore[union-attr]
    running = "document.querySelector('.setup-line[data-phase=running_setup]')"
    sign_in(page, API_KEY)
    open_session(page, session.id)
    page.wait_for(running)
    text = page.evaluate("document.querySelector('.setup-line').textContent")
    assert text == "Running setup command 1 of 1"
    shoot(page, "session-setup")
    page.evaluate("location.hash = '#/environments'")
    listed = (
        "[...document.querySelectorAll('.link-row')]"
        f".find(r => r.textContent.includes('{environment_id}'))"
    )
    page.wait_for(listed)
    assert "Running setup command 1 of 1" in page.evaluate(listed + ".textContent")
    shoot(page, "environments")
    page.evaluate(f"location.hash = '#/environments/{environment_id}'")
    page.wait_for(running + " && document.querySelector('.facts')")
    shoot(page, "environment-setup")
    (server.data_dir / WORKSPACES_DIR / wire_uuid(environment_id) / "release").touch()
    page.wait_for("document.querySelector('.setup-line[data-phase=done]')")
    assert page.evaluate("document.querySelector('.setup-text').textContent") == "Set-up done"
    open_session(page, session.id)
    page.wait_for(says("Set up.") + " && !document.querySelector('.setup-line')")
