"""``heapjudge evaluate`` and ``heapjudge compare`` run from a tree of their own command alone
(app.cli.main, docs/cli.md): the same help, errors and exit codes as in the whole tree."""

from __future__ import annotations

import pytest

import app.cli as cli_package


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "--help"],
        ["compare", "--help"],
        ["evaluate", "--bogus"],
        ["evaluate", "--qrels", "/nonexistent/qrels.txt", "--run", "/nonexistent/run.txt"],
        ["compare"],
    ],
)
def test_a_command_alone_answers_as_in_the_whole_tree(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    answers = []
    for root in (cli_package.command(), cli_package.alone(args[0])):
        with pytest.raises(SystemExit) as done:
            root.main(args, prog_name="heapjudge")
        captured = capsys.readouterr()
        answers.append((done.value.code, captured.out, captured.err))
    assert answers[0] == answers[1]
    assert answers[0][1] or answers[0][2]


def test_only_evaluate_and_compare_run_alone() -> None:
    assert set(cli_package.ALONE) == {"evaluate", "compare"}
    for name in cli_package.ALONE:
        (command,) = cli_package.alone(name).commands
        assert command == name
