"""Option ``machine`` (labeling.protocol.options.check_machine): ``max_loss`` defaults to 0.01,
is recorded, must be a number in (0, 0.5], and reaches the assist rule's budget."""

from __future__ import annotations

import math

import pytest

from labeling.errors import ConfigError
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.strategies.assist import AssistStrategy


def _opts(machine: object) -> dict[str, object]:
    return validate_options("topk", {"strategy": "insertion+assist", "machine": machine})


def test_max_loss_defaults_and_is_recorded():
    assert _opts({"source": "bm25"})["machine"] == {"source": "bm25", "max_loss": 0.01}
    assert _opts("bm25")["machine"]["max_loss"] == 0.01
    given = _opts({"source": "llm", "max_loss": 0.05, "judge": "llm/x"})
    assert given["machine"] == {"source": "llm", "max_loss": 0.05, "judge": "llm/x"}
    assert validate_options("topk", given) == given  # idempotent
    assert _opts({"source": "bm25", "max_loss": 0.5})["machine"]["max_loss"] == 0.5


@pytest.mark.parametrize("bad", [0, -0.1, 0.51, 2, math.nan, math.inf, "0.1", True, [0.1]])
def test_a_bad_max_loss_is_refused_naming_the_key(bad):
    with pytest.raises(ConfigError, match=r"machine\.max_loss"):
        _opts({"source": "bm25", "max_loss": bad})


def test_max_loss_reaches_the_rule():
    docs = [f"d{i}" for i in range(20)]
    for loss in (0.01, 0.2):
        opts = _opts({"source": "bm25", "max_loss": loss})
        s = open_session("topk", docs, k=5, seed=1, options=opts)
        state = s.state
        assert isinstance(state, AssistStrategy)
        assert state.max_loss == loss and state.tolerance == pytest.approx(loss / 5)
