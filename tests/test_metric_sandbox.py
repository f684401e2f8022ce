"""Issue 21, point 1: metric SQL files are data.

Each attack of the issue is reproduced against the command or function a user would call
(``eval.report``, the report runner of the benchmark reports and the profile,
``probes.app.api.metrics``, ``probes.app.outputs.compute_metrics`` behind ``--output-path``): the
attack is refused with a line naming the file (and line), nothing is written outside, no request
reaches the 127.0.0.1 server, and every stored row is still there. The numbers are worked out by
hand: 5 instances, the gold candidate scores best on 3, so choice accuracy is 3/5 = 0.600.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval.report import Rendered, build_report, main, run_report
from eval.sqlfile import (
    MetricError,
    MetricFileError,
    default_metric_dir,
    discover_metrics,
    parse_metric,
    run_metric,
    sandbox,
)
from probes.app import api
from probes.app.outputs import compute_metrics
from probes.results import connect
from probes.results.writers import Run, insert_run

HEADER = "-- name: {name}\n-- description: d.\n-- tasks: [choice]\n-- grain: [probe]\n"
BUILTIN_ROOT = default_metric_dir().parent


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """5 choice instances of probe t/c, one finished run: the gold candidate ``g`` scores
    -1 against the other's -2 on i1, i2, i3 (right) and -3 against -2 on i4, i5 (wrong)."""
    path = tmp_path / "r.duckdb"
    con = connect(path)
    insert_run(con, Run(run_id="r1", model="m1", probe="t/c", task="choice", status="done"))
    for i, right in enumerate([True, True, True, False, False], start=1):
        con.execute("INSERT INTO instances VALUES ('t/c', 'test', ?, NULL, ['g'], [], '{}', "
                    "now())", [f"i{i}"])
        for cand, score in (("g", -1.0 if right else -3.0), ("o", -2.0)):
            con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                        "candidate, label, score) VALUES ('r1', 't/c', 'test', ?, 0, ?, ?, ?)",
                        [f"i{i}", cand, cand, score])
    con.close()
    return path


def counts(path: Path) -> tuple[int, int, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        got = tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
                    for t in ("instances", "scores", "runs"))
    finally:
        con.close()
    return got  # type: ignore[return-value]


def metric_folder(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def accuracy(report_md: str) -> str:
    """The choice_accuracy cell of the report's first table row of t/c."""
    lines = report_md.splitlines()
    head = next(ln for ln in lines if ln.startswith("| model |") and "choice_accuracy" in ln)
    row = next(ln for ln in lines[lines.index(head):] if "| t/c |" in ln)
    cols = [c.strip() for c in head.strip("|").split("|")]
    return [c.strip() for c in row.strip("|").split("|")][cols.index("choice_accuracy")]


@pytest.fixture
def server() -> Iterator[dict[str, Any]]:
    """An HTTP server on 127.0.0.1 that counts the requests it gets."""
    got: dict[str, Any] = {"requests": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            got["requests"] += 1
            body = b"a,b\n1,2\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_HEAD = do_GET

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    got["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/x.csv"
    try:
        yield got
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_fixture_gives_0_600(results: Path, tmp_path: Path, capsys: Any) -> None:
    assert main(["--results", str(results), "--out", str(tmp_path / "rep"), "--no-plots"]) == 0
    assert accuracy((tmp_path / "rep" / "report.md").read_text()) == "0.600"


def test_copy_to_a_path_is_refused_and_writes_nothing(results: Path, tmp_path: Path,
                                                      capsys: Any) -> None:
    evil = tmp_path / "evil.py"
    mine = metric_folder(tmp_path, {"m.sql": HEADER.format(name="m") + "SELECT 't/c' AS probe, "
                                    "1 AS value;\n"
                                    f"COPY (SELECT 'import os') TO '{evil}' (HEADER false);\n"})
    assert main(["--results", str(results), "--metrics", str(mine), "--out",
                 str(tmp_path / "rep"), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{mine / 'm.sql'}:6:" in err and "COPY" in err
    assert not evil.exists() and counts(results) == (5, 10, 1)


def test_copy_inside_a_select_cannot_write_either(tmp_path: Path) -> None:
    """Past the statement check, the sandbox itself: no file is written even by a statement
    DuckDB would run (checked on the connection directly)."""
    con = connect(":memory:")
    sandbox(con)
    with pytest.raises(duckdb.PermissionException):
        con.execute(f"COPY (SELECT 1) TO '{tmp_path / 'x.py'}'")
    assert not (tmp_path / "x.py").exists()


def test_read_text_of_etc_passwd_is_refused(results: Path, tmp_path: Path,
                                            capsys: Any) -> None:
    mine = metric_folder(tmp_path, {"leak.sql": HEADER.format(name="leak") +
                                    "SELECT content AS probe, 1 AS value\n"
                                    "FROM read_text('/etc/passwd')\n"})
    assert main(["--results", str(results), "--metrics", str(mine), "--out",
                 str(tmp_path / "rep"), "--no-plots"]) == 2
    captured = capsys.readouterr()
    assert f"{mine / 'leak.sql'}:6: the query fails" in captured.err
    assert "disabled by configuration" in captured.err
    assert "reads the tables of the results file only" in captured.err
    assert "root:" not in captured.out + captured.err
    assert not (tmp_path / "rep" / "report.md").exists() and counts(results) == (5, 10, 1)


def test_read_csv_over_http_reaches_no_server(results: Path, tmp_path: Path, capsys: Any,
                                              server: dict[str, Any]) -> None:
    mine = metric_folder(tmp_path, {"net.sql": HEADER.format(name="net") +
                                    f"SELECT 't/c' AS probe, a AS value FROM "
                                    f"read_csv('{server['url']}')\n"})
    assert main(["--results", str(results), "--metrics", str(mine), "--out",
                 str(tmp_path / "rep"), "--no-plots"]) == 2
    assert f"{mine / 'net.sql'}:5: the query fails" in capsys.readouterr().err
    assert server["requests"] == 0


@pytest.mark.parametrize("statement", [
    "INSTALL httpfs", "LOAD httpfs", "SET enable_external_access = true",
    "ATTACH 'elsewhere.duckdb' AS x", "COMMIT", "DELETE FROM scores", "CREATE VIEW v AS SELECT 1",
    "PRAGMA enable_profiling", "CALL pragma_version()"])
def test_statements_other_than_queries_are_refused_on_their_line(statement: str) -> None:
    text = (HEADER.format(name="m") + "SELECT 1;\n\n" + statement
            + ";\nSELECT 'p' AS probe, 1 AS value")
    with pytest.raises(MetricFileError) as e:
        parse_metric(text, "mine/m.sql")
    assert str(e.value).startswith("mine/m.sql:7: a metric file may only hold SELECT")
    assert str(e.value).split(", not ")[1].startswith(statement.split()[0].upper())


def test_install_and_settings_are_refused_by_the_sandbox_itself() -> None:
    """The settings hold even against a statement that would get past the file check."""
    con = connect(":memory:")
    sandbox(con)
    for sql in ("INSTALL httpfs", "LOAD httpfs", "SET enable_external_access = true",
                "SET autoinstall_known_extensions = true", "SET autoload_known_extensions = true",
                "SET lock_configuration = false", "RESET lock_configuration", "SET threads = 4"):
        with pytest.raises((duckdb.PermissionException, duckdb.InvalidInputException)):
            con.execute(sql)
    settings = dict(con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', "
        "'autoinstall_known_extensions', 'autoload_known_extensions', 'lock_configuration')"
    ).fetchall())
    assert settings == {"enable_external_access": "false", "autoinstall_known_extensions":
                        "false", "autoload_known_extensions": "false",
                        "lock_configuration": "true"}


@pytest.mark.parametrize("name", ["../../x.sql", "../x.sql", "/etc/x.sql", "sub/../../x.sql",
                                  "_link.sql"])
def test_requires_outside_the_metric_folder_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / "x.sql").write_text("CREATE TEMP VIEW evil AS SELECT 1;\n")
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    (folder / "_link.sql").symlink_to(tmp_path / "x.sql")
    text = HEADER.format(name="m") + f"-- requires: [{name}]\nSELECT 'p' AS probe, 1 AS value\n"
    (folder / "m.sql").write_text(text)
    with pytest.raises(MetricFileError, match=r"m\.sql:5: required file .* lies outside the "
                       r"metric file's folder"):
        discover_metrics([folder])


def test_requires_inside_the_folder_still_works(tmp_path: Path) -> None:
    folder = metric_folder(tmp_path, {
        "_v.sql": "CREATE OR REPLACE TEMP VIEW v AS SELECT 'p' AS probe, 7 AS value;\n",
        "m.sql": HEADER.format(name="m") + "-- requires: [_v.sql]\nSELECT * FROM v\n"})
    (metric,) = discover_metrics([folder])
    assert run_metric(connect(":memory:"), metric) == (["probe", "value"], [("p", 7)])


def test_builtin_metrics_name_support_files_of_the_eval_package_only() -> None:
    for metric in discover_metrics([BUILTIN_ROOT / d for d in
                                    ("metrics", "copen", "ontolama", "semrel", "profile_sql")]):
        for req in metric.requires:
            assert req.resolve().is_relative_to(BUILTIN_ROOT.resolve())


# ``r.main.scores``: the table of the results file (catalog ``r``); ``main.scores`` would name
# the view itself (the temporary catalog has a schema ``main`` too).
SHADOW = (HEADER.format(name="a_shadow") +
          "CREATE OR REPLACE TEMP VIEW scores AS SELECT * REPLACE (-score AS score) "
          "FROM r.main.scores;\n"
          "SELECT 't/c' AS probe, 0 AS value\n")


def test_the_shadowing_view_would_change_the_number_if_it_leaked(results: Path) -> None:
    """The attack is real: on one plain connection (the old behaviour) the view makes
    choice_accuracy 2/5 = 0.400."""
    con = duckdb.connect(str(results), read_only=True)
    con.execute(SHADOW.split(";")[0])
    con.execute((default_metric_dir() / "_choice_ranks.sql").read_text())  # its support file
    sql = (default_metric_dir() / "choice_accuracy.sql").read_text()
    assert [r[3] for r in con.execute(sql).fetchall()] == [pytest.approx(0.4)]
    con.close()


def test_a_temp_view_shadowing_scores_does_not_reach_the_next_metric(
        results: Path, tmp_path: Path, capsys: Any) -> None:
    """a_shadow runs first (metrics run by name) and turns every score around: gold right on
    i4, i5 only, accuracy 2/5 = 0.400 if the view leaked into choice_accuracy; 0.600 if not."""
    mine = metric_folder(tmp_path, {"a_shadow.sql": SHADOW})
    assert main(["--results", str(results), "--metrics", str(mine), "--out",
                 str(tmp_path / "rep"), "--no-plots"]) == 0
    assert accuracy((tmp_path / "rep" / "report.md").read_text()) == "0.600"
    frame = api.metrics(results, ["a_shadow", "choice_accuracy"],
                        metrics_dirs=[default_metric_dir(), mine])
    values = {m: v for m, v in frame.select("metric", "value").iter_rows()}
    assert values == {"a_shadow": 0.0, "choice_accuracy": pytest.approx(0.6)}
    assert counts(results) == (5, 10, 1)


def test_nothing_a_metric_creates_stays_on_the_connection(results: Path) -> None:
    con = connect(results, read_only=True)
    (shadow,) = [parse_metric(SHADOW, "a_shadow.sql")]
    run_metric(con, shadow)
    own_views = "SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal"
    assert con.execute(own_views).fetchall() == []
    for m in discover_metrics([BUILTIN_ROOT / d for d in
                               ("metrics", "copen", "ontolama", "semrel")]):
        run_metric(con, m)
    assert con.execute(own_views).fetchall() == []
    assert con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_type = 'macro' "
                       "AND NOT internal").fetchone() == (0,)
    con.close()


def test_builtin_metrics_give_the_same_rows_in_any_order(results: Path) -> None:
    metrics = discover_metrics()
    con = connect(results, read_only=True)
    forward = {m.name: run_metric(con, m) for m in metrics}
    backward = {m.name: run_metric(con, m) for m in reversed(metrics)}
    alone = {}
    for m in metrics:
        fresh = connect(results, read_only=True)
        alone[m.name] = run_metric(fresh, m)
        fresh.close()
    con.close()
    assert forward == backward == alone
    assert forward["choice_accuracy"][1][0][3] == pytest.approx(0.6)


def test_a_metric_cannot_delete_rows_of_a_writable_connection(results: Path) -> None:
    """A writable connection (a test's or a script's): the metric runs in a transaction that
    is rolled back, and a DELETE is refused before it runs."""
    con = connect(results)
    with pytest.raises(MetricFileError, match="not DELETE"):
        run_metric(con, parse_metric(HEADER.format(name="d") + "DELETE FROM scores;\n"
                                     "SELECT 'p' AS probe, 1 AS value\n", "d.sql"))
    assert con.execute("SELECT count(*) FROM scores").fetchone() == (10,)
    con.close()


def test_the_report_runner_and_the_profile_run_sandboxed(results: Path, tmp_path: Path) -> None:
    """run_report is what the COPEN, OntoLAMA and semrel reports and the profile call."""
    mine = metric_folder(tmp_path, {"leak.sql": HEADER.format(name="leak") +
                                    "SELECT 't/c' AS probe, count(*) AS value FROM "
                                    "glob('/etc/*')\n"})

    def render(con: duckdb.DuckDBPyConnection, rows: Any, out: Path) -> Rendered:
        return Rendered(str(rows))
    with pytest.raises(MetricError, match=r"leak\.sql:5: the query fails.*disabled"):
        run_report(results, [mine], render, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    from eval import profile
    from eval.report import metric_rows
    con = connect(results, read_only=True)  # the profile's metrics, as its runner runs them
    assert set(metric_rows(con, [profile.PROFILE_DIR])) == {"profile_bear", "profile_copen",
                                                           "profile_ontolama", "profile_semrel",
                                                           "profile_shortcuts",
                                                           "profile_generate", "profile_pararel",
                                                           "profile_layers"}
    with pytest.raises(duckdb.PermissionException):
        con.execute("SELECT * FROM read_text('/etc/hostname')")
    con.close()


def test_output_path_metrics_run_sandboxed(results: Path) -> None:
    con = connect(results, read_only=True)
    frame = compute_metrics(con, ["choice_accuracy"])
    assert frame["value"].to_list() == [pytest.approx(0.6)]
    with pytest.raises(duckdb.PermissionException):
        con.execute("SELECT * FROM read_text('/etc/hostname')")
    con.close()


def test_build_report_with_a_shadowing_metric_in_the_list(results: Path) -> None:
    con = connect(results, read_only=True)
    report = build_report(con, [parse_metric(SHADOW, "a_shadow.sql"), *discover_metrics()])
    acc = next(r for r in report.results if r.metric.name == "choice_accuracy")
    assert [row["value"] for row in acc.rows] == [pytest.approx(0.6)]
    con.close()


def test_report_settings_reach_each_metric_cursor() -> None:
    """DuckDB variables belong to one connection: the semrel report's settings (``SET
    VARIABLE semrel_rank``, a list of models) are copied onto each metric's cursor."""
    con = connect(":memory:")
    con.execute("SET VARIABLE semrel_rank = 'one'")
    con.execute("SET VARIABLE semrel_vocab_models = ?::VARCHAR[]", [["a", "b"]])
    metric = parse_metric(HEADER.format(name="v") + "SELECT 'p' AS probe, "
                          "getvariable('semrel_rank') || len(getvariable('semrel_vocab_models'))"
                          " AS value\n", "v.sql")
    assert run_metric(con, metric)[1] == [("p", "one2")]


def test_an_items_file_outside_the_metric_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "_x_items.sql").write_text(HEADER.format(name="x") + "SELECT 1\n")
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "m.sql").write_text(HEADER.format(name="m") + "-- items: ../_x_items.sql\n"
                                  "SELECT 'p' AS probe, 1 AS value\n")
    with pytest.raises(MetricFileError, match=r"m\.sql:5: items file '\.\./_x_items\.sql' lies "
                       "outside the metric file's folder"):
        discover_metrics([folder])


def test_a_metric_requires_kgprobe_s_own_ranking_by_name(tmp_path: Path, results: Path) -> None:
    """A user's metric reuses kgprobe's ranking SQL (``kgprobe:_choice_ranks.sql``) instead of
    copying it: the fixture's gold ranks 1 on i1-i3 and 2 on i4, i5 (scored -3 below -2)."""
    folder = metric_folder(tmp_path, {
        "worst.sql": "-- name: worst_rank\n-- description: d.\n-- tasks: [choice]\n"
                     "-- grain: [probe]\n-- requires: [kgprobe:_choice_ranks.sql]\n"
                     "SELECT probe, max(rank) AS value, count(*) AS n FROM choice_item_ranks "
                     "WHERE prompt_id = -1 GROUP BY probe\n"})
    (metric,) = discover_metrics([folder])
    assert metric.requires == (default_metric_dir() / "_choice_ranks.sql",)
    con = connect(results, read_only=True)
    try:
        assert run_metric(con, metric) == (["probe", "value", "n"], [("t/c", 2, 5)])
    finally:
        con.close()


@pytest.mark.parametrize("name", ["kgprobe:choice_accuracy.sql", "kgprobe:../../x.sql",
                                  "kgprobe:_nope.sql", "kgprobe:/etc/_x.sql"])
def test_a_kgprobe_name_that_is_no_support_file_is_refused(tmp_path: Path, name: str) -> None:
    text = HEADER.format(name="m") + f"-- requires: [{name}]\nSELECT 'p' AS probe, 1 AS value\n"
    folder = metric_folder(tmp_path, {"m.sql": text})
    with pytest.raises(MetricFileError, match=r"m\.sql:5: .* is not one of kgprobe's support "
                       r"files; name one of: .*kgprobe:_choice_ranks\.sql"):
        discover_metrics([folder])
