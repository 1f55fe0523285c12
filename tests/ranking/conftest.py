"""The TREC readers' two paths (docs/metrics.md#large-files): the compiled scan and join
(``ranking.io._trecscan``) and the numpy/pyarrow ones. Tests that use :func:`trec_path` run
once on each; the compiled one is skipped where the extension is not built."""

from __future__ import annotations

import pytest

from ranking.io import trec_scan


@pytest.fixture(params=["compiled", "pure"])
def trec_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "compiled" and trec_scan.compiled_module is None:
        pytest.skip("ranking.io._trecscan is not built (pip install -e . with a C compiler)")
    monkeypatch.setattr(trec_scan, "USE_COMPILED", request.param == "compiled")
    monkeypatch.delenv(trec_scan.PURE_ENV, raising=False)
    return str(request.param)
