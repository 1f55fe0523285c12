"""The LLM judge's prompt templates shown to the admin (docs/machine-judges.md#llm-prompts):
``GET /api/v1/admin/machine/prompts[/{key}]``, the page ``/admin/machine/prompts`` and
``heapjudge admin prompts [KEY] [--json]`` show every template of
:data:`labeling.machine.llm_prompts.TEMPLATES` as it is (hash, texts, an example rendering),
which one the ``llm`` judge asks, and never the API key's value."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from markupsafe import escape
from typer.testing import CliRunner

from app.auth import sessions as web_sessions
from app.cli import cli
from app.http.middleware import PAGE_CSP
from app.machine.grades import GRADE_TEMPLATE
from app.machine.judges import LLM_TEMPLATE
from app.machine.prompts import EXAMPLE_DOCUMENTS, EXAMPLE_QUERY
from app.users import service as users
from labeling.machine import llm_prompts
from labeling.machine.llm_prompts import GRADED_V1, PAIRWISE_V1, PAIRWISE_V2, PromptTemplate
from tests.app.admin_support import make_collection
from tests.app.conftest import Api

LIST = "/api/v1/admin/machine/prompts"
PAGE = "/admin/machine/prompts"


@pytest.fixture(scope="module")
def cookies(api: Api) -> dict[str, dict[str, str]]:
    """Browser sessions of the admin and of an assessor (the ``Cookie`` header)."""
    api.add_user("pam")
    out = {}
    for name in ("admin", "pam"):
        raw, _csrf = web_sessions.create_web_session(
            api.db, users.get_user(db=api.db, username=name)
        )
        out[name] = {"Cookie": f"{web_sessions.SESSION_COOKIE}={raw}"}
    return out


def _expected(template: PromptTemplate) -> dict[str, Any]:
    """What the API must say of ``template``, computed from the template itself."""
    documents = list(EXAMPLE_DOCUMENTS) if template.kind == "pairwise" else [EXAMPLE_DOCUMENTS[0]]
    return {
        "key": template.key,
        "name": template.name,
        "version": template.version,
        "kind": template.kind,
        "hash": template.hash,
        "max_doc_chars": template.max_doc_chars,
        "system": template.system,
        "user": template.user,
        "used_by_llm_judge": template is LLM_TEMPLATE,
        "used_by_llm_prior": template is GRADE_TEMPLATE,
        "example": {
            "query": EXAMPLE_QUERY,
            "documents": documents,
            "messages": template.render(EXAMPLE_QUERY, *documents),
        },
    }


def test_the_list_shows_every_template_as_it_is(api: Api) -> None:
    r = api.get("admin", LIST)
    assert r.status_code == 200, r.text
    body = r.json()
    assert [t["key"] for t in body["templates"]] == list(llm_prompts.TEMPLATES)
    assert {"pairwise@v1", "graded@v1"} <= {t["key"] for t in body["templates"]}
    for shown in body["templates"]:
        template = llm_prompts.TEMPLATES[shown["key"]]
        assert shown == _expected(template)
        assert shown["hash"] == template.hash and len(shown["hash"]) == 16
    # The llm judge asks the pairwise template, and only that one is marked.
    assert [t["key"] for t in body["templates"] if t["used_by_llm_judge"]] == ["pairwise@v2"]
    assert [t["key"] for t in body["templates"] if t["used_by_llm_prior"]] == ["graded@v2"]
    judge = body["judge"]
    assert judge["template"] == LLM_TEMPLATE.key == PAIRWISE_V2.key
    assert judge["template_hash"] == PAIRWISE_V2.hash
    assert judge["api_key_env"] == api.settings.llm_api_key_env
    assert judge["model"] == (api.settings.llm_model or None)


def test_the_judge_follows_the_settings(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    model = f"qwen-{uuid.uuid4().hex[:6]}"
    monkeypatch.setattr(api.settings, "llm_model", model)
    monkeypatch.setattr(api.settings, "llm_max_tokens", 5)
    judge = api.get("admin", LIST).json()["judge"]
    assert judge["configured"] is True and judge["model"] == model
    assert judge["version"] == f"llm/{model}/pairwise@v2/{PAIRWISE_V2.hash}"
    assert judge["max_tokens"] == 5 and judge["temperature"] == 0.0
    monkeypatch.setattr(api.settings, "llm_model", "")
    judge = api.get("admin", LIST).json()["judge"]
    assert judge["configured"] is False and judge["model"] is None and judge["version"] is None


@pytest.mark.parametrize("template", [PAIRWISE_V1, GRADED_V1], ids=lambda t: t.key)
def test_one_template_by_key_with_the_at_sign_plain_or_encoded(
    api: Api, template: PromptTemplate
) -> None:
    plain = api.get("admin", f"{LIST}/{template.key}")
    encoded = api.get("admin", f"{LIST}/{template.key.replace('@', '%40')}")
    assert plain.status_code == encoded.status_code == 200, (plain.text, encoded.text)
    assert plain.json() == encoded.json() == _expected(template)


def test_an_unknown_key_is_a_404_naming_the_known_ones(api: Api) -> None:
    for key in ("pairwise@v9", "pairwise", "PAIRWISE@V1", "%20"):
        r = api.get("admin", f"{LIST}/{key}")
        assert r.status_code == 404, (key, r.text)
        detail = r.json()["detail"]
        assert detail.startswith("no prompt template") and "pairwise@v1" in detail, detail
        assert "graded@v1" in detail


def test_only_an_admin_sees_the_templates(api: Api, cookies: dict[str, dict[str, str]]) -> None:
    for url in (LIST, f"{LIST}/pairwise@v1", f"{LIST}/nope@v1"):
        assert api.get("pam", url).status_code == 403, url
        assert api.client.get(url).status_code == 401, url
    assessor = api.client.get(PAGE, headers=cookies["pam"], follow_redirects=False)
    assert assessor.status_code == 403
    assert PAIRWISE_V1.hash not in assessor.text and "Passage A" not in assessor.text
    anonymous = api.client.get(PAGE, follow_redirects=False)
    assert anonymous.status_code == 303 and anonymous.headers["location"].startswith("/login")


def test_the_page_shows_every_template_escaped(
    api: Api, cookies: dict[str, dict[str, str]]
) -> None:
    r = api.client.get(PAGE, headers=cookies["admin"])
    assert r.status_code == 200, r.text
    assert r.headers["content-security-policy"] == PAGE_CSP
    page = r.text
    for template in llm_prompts.TEMPLATES.values():
        assert f'<code data-testid="prompt-key">{template.key}</code>' in page
        assert f'<code data-testid="prompt-hash">{template.hash}</code>' in page
        assert f'<dd data-testid="prompt-kind">{template.kind}</dd>' in page
        assert (
            f'<pre class="prompt-text" data-testid="prompt-system">{escape(template.system)}</pre>'
            in page
        )
        assert (
            f'<pre class="prompt-text" data-testid="prompt-user">{escape(template.user)}</pre>'
            in page
        )
        assert f"{escape(template.user)}" != template.user  # its quotes are escaped
        assert template.user not in page
        assert f"/api/v1/admin/machine/prompts/{template.name}%40v{template.version}" in page
    assert page.count('data-testid="prompt-in-use"') == 1
    in_use = page.split('data-testid="prompt-in-use"')[0].rsplit("<section", 1)[1]
    assert f'id="{LLM_TEMPLATE.key}"' in in_use
    # The example rendering is there too (the example's ampersand escaped).
    assert str(escape(PAIRWISE_V1.render(EXAMPLE_QUERY, *EXAMPLE_DOCUMENTS)[1]["content"])) in page
    assert "&amp;" in page and " & " not in page.split("<main", 1)[1]


def test_a_hostile_template_text_is_shown_as_text(
    api: Api, cookies: dict[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    evil = PromptTemplate(
        name="evil",
        version=1,
        kind="graded",
        system='<script src="/x.js"></script> & <img src=x>',
        user="{query} <b>{document}</b>",
    )
    monkeypatch.setitem(llm_prompts.TEMPLATES, evil.key, evil)
    page = api.client.get(PAGE, headers=cookies["admin"]).text
    assert "&lt;script src=&#34;/x.js&#34;&gt;&lt;/script&gt; &amp; &lt;img src=x&gt;" in page
    assert '<script src="/x.js">' not in page and "<img src=x>" not in page
    assert "{query} &lt;b&gt;{document}&lt;/b&gt;" in page
    r = api.get("admin", f"{LIST}/evil@v1")
    assert r.status_code == 200 and r.json()["hash"] == evil.hash
    assert r.json()["used_by_llm_judge"] is False and r.json()["used_by_llm_prior"] is False


def test_the_admin_pages_link_the_templates(api: Api, cookies: dict[str, dict[str, str]]) -> None:
    """The dashboard, a collection's page (its plan form's machine judge) and its calibration
    report link the templates."""
    cid, _ = make_collection(api, f"prompts-{uuid.uuid4().hex[:6]}", queries=1, docs=3)
    for url in (
        "/admin",
        f"/admin/collections/{cid}",
        f"/admin/collections/{cid}/analysis/calibration",
    ):
        r = api.client.get(url, headers=cookies["admin"])
        assert r.status_code == 200, url
        assert f'<a href="{PAGE}" data-testid="prompts-link">' in r.text, url


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, ["admin", "prompts", *args])


def test_the_cli_prints_the_templates() -> None:
    result = _cli()
    assert result.exit_code == 0, result.output
    out = result.stdout
    for template in llm_prompts.TEMPLATES.values():
        assert f"hash {template.hash}" in out and f"kind {template.kind}" in out
        assert template.system in out
        for line in template.user.splitlines():
            assert line in out
    assert f"{LLM_TEMPLATE.key}  [used by the llm judge]" in out
    assert out.count("[used by the llm judge]") == 1


def test_the_cli_json_is_the_rest_answer(api: Api) -> None:
    for key in ("pairwise@v1", "graded@v1"):
        result = _cli(key, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == api.get("admin", f"{LIST}/{key}").json()
    listed = json.loads(_cli("--json").stdout)
    assert listed["templates"] == api.get("admin", LIST).json()["templates"]
    text = _cli("graded@v1")
    assert text.exit_code == 0 and GRADED_V1.hash in text.stdout
    assert PAIRWISE_V1.hash not in text.stdout


def test_the_cli_refuses_an_unknown_key() -> None:
    result = _cli("pairwise@v7")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: no prompt template 'pairwise@v7'"), result.stderr
    assert "pairwise@v1" in result.stderr


def test_no_answer_shows_the_api_key(
    api: Api, cookies: dict[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key's variable is set (and named in the settings, the web app's and the CLI's), the
    endpoint URL carries credentials: every answer names the variable, none holds a secret."""
    secret = f"sk-prompts-{uuid.uuid4().hex}"
    url_password = f"pw-{uuid.uuid4().hex}"
    url_token = f"tok-{uuid.uuid4().hex}"
    env = f"HJ_PROMPTS_KEY_{uuid.uuid4().hex[:6].upper()}"
    base_url = f"https://judge:{url_password}@llm.example:8443/v1?api_key={url_token}#frag"
    monkeypatch.setenv(env, secret)
    monkeypatch.setattr(api.settings, "llm_api_key_env", env)
    monkeypatch.setattr(api.settings, "llm_model", "keyed-model")
    monkeypatch.setattr(api.settings, "llm_base_url", base_url)
    monkeypatch.setenv("HEAPJUDGE_LLM_API_KEY_ENV", env)
    monkeypatch.setenv("HEAPJUDGE_LLM_MODEL", "keyed-model")
    monkeypatch.setenv("HEAPJUDGE_LLM_BASE_URL", base_url)
    judge = api.get("admin", LIST).json()["judge"]
    assert judge["api_key_env"] == env and judge["api_key_set"] is True
    assert judge["base_url"] == "https://llm.example:8443/v1"
    shown = [
        api.get("admin", LIST).text,
        api.get("admin", f"{LIST}/pairwise@v1").text,
        api.get("admin", f"{LIST}/graded@v1").text,
        api.client.get(PAGE, headers=cookies["admin"]).text,
        api.get("admin", "/openapi.json").text,
    ]
    for args in ((), ("--json",), ("pairwise@v1",), ("pairwise@v1", "--json")):
        result = _cli(*args)
        assert result.exit_code == 0, result.output
        shown.append(result.output)
    assert env in shown[0] and env in shown[3] and env in shown[5] and env in shown[6]
    assert "keyed-model" in shown[0] and "keyed-model" in shown[5]
    for text in shown:
        for value in (secret, url_password, url_token):
            assert value not in text
    monkeypatch.delenv(env)
    assert api.get("admin", LIST).json()["judge"]["api_key_set"] is False
