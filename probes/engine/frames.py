"""A query's result as a polars DataFrame (the notebook API, the output files and the Parquet
exports read the results file this way)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import duckdb
import polars as pl


def frame(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> pl.DataFrame:
    """The result of a query as a polars DataFrame (through Arrow)."""
    cur = con.execute(sql, list(params))
    with warnings.catch_warnings():  # DuckDB notes the copy Arrow makes; the tables are small
        warnings.simplefilter("ignore", UserWarning)
        result = pl.from_arrow(cur.to_arrow_table())
    assert isinstance(result, pl.DataFrame)
    return result
