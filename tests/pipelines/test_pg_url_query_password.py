"""DAGSTER_PG_URL error lines mask a password given as a query parameter (libpq reads
`?password=`), not only the one in the userinfo."""

from __future__ import annotations

import pytest

from pipelines.instance import psycopg2_url


@pytest.mark.parametrize(
    "url",
    [
        "postgresql:///dagster?user=dagster&password=s3cret",  # no host
        "postgresql://db.internal/?password=s3cret",  # no database
        "mysql://u:s3cret@db/d?sslpassword=s3cret&passfile=/s3cret",  # not PostgreSQL
        "postgresql://db/?api_token=s3cret&client_secret=s3cret&password=s3cret&password=s3cret",
    ],
)
def test_query_secrets_are_masked_in_errors(url):
    with pytest.raises(ValueError, match="DAGSTER_PG_URL=") as err:
        psycopg2_url(url)
    assert "s3cret" not in str(err.value)
    assert "=***" in str(err.value)


def test_other_query_values_stay_readable():
    with pytest.raises(ValueError, match=r"\?user=dagster&sslmode=require&password=\*\*\*:"):
        psycopg2_url("postgresql:///dagster?user=dagster&sslmode=require&password=x")
    url = "postgresql://u@h/d?password=p&sslmode=require"
    assert psycopg2_url(url) == "postgresql+psycopg2://u@h/d?password=p&sslmode=require"
