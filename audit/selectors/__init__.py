"""Reads: one module per page or concern (contracts, workspace, runs, exports).

Selectors never write; they return rows, dataclasses and dicts for the views, the API
and the services.
"""
