"""Store tests use the `kit` / `store` / `sql_kit` fixtures from `tests/_services/stores.py`."""
